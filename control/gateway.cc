#include "control/gateway.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/views.h"
#include "protocol/base/endpoint.h"
#include "protocol/base/token_file.h"
#include "protocol/security/keys.h"

namespace gpool::control {

Gateway::Gateway(const GatewayOptions& options, const state::ClusterState& state, const WorkerTable& workers,
                 WorkerRelay& relay, Outbox& outbox, Proposer& proposer)
    : options_(options),
      state_(state),
      workers_(workers),
      relay_(relay),
      outbox_(outbox),
      proposer_(proposer),
      configured_admin_{"admin", {options.admin_key}, -1, -1, {RoleGrant{Role::kAdmin, ""}}} {}

void Gateway::OnFrame(const std::string& peer, std::string_view bytes, int64_t now_ms, const Principal& principal) {
  const uint64_t epoch = proposer_.epoch();
  auto envelope = DecodeEnvelope(bytes, options_.limits);
  if (!envelope.ok()) {
    spdlog::info("client request rejected bytes={} error=\"{}\"", bytes.size(), envelope.status().ToString());
    Reply(peer, MakeError(0, epoch, envelope.status()));
    return;
  }
  const uint64_t id = envelope->header().request_id;
  // What Permit approved is audited only if the handler goes on to propose
  // it (a request refused as invalid after that changes nothing).
  struct DropUnproposed {
    std::optional<AuditEntry>& approved;
    ~DropUnproposed() { approved.reset(); }
  } drop_unproposed{approved_};
  frame_now_ms_ = now_ms;
  auto actor = ResolveActor(principal, *envelope);
  if (!actor.ok()) {
    Reply(peer, MakeError(id, epoch, actor.status()));
    return;
  }
  auto fail = [&](const Status& status) { Reply(peer, MakeError(id, epoch, status)); };
  if (!proposer_.leading()) {
    const std::string leader = proposer_.leader_client_address();
    if (envelope->type() == MessageType::kClusterStatus && leader.empty()) {
      return Reply(peer, MakeFrame(id, epoch, StatusNow()));
    }
    return Fail(peer, id, NotLeaderStatus(leader));
  }
  const Request request{peer, id, envelope->type(), *actor};
  switch (envelope->type()) {
    case MessageType::kSubmitJob: {
      auto msg = envelope->Body<SubmitJob>();
      if (!msg.ok()) return fail(msg.status());
      return OnSubmit(request, std::move(msg).value());
    }
    case MessageType::kCancelJob: {
      auto msg = envelope->Body<CancelJob>();
      if (!msg.ok()) return fail(msg.status());
      return OnCancel(request, *msg);
    }
    case MessageType::kRenewSession: {
      auto msg = envelope->Body<RenewSession>();
      if (!msg.ok()) return fail(msg.status());
      return OnRenewSession(request, *msg);
    }
    case MessageType::kListJobs: {
      auto msg = envelope->Body<ListJobs>();
      if (!msg.ok()) return fail(msg.status());
      return AfterBarrier(peer, id, [this, request, msg = *msg] {
        Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), ListJobsNow(msg, request.actor)));
      });
    }
    case MessageType::kGetJob: {
      auto msg = envelope->Body<GetJob>();
      if (!msg.ok()) return fail(msg.status());
      return AfterBarrier(peer, id, [this, request, job_id = msg->job_id] {
        const auto* job = state_.FindJob(JobId(job_id));
        if (job == nullptr) return Fail(request.peer, request.id, JobNotFound(state_, job_id));
        if (!Permit(request, Permission::kReadJob, JobTarget(*job), "job " + std::to_string(job_id))) return;
        GetJobReply reply = ToJobDetail(*job, state_, WallNowMs());
        // Others' secrets stay theirs: env is shown to who may read logs.
        if (!Authorize(request.actor, Permission::kReadJobSecrets, JobTarget(*job), state_).allowed) {
          for (auto& group : reply.spec.tasks) group.env.clear();
        }
        for (auto& task : reply.tasks) {
          const state::TaskRecord* record = state_.FindTask(TaskId{job->id, task.index, task.attempt});
          task.gpu_memory_used_mib = record == nullptr ? -1 : workers_.GpuMemoryUsed(record->node, record->id);
        }
        Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), reply));
      });
    }
    case MessageType::kListNodes: {
      auto msg = envelope->Body<ListNodes>();
      if (!msg.ok()) return fail(msg.status());
      if (!Permit(request, Permission::kReadCluster, {}, "nodes")) return;
      return AfterBarrier(peer, id, [this, peer, id, devices = msg->devices] {
        ListNodesReply reply;
        for (const auto& [name, node] : state_.nodes()) {
          reply.nodes.push_back(ToNodeSummary(node, devices, &state_));
          reply.nodes.back().last_seen_ms =
              std::max(reply.nodes.back().last_seen_ms, workers_.LastSeenWallMs(name));
        }
        Reply(peer, MakeFrame(id, proposer_.epoch(), reply));
      });
    }
    case MessageType::kGetTaskLog: {
      auto msg = envelope->Body<GetTaskLog>();
      if (!msg.ok()) return fail(msg.status());
      return AfterBarrier(peer, id, [this, request, msg = *msg, now_ms] { OnGetTaskLog(request, msg, now_ms); });
    }
    case MessageType::kClusterStatus:
      // Any authenticated caller: it is what health checks and `gpool status` ask.
      return Reply(peer, MakeFrame(id, epoch, StatusNow()));
    case MessageType::kUpdateNode: {
      auto msg = envelope->Body<UpdateNode>();
      if (!msg.ok()) return fail(msg.status());
      if (!Permit(request, Permission::kManageNodes, {}, "node " + msg->node)) return;
      return OnUpdateNode(peer, id, std::move(msg).value());
    }
    case MessageType::kUpdateQueue: {
      auto msg = envelope->Body<UpdateQueue>();
      if (!msg.ok()) return fail(msg.status());
      // A queue-admin changes what is below its queue: an existing queue
      // there, and where one goes (a create's or a move's parent), so no
      // queue leaves the subtree or is raised to the admin's own level.
      const std::string what = "queue " + msg->spec.name;
      if (msg->op != QueueOp::kCreate && !Permit(request, Permission::kManageQueue, Target{"", msg->spec.name}, what)) return;
      if (msg->op != QueueOp::kDelete && !Permit(request, Permission::kPlaceQueue, Target{"", msg->spec.parent}, what)) return;
      return OnUpdateQueue(peer, id, std::move(msg).value());
    }
    case MessageType::kListQueues:
      if (!Permit(request, Permission::kReadCluster, {}, "queues")) return;
      return AfterBarrier(peer, id, [this, peer, id] { Reply(peer, MakeFrame(id, proposer_.epoch(), ToQueueList(state_))); });
    case MessageType::kExplainJob: {
      auto msg = envelope->Body<ExplainJob>();
      if (!msg.ok()) return fail(msg.status());
      return AfterBarrier(peer, id, [this, request, job_id = msg->job_id] {
        const auto* job = state_.FindJob(JobId(job_id));
        if (job == nullptr) return Fail(request.peer, request.id, JobNotFound(state_, job_id));
        if (!Permit(request, Permission::kReadJob, JobTarget(*job), "job " + std::to_string(job_id))) return;
        Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), ToExplanation(*job, state_, WallNowMs())));
      });
    }
    case MessageType::kListEvents: {
      auto msg = envelope->Body<ListEvents>();
      if (!msg.ok()) return fail(msg.status());
      if (!Permit(request, Permission::kReadCluster, {}, "events")) return;
      return AfterBarrier(peer, id, [this, peer, id, msg = *msg] {
        Reply(peer, MakeFrame(id, proposer_.epoch(), ToEventList(state_, msg)));
      });
    }
    case MessageType::kReportProbe: {
      auto msg = envelope->Body<ReportProbe>();
      if (!msg.ok()) return fail(msg.status());
      if (!Permit(request, Permission::kReportProbe, {}, "probe " + std::string(NameOf(msg->kind)))) return;
      return OnReportProbe(peer, id, std::move(msg).value());
    }
    case MessageType::kExecStart:
    case MessageType::kExecPoll:
    case MessageType::kExecSignal:
      return AfterBarrier(peer, id, [this, request, envelope = *envelope, now_ms] {
        OnExec(request, envelope, now_ms);
      });
    case MessageType::kChangeReplicas: {
      auto msg = envelope->Body<ChangeReplicas>();
      if (!msg.ok()) return fail(msg.status());
      if (!Permit(request, Permission::kManageReplicas, {}, "replica " + std::to_string(msg->replica_id))) return;
      return OnChangeReplicas(peer, id, *msg);
    }
    case MessageType::kUpdateUser:
    case MessageType::kListUsers:
    case MessageType::kBootstrap:
    case MessageType::kWhoAmI:
    case MessageType::kListAudit:
      return OnUsers(request, *envelope);
    case MessageType::kGetUsage:
    case MessageType::kUpdatePrices:
      return OnUsage(request, *envelope);
    case MessageType::kWatch:
    case MessageType::kWatchRenew:
    case MessageType::kUnwatch:
      return OnWatch(request, *envelope, now_ms);
    case MessageType::kExportSnapshot:
      return OnExportSnapshot(request, *envelope, now_ms);
    default:
      return fail(Status::UnknownType(std::string(MessageTypeName(envelope->type())) + " is not a client request"));
  }
}

void Gateway::Fail(const std::string& peer, uint64_t request_id, const Status& status) {
  Reply(peer, MakeError(request_id, proposer_.epoch(), status, proposer_.leader_client_address()));
}

void Gateway::AfterBarrier(const std::string& peer, uint64_t request_id, std::function<void()> serve) {
  proposer_.ReadBarrier([this, peer, request_id, serve = std::move(serve)](const Status& status) {
    if (!status.ok()) return Fail(peer, request_id, status);
    serve();
  });
}

void Gateway::OnSubmit(const Request& request, SubmitJob msg) {
  const std::string& peer = request.peer;
  const uint64_t request_id = request.id;
  // The owner is who the transport authenticated, never what the client wrote.
  if (request.actor.kind == Actor::Kind::kUser) msg.spec.user = request.actor.name;
  PrepareSessionSpec(request.actor, msg.spec);
  if (!Permit(request, Permission::kSubmit, Target{msg.spec.user, msg.spec.queue}, "queue " + msg.spec.queue)) return;
  Status valid = CheckJobSpecSize(msg.spec, options_.max_spec_bytes);
  if (valid.ok()) valid = ValidateJobSpec(msg.spec, options_.spec_limits);
  if (!valid.ok()) {
    Reply(peer, MakeError(request_id, proposer_.epoch(), valid.WithContext("spec")));
    return;
  }
  // Checked at the edge against the nodes as they are now (apply does not:
  // a log replays the same whatever the nodes were).
  if (Status resolved = state_.ResolveSubmitPool(msg.spec); !resolved.ok()) return Fail(peer, request_id, resolved);
  if (Status pool = state_.CheckSubmitPool(msg.spec.queue, msg.spec.pool); !pool.ok()) {
    return Fail(peer, request_id, pool);
  }
  if (msg.idempotency_key.size() > 256) {
    Reply(peer, MakeError(request_id, proposer_.epoch(),
                          Status::InvalidArgument("idempotency_key: longer than 256 bytes")));
    return;
  }
  // A pair made ahead (ExecKeyPool) costs the loop nothing; else one is made here.
  auto ahead = !options_.new_exec_token && options_.new_exec_pair ? options_.new_exec_pair()
                                                                  : Result<security::KeyPair>(Status::NotFound(""));
  std::string exec_token = ahead.ok()                    ? ahead->secret_key
                           : options_.new_exec_token ? options_.new_exec_token()
                                                     : RandomExecToken();
  auto exec_pair = ahead.ok() ? std::move(ahead) : security::KeyPairOfSecret(exec_token);
  std::string exec_key = exec_pair.ok() ? exec_pair->public_key : std::string();
  ProposeAudited(state::SubmitJobCmd{std::move(msg.spec), std::move(msg.idempotency_key), std::move(exec_token),
                                     std::move(exec_key)},
                    [this, peer, request_id](const state::ApplyResult& result) {
                      if (!result.status.ok()) return Fail(peer, request_id, result.status);
                      spdlog::info("job submitted job={} duplicate={}", result.job_id, result.duplicate);
                      Reply(peer, MakeFrame(request_id, proposer_.epoch(),
                                            SubmitJobReply{result.job_id, result.duplicate}));
                    });
}

void Gateway::OnCancel(const Request& request, const CancelJob& msg) {
  const std::string& peer = request.peer;
  const uint64_t request_id = request.id;
  // A job that does not exist fails in apply as before, with its own error;
  // only an existing job has an owner to check against.
  if (const auto* job = state_.FindJob(JobId(msg.job_id)); job != nullptr) {
    if (!Permit(request, Permission::kCancelJob, JobTarget(*job), "job " + std::to_string(msg.job_id))) return;
  }
  ProposeAudited(state::CancelJobCmd{msg.job_id, msg.grace_ms}, [this, peer, request_id](const state::ApplyResult& result) {
    if (!result.status.ok()) return Fail(peer, request_id, result.status);
    spdlog::info("job cancel committed job={} state={}", result.job_id, result.job_state);
    Reply(peer, MakeFrame(request_id, proposer_.epoch(), CancelJobReply{result.job_id, result.job_state}));
  });
}

void Gateway::OnUpdateNode(const std::string& peer, uint64_t request_id, UpdateNode msg) {
  Status valid = ValidateUpdateNode(msg);
  if (!valid.ok()) return Fail(peer, request_id, valid);
  // A worker key may be enrolled before its node ever registers.
  if (state_.FindNode(msg.node) == nullptr && msg.op != NodeUpdateOp::kWorkerKey) {
    return Fail(peer, request_id, Status::NotFound("node " + msg.node + " is not registered"));
  }
  if (!msg.queue.empty() && state_.FindQueue(msg.queue) == nullptr) {
    return Fail(peer, request_id,
                Status::NotFound("queue '" + msg.queue + "' does not exist (`gpool queue tree` lists the queues)"));
  }
  const std::string name = msg.node;
  const std::string_view op = NameOf(msg.op);
  ProposeAudited(state::UpdateNodeCmd{std::move(msg)}, [this, peer, request_id, name, op](
                                                               const state::ApplyResult& result) {
    if (!result.status.ok()) return Fail(peer, request_id, result.status);
    const auto* node = state_.FindNode(name);
    if (node == nullptr && state_.enrolled_nodes().count(name) > 0) {
      NodeSummary enrolled;
      enrolled.name = name;
      enrolled.state = "Enrolled";
      spdlog::info("node enrolled before registering node={}", name);
      return Reply(peer, MakeFrame(request_id, proposer_.epoch(), UpdateNodeReply{enrolled}));
    }
    if (node == nullptr) return Fail(peer, request_id, Status::NotFound("node " + name + " is not registered"));
    spdlog::info("node updated node={} op={} cordoned={} pool={} pool_queue={}", name, op, node->cordoned, node->pool,
                 node->pool_queue);
    Reply(peer, MakeFrame(request_id, proposer_.epoch(), UpdateNodeReply{ToNodeSummary(*node)}));
  });
}

void Gateway::OnReportProbe(const std::string& peer, uint64_t request_id, ReportProbe msg) {
  // Checked here, at the edge: apply takes what it is given (the kind was
  // checked when the message was decoded).
  constexpr size_t kMaxResults = 100'000;
  if (msg.results.size() > kMaxResults) {
    return Fail(peer, request_id, Status::ResourceExhausted("results: at most 100000 nodes per probe"));
  }
  for (auto& r : msg.results) {
    if (r.node.empty() || r.node.size() > 253) {
      return Fail(peer, request_id, Status::InvalidArgument("results: every result names a node (at most 253 bytes)"));
    }
    if (r.message.size() > 1024) r.message.resize(1024);
  }
  const std::string kind(NameOf(msg.kind));
  ProposeAudited(state::ProbeResultCmd{msg.kind, std::move(msg.results)},
                    [this, peer, request_id, kind](const state::ApplyResult& result) {
                      if (!result.status.ok()) return Fail(peer, request_id, result.status);
                      ReportProbeReply reply;
                      for (const auto& [name, node] : state_.nodes()) {
                        for (const auto& c : node.probe_health) reply.flagged += c.device == "probe/" + kind ? 1 : 0;
                      }
                      spdlog::info("probe results committed kind={} flagged={}", kind, reply.flagged);
                      Reply(peer, MakeFrame(request_id, proposer_.epoch(), reply));
                    });
}

void Gateway::OnUpdateQueue(const std::string& peer, uint64_t request_id, UpdateQueue msg) {
  Status valid = ValidateUpdateQueue(msg);
  if (!valid.ok()) return Fail(peer, request_id, valid);
  const std::string name = msg.spec.name;
  const QueueOp op = msg.op;
  // A delete answers with the queue as it was.
  QueueSummary before = ToQueueSummary(state_, name);
  ProposeAudited(state::UpdateQueueCmd{std::move(msg)}, [this, peer, request_id, name, op, before](
                                                               const state::ApplyResult& result) {
    if (!result.status.ok()) return Fail(peer, request_id, result.status);
    spdlog::info("queue updated queue={} op={}", name, NameOf(op));
    Reply(peer, MakeFrame(request_id, proposer_.epoch(),
                          UpdateQueueReply{op == QueueOp::kDelete ? before : ToQueueSummary(state_, name)}));
  });
}

void Gateway::OnChangeReplicas(const std::string& peer, uint64_t request_id, const ChangeReplicas& msg) {
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
  if (!valid.ok()) return Fail(peer, request_id, valid);
  spdlog::info("replica change requested op={} replica={} peer={} client={}", NameOf(msg.op), msg.replica_id,
               msg.peer_address, msg.client_address);
  ProposeApprovedAudit();
  proposer_.ChangeMembership(msg, [this, peer, request_id, msg](Result<ChangeReplicasReply> result) {
    if (!result.ok()) {
      spdlog::info("replica change refused op={} replica={} error=\"{}\"", NameOf(msg.op), msg.replica_id,
                   result.status().ToString());
      return Fail(peer, request_id, result.status());
    }
    spdlog::info("replica change committed op={} replica={} index={} voters={}", NameOf(msg.op), msg.replica_id,
                 result->index, result->voters.size());
    Reply(peer, MakeFrame(request_id, proposer_.epoch(), *result));
  });
}

void Gateway::OnGetTaskLog(const Request& request, const GetTaskLog& msg, int64_t now_ms) {
  const std::string& peer = request.peer;
  const uint64_t request_id = request.id;
  const uint64_t epoch = proposer_.epoch();
  const auto* job = state_.FindJob(JobId(msg.job_id));
  if (job == nullptr) {
    Reply(peer, MakeError(request_id, epoch, JobNotFound(state_, msg.job_id)));
    return;
  }
  if (!Permit(request, Permission::kReadJobSecrets, JobTarget(*job), "job " + std::to_string(msg.job_id))) return;
  if (msg.task_index >= job->tasks.size()) {
    Reply(peer, MakeError(request_id, epoch,
                          Status::NotFound("job " + std::to_string(msg.job_id) + " has no task " +
                                           std::to_string(msg.task_index) + " (it has " +
                                           std::to_string(job->tasks.size()) + ")")));
    return;
  }
  const auto& task = job->tasks[msg.task_index];
  if (task.node.empty()) {
    Reply(peer, MakeError(request_id, epoch,
                          Status::NotFound("task " + task.id.ToString() + " has not run yet, so it has no log")));
    return;
  }
  // Leave room for the envelope so the worker's reply always fits a frame.
  const size_t frame_room = options_.limits.max_frame_bytes > 4096 ? options_.limits.max_frame_bytes - 4096 : 1024;
  const uint32_t max_bytes = static_cast<uint32_t>(std::min<size_t>(msg.max_bytes, frame_room));
  relay_.Ask<FetchLog, FetchLogReply>(task.node, FetchLog{task.id, max_bytes}, now_ms,
              [this, peer, request_id](Result<FetchLogReply> result) {
                         if (!result.ok()) {
                           Reply(peer, MakeError(request_id, proposer_.epoch(), result.status()));
                           return;
                         }
                         Reply(peer, MakeFrame(request_id, proposer_.epoch(),
                                               GetTaskLogReply{result->data, result->size, result->truncated, result->dropped}));
                       });
}

ListJobsReply Gateway::ListJobsNow(const ListJobs& msg, const Actor& actor) const {
  ListJobsReply reply;
  const size_t limit = msg.limit == 0 ? state_.jobs().size() : msg.limit;
  for (auto it = state_.jobs().rbegin(); it != state_.jobs().rend() && reply.jobs.size() < limit; ++it) {
    if (!msg.include_finished && IsTerminal(it->second.state)) continue;
    if (msg.sessions_only && !it->second.spec.session.enabled) continue;
    // Each caller lists the jobs it may read (its own, its queues', or all).
    if (!Authorize(actor, Permission::kReadJob, JobTarget(it->second), state_).allowed) continue;
    reply.jobs.push_back(ToJobSummary(it->second, WallNowMs()));
  }
  return reply;
}

ClusterStatusReply Gateway::StatusNow() const {
  ClusterStatusReply reply;
  reply.replica_id = options_.replica_id;
  const log::ReplicationReport replication = proposer_.Replication();
  reply.commit_index = replication.commit_index;
  reply.applied_index = state_.applied_index();
  reply.term = replication.term;
  reply.disk_full = replication.disk.full;
  reply.disk_error = replication.disk.error;
  reply.disk_free_bytes = replication.disk.free_bytes;
  if (!replication.replicated) {
    reply.role = "leader";
    reply.replicas.push_back(ReplicaInfo{options_.replica_id, options_.client_address, "leader",
                                         replication.commit_index});
  } else {
    reply.role = proposer_.leading()             ? "leader"
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
      replica.address = r.id == replication.self_id ? options_.client_address : r.client_address;
      replica.role = r.role;
      replica.match_index = r.match;
      replica.heard_ms_ago = r.heard_ms_ago;
      reply.replicas.push_back(std::move(replica));
    }
  }
  for (const auto& [name, node] : state_.nodes()) {
    ++reply.nodes_total;
    if (node.state == NodeState::kReady) ++reply.nodes_ready;
    for (const auto& gpu : node.spec.gpus) reply.gpus_total += gpu.healthy ? 1 : 0;
    reply.gpus_used += static_cast<uint32_t>(node.gpu_owner.size());
  }
  reply.jobs_pending = static_cast<uint32_t>(state_.pending_jobs().size());
  reply.jobs_running = state_.jobs_in_state(JobState::kRunning);
  return reply;
}

}  // namespace gpool::control
