#include "control/gateway/cluster_endpoint.h"

#include <spdlog/spdlog.h>

#include "control/views.h"
#include "protocol/base/endpoint.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_nodes.h"

namespace gpool::control {

void ClusterEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  switch (request.type) {
    case MessageType::kClusterStatus:
      return ctx_.Answer(request, StatusNow());
    case MessageType::kListEvents:
      if (auto msg = ctx_.Decode<ListEvents>(request, envelope)) {
        if (!ctx_.Permit(request, Permission::kReadCluster, {}, "events")) return;
        ctx_.AfterBarrier(request, [this, request, msg = *msg] { ctx_.Answer(request, ToEventList(ctx_.state(), msg)); });
      }
      return;
    default:
      if (auto msg = ctx_.Decode<ChangeReplicas>(request, envelope)) {
        // A key rotation's grace is in the audit target, as for node keys.
        std::string target = "replica " + std::to_string(msg->replica_id);
        if (msg->op == ReplicaOp::kRotateKey) target += " key-rotation grace_ms=" + std::to_string(msg->grace_ms);
        if (!ctx_.Permit(request, Permission::kManageReplicas, {}, target)) return;
        if (msg->op == ReplicaOp::kRotateKey) return OnRotateReplicaKey(request, *msg);
        OnChangeReplicas(request, *msg);
      }
      return;
  }
}

void ClusterEndpoint::OnChangeReplicas(const Request& request, const ChangeReplicas& msg) {
  Status valid = [&]() -> Status {
    // The op is add or remove: decoding refused any other.
    if (msg.replica_id == 0) return Status::InvalidArgument("replica_id: must be a positive integer");
    if (msg.op == ReplicaOp::kRemove) return Status::Ok();
    GPOOL_RETURN_IF_ERROR(ValidateConnectEndpoint(msg.peer_address, "peer_address"));
    if (!msg.client_address.empty()) {
      GPOOL_RETURN_IF_ERROR(ValidateConnectEndpoint(msg.client_address, "client_address"));
    }
    if (!msg.worker_address.empty()) {
      GPOOL_RETURN_IF_ERROR(ValidateConnectEndpoint(msg.worker_address, "worker_address"));
    }
    return Status::Ok();
  }();
  if (!valid.ok()) return ctx_.Fail(request, valid);
  spdlog::info("replica change requested op={} replica={} peer={} client={}", NameOf(msg.op), msg.replica_id,
               msg.peer_address, msg.client_address);
  std::optional<AuditEntry> requested = ctx_.ProposeApprovedAudit();
  ctx_.proposer().ChangeMembership(msg, [this, request, msg, requested](Result<ChangeReplicasReply> result) {
    // The audit records what became of it, not only that it was allowed.
    ctx_.AuditOutcome(requested, result.status());
    if (!result.ok()) {
      spdlog::info("replica change refused op={} replica={} error=\"{}\"", NameOf(msg.op), msg.replica_id,
                   result.status().ToString());
      return ctx_.Fail(request, result.status());
    }
    spdlog::info("replica change committed op={} replica={} index={} voters={}", NameOf(msg.op), msg.replica_id,
                 result->index, result->voters.size());
    ctx_.Answer(request, *result);
  });
}

ClusterStatusReply ClusterEndpoint::StatusNow() const {
  const GatewayOptions& options = ctx_.options();
  const state::ClusterState& state = ctx_.state();
  ClusterStatusReply reply;
  reply.replica_id = options.replica_id;
  const log::ReplicationReport replication = ctx_.proposer().Replication();
  reply.commit_index = replication.commit_index;
  reply.applied_index = state.applied_index();
  reply.term = replication.term;
  reply.disk_full = replication.disk.full;
  reply.disk_error = replication.disk.error;
  reply.disk_free_bytes = replication.disk.free_bytes;
  if (!replication.replicated) {
    reply.role = "leader";
    reply.replicas.push_back(ReplicaInfo{options.replica_id, options.client_address, "leader",
                                         replication.commit_index});
  } else {
    reply.role = ctx_.proposer().leading()             ? "leader"
                 : replication.role == "leader"   ? "leader (catching up)"
                 : replication.role == "follower" ? "follower"
                                                  : "candidate";
    // Raft's own entries (a new leader's no-op) are applied too, just not by
    // the state machine: report the log position, so applied can reach commit.
    reply.applied_index = replication.applied_index;
    for (const auto& r : replication.replicas) {
      ReplicaInfo replica;
      replica.id = std::to_string(r.id);
      // This replica's directory entry may be the address it was asked to
      // bind (an ephemeral port); report where it really listens.
      replica.address = r.id == replication.self_id ? options.client_address : r.client_address;
      replica.role = r.role;
      replica.match_index = r.match;
      replica.heard_ms_ago = r.heard_ms_ago;
      replica.state_version = r.state_version;
      reply.replicas.push_back(std::move(replica));
    }
  }
  for (const auto& [name, node] : state.nodes()) {
    ++reply.nodes_total;
    if (node.state == NodeState::kReady) ++reply.nodes_ready;
    for (const auto& gpu : node.spec.gpus) reply.gpus_total += gpu.healthy ? 1 : 0;
    reply.gpus_used += static_cast<uint32_t>(node.gpu_owner.size());
  }
  reply.jobs_pending = static_cast<uint32_t>(state.pending_jobs().size());
  reply.jobs_running = state.jobs_in_state(JobState::kRunning);
  return reply;
}

}  // namespace gpool::control
