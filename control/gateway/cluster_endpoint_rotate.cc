// ClusterEndpoint: `gpool admin replica rotate-key` (issue 48). The rotation
// is a replicated command (state::ReplicaKeyCmd), not a Raft configuration
// change: the members stay the same, and every replica learns the new key
// (and the old key's deadline) when it applies the entry
// (control/replica_key_sync.h).
#include <string>

#include <spdlog/spdlog.h>

#include "control/gateway/cluster_endpoint.h"
#include "control/state/replica_keys.h"
#include "protocol/security/keys.h"

namespace gpool::control {

void ClusterEndpoint::OnRotateReplicaKey(const Request& request, const ChangeReplicas& msg) {
  const std::string who = "replica " + std::to_string(msg.replica_id);
  const log::ReplicationReport replication = ctx_.proposer().Replication();
  std::string previous_key;
  Status valid = [&]() -> Status {
    if (msg.replica_id == 0) return Status::InvalidArgument("replica_id: must be a positive integer");
    if (!security::IsZ85Key(msg.public_key)) {
      return Status::InvalidArgument("public_key: a replica's key is its 40-character Z85 CurveZMQ public key "
                                     "(gpool admin replica rotate-key ID --replica-key FILE)");
    }
    if (msg.grace_ms > state::kMaxReplicaKeyGraceMs) {
      return Status::InvalidArgument("grace: at most 30 days (" + std::to_string(state::kMaxReplicaKeyGraceMs) +
                                     " ms), not " + std::to_string(msg.grace_ms) + " ms");
    }
    if (!replication.replicated) {
      return Status::FailedPrecondition("a single coordinator has no replica keys to rotate (its clients and "
                                        "workers pin its --key-file's public key)");
    }
    for (const auto& replica : replication.replicas) {
      if (replica.id != msg.replica_id) continue;
      if (replica.key.empty()) {
        return Status::FailedPrecondition("this cluster runs without CurveZMQ (--insecure): replicas have no keys");
      }
      if (replica.key == msg.public_key) return Status::AlreadyExists(who + " already has this key");
      previous_key = replica.key;
      return Status::Ok();
    }
    return Status::NotFound(who + " is not in the replica configuration (gpool admin replica list)");
  }();
  if (!valid.ok()) return ctx_.Fail(request, Status(valid.code(), valid.message() + "; nothing was changed"));
  spdlog::info("replica key rotation requested replica={} grace_ms={}", msg.replica_id, msg.grace_ms);
  const uint64_t id = msg.replica_id;
  ctx_.ProposeAudited(state::ReplicaKeyCmd{id, msg.public_key, previous_key, msg.grace_ms},
                      [this, request, id](const state::ApplyResult& result) {
                        if (!result.status.ok()) return ctx_.Fail(request, result.status);
                        const log::ReplicationReport now = ctx_.proposer().Replication();
                        ChangeReplicasReply reply;
                        reply.index = ctx_.state().applied_index();
                        for (const auto& replica : now.replicas) {
                          (replica.role == "learner" ? reply.learners : reply.voters).push_back(replica.id);
                        }
                        spdlog::info("replica key rotation committed replica={} index={}", id, reply.index);
                        ctx_.Answer(request, reply);
                      });
}

}  // namespace gpool::control
