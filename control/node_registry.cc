#include "control/node_registry.h"

#include <algorithm>
#include <functional>

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "protocol/base/sha256.h"
#include "protocol/base/token_file.h"
#include "protocol/messages_enrolment.h"
#include "protocol/health.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_watch.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "protocol/validate.h"
#include "protocol/wire.h"

namespace gpool::control {
namespace {

constexpr int64_t kRecheckSilentMs = 100;
// The least the node-loss grace must exceed the lease by: a supervisor's
// check interval, the kill and its verification, an old leader that still
// acknowledges heartbeats until it steps down, and clock-rate drift.
constexpr int64_t kMinLeaseMarginMs = 5'000;

// What of a condition is news: a refresh (last seen, a repeat count of a
// lasting state) is not committed; a new XID is.
bool SameHealth(const std::vector<HealthCondition>& a, const std::vector<HealthCondition>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const HealthCondition& x = a[i];
    const HealthCondition& y = b[i];
    if (x.kind != y.kind || x.device != y.device || x.severity != y.severity || x.xid != y.xid ||
        x.message != y.message || x.first_seen_ms != y.first_seen_ms || (x.kind == "xid" && x.count != y.count)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status CheckNodeLossTimes(int64_t node_timeout_ms, int64_t node_lost_ms, int64_t lease_ms) {
  if (node_lost_ms <= node_timeout_ms) {
    return Status::InvalidArgument("--node-lost-ms (" + std::to_string(node_lost_ms) +
                                   ") must be longer than --node-timeout-ms (" + std::to_string(node_timeout_ms) + ")");
  }
  if (lease_ms <= 0) return Status::InvalidArgument("--node-lease-ms must be positive");
  if (node_lost_ms < lease_ms + kMinLeaseMarginMs) {
    return Status::InvalidArgument("--node-lost-ms (" + std::to_string(node_lost_ms) + ") must be at least --node-lease-ms (" +
                                   std::to_string(lease_ms) + ") plus " + std::to_string(kMinLeaseMarginMs) +
                                   " ms, so a lost node's tasks are dead before they are requeued");
  }
  return Status::Ok();
}

uint32_t LeaseHoldMs(int64_t node_lost_ms, uint32_t lease_ms) {
  const int64_t hold = std::clamp<int64_t>(node_lost_ms - kMinLeaseMarginMs, 0, UINT32_MAX);
  return std::max(lease_ms, static_cast<uint32_t>(hold));
}

NodeRegistry::NodeRegistry(const NodeRegistryOptions& options, const state::ClusterState& state,
                           WorkerTable& workers, Outbox& outbox, Proposer& proposer, int64_t start_ms)
    : options_(options), state_(state), workers_(workers), outbox_(outbox), proposer_(proposer),
      start_ms_(start_ms), next_silence_check_ms_(INT64_MAX),
      next_orphan_scan_ms_(start_ms + options.node_timeout_ms) {}

void NodeRegistry::Recheck(int64_t last_seen_ms) {
  next_silence_check_ms_ = std::min(next_silence_check_ms_, last_seen_ms + options_.node_timeout_ms);
}

int64_t NodeRegistry::LastSeen(const std::string& node, const Watch& watch) const {
  const WorkerConnection* connection = workers_.Find(node);
  return connection == nullptr ? watch.since_ms : connection->last_seen_ms;
}

bool NodeRegistry::SameKey(const std::string& node, const Principal& principal) const {
  if (principal.kind == Principal::Kind::kInsecure) return true;
  auto it = connection_keys_.find(node);
  if (it == connection_keys_.end() || it->second != principal.key) return false;
  // A key an admin rotated away stops counting at once, even on the
  // connection it registered, or when its grace ends (checked against the
  // clock on every frame: no log entry marks the end).
  const state::NodeRecord* record = state_.FindNode(node);
  return record == nullptr || record->worker_key.empty() || record->AdmitsKey(principal.key, options_.clock->WallMs());
}

bool NodeRegistry::Authenticate(const std::string& peer, const std::string& claimed, const Principal& principal) const {
  const std::string* node = workers_.NodeAt(peer);
  return node != nullptr && *node == claimed && SameKey(claimed, principal);
}

Status NodeRegistry::CheckBinding(const std::string& peer, const std::string& node, const Principal& principal) const {
  if (principal.kind == Principal::Kind::kInsecure) return Status::Ok();
  auto refuse = [&](const std::string& why) {
    spdlog::warn("node registration refused node={} peer_key={} principal={} reason=\"{}\"", node, principal.key,
                 KindName(principal.kind), why);
    (void)peer;
    return Status::Unauthenticated(why);
  };
  if (principal.kind == Principal::Kind::kNode && principal.name != node) {
    return refuse("this worker key is bound to node '" + principal.name + "', not '" + node + "'");
  }
  if (principal.kind != Principal::Kind::kNode && principal.kind != Principal::Kind::kNewNode) {
    return refuse(std::string("a ") + std::string(KindName(principal.kind)) + " key may not register a node");
  }
  const state::NodeRecord* record = state_.FindNode(node);
  if (record != nullptr && !record->worker_key.empty()) {
    if (!record->AdmitsKey(principal.key, options_.clock->WallMs())) {
      return refuse(principal.key == record->retired_key
                        ? "node '" + node + "' was rotated to another worker key and this one's grace has ended"
                        : "node '" + node + "' is bound to another worker key");
    }
    return Status::Ok();  // bound to this key (the directory knows it under the same name)
  }
  if (options_.keys != nullptr) {
    // Enrolled by an admin but not yet registered: the name is taken too.
    auto enrolled = options_.keys->KeyOfNode(node);
    if (enrolled.has_value() && *enrolled != principal.key) {
      return refuse("node '" + node + "' is enrolled with another worker key");
    }
  }
  return Status::Ok();
}

void NodeRegistry::OnFrame(const std::string& peer, std::string_view bytes, int64_t now_ms, const Principal& principal) {
  auto envelope = DecodeEnvelope(bytes, options_.limits);
  const uint64_t epoch = proposer_.epoch();
  if (!envelope.ok()) {
    spdlog::warn("worker channel rejected frame peer_bytes={} error=\"{}\"", bytes.size(),
                 envelope.status().ToString());
    Reply(peer, MakeError(0, epoch, envelope.status()));
    return;
  }
  const Header& header = envelope->header();
  if (!options_.token.empty() && !ConstantTimeEquals(header.token, options_.token)) {
    Reply(peer, MakeError(header.request_id, epoch, Status::Unauthenticated("wrong or missing token")));
    return;
  }
  auto fail = [&](const Status& status) { Reply(peer, MakeError(header.request_id, epoch, status)); };
  if (!proposer_.leading()) {
    // Replies to an earlier leadership's commands need no answer; requests
    // are sent on to the next endpoint.
    const MessageType type = envelope->type();
    if (type == MessageType::kAck || type == MessageType::kErrorReply || type == MessageType::kFetchLogReply) return;
    // Name the leader's worker endpoint, so the worker goes straight there.
    const std::string leader = proposer_.leader_worker_address();
    return Reply(peer, MakeError(header.request_id, epoch, NotLeaderStatus(leader), leader));
  }
  switch (envelope->type()) {
    case MessageType::kRegisterNode: {
      auto msg = envelope->Body<RegisterNode>();
      if (!msg.ok()) return fail(msg.status());
      return OnRegister(peer, header, std::move(msg).value(), now_ms, principal);
    }
    case MessageType::kHeartbeat: {
      auto msg = envelope->Body<Heartbeat>();
      if (!msg.ok()) return fail(msg.status());
      return OnHeartbeat(peer, header, *msg, now_ms, principal);
    }
    case MessageType::kTaskEvent: {
      auto msg = envelope->Body<TaskEvent>();
      if (!msg.ok()) return fail(msg.status());
      return OnTaskEvent(peer, header, std::move(msg).value(), now_ms, principal);
    }
    case MessageType::kAck:
    case MessageType::kErrorReply:
    case MessageType::kFetchLogReply:
    case MessageType::kExecStartReply:
    case MessageType::kExecPollReply: {
      // Only a registered connection's replies count: a command's reply is
      // taken only from the node it was sent to.
      const std::string* node = workers_.NodeAt(peer);
      if (node == nullptr) return;
      const std::string name = *node;
      if (!SameKey(name, principal)) {
        spdlog::warn("worker reply dropped: not from the key its node registered with node={} key={}", name,
                     principal.key);
        return;
      }
      Touch(name, now_ms);
      for (WorkerEvents* listener : listeners_) listener->WorkerReplied(name, *envelope);
      return;
    }
    default:
      return fail(Status::UnknownType(std::string(MessageTypeName(envelope->type())) +
                                      " is not a message a worker may send"));
  }
}

void NodeRegistry::OnRegister(const std::string& peer, const Header& header, RegisterNode msg, int64_t now_ms,
                              const Principal& principal) {
  const uint64_t epoch = proposer_.epoch();
  Status valid = ValidateNodeSpec(msg.node);
  if (valid.ok()) valid = CheckBinding(peer, msg.node.name, principal);
  if (valid.ok()) valid = state::ClusterState::CheckMigLayouts(msg.node);
  if (const std::string bad = CheckHealthConditions(msg.health); valid.ok() && !bad.empty()) {
    valid = Status::InvalidArgument(bad);
  }
  if (!valid.ok()) {
    Reply(peer, MakeError(header.request_id, epoch, valid));
    return;
  }
  // Admission (issue 48): a key no admin admitted registers nothing and
  // receives no work; it waits as a pending enrolment, unless its join token
  // admits it (checked again, and consumed, on apply).
  const bool admission = options_.enrolment == WorkerEnrolment::kAdmission &&
                         principal.kind != Principal::Kind::kInsecure && !principal.key.empty();
  std::string token_hash;
  if (admission && !state_.KeyAdmitted(msg.node.name, principal.key, options_.clock->WallMs())) {
    if (msg.join_token.empty()) return RecordPending(peer, header, msg, principal, now_ms);
    token_hash = Sha256::Of(msg.join_token);
    if (Status token = state_.CheckJoinToken(token_hash, options_.clock->WallMs()); !token.ok()) {
      spdlog::warn("node registration refused node={} key={} reason=\"{}\"", msg.node.name,
                   KeyFingerprint(principal.key), token.message());
      Reply(peer, MakeError(header.request_id, epoch, token));
      return;
    }
  }
  const std::string node = msg.node.name;
  const uint64_t proposal = ++next_registration_;
  const size_t content = std::hash<std::string>{}(wire::PackToString(msg.node) + wire::PackToString(msg.tasks) +
                                                  wire::PackToString(msg.health));
  const RegistrationInFlight entry{peer, principal.key, header.request_id, now_ms, proposal, false, content};
  auto [in_flight, fresh] = registrations_in_flight_.try_emplace(node, entry);
  if (!fresh) {
    RegistrationInFlight& first = in_flight->second;
    const int64_t age = now_ms - first.proposed_ms;
    const bool same = first.peer == peer && first.key == principal.key && first.content == content;
    if (same && !first.committed && age < kEventInFlightMs) {
      first.request_id = header.request_id;  // answered when the first commits
      if (options_.metrics != nullptr) ++options_.metrics->registrations_in_flight_dropped;
      return;
    }
    const state::NodeRecord* record = state_.FindNode(node);
    if (same && first.committed && age < kRegistrationSettleMs && record != nullptr &&
        record->state == NodeState::kReady && workers_.PeerFor(node) != nullptr && *workers_.PeerFor(node) == peer) {
      if (options_.metrics != nullptr) ++options_.metrics->registrations_in_flight_dropped;
      Reply(peer, MakeFrame(header.request_id, epoch, MakeRegisterReply()));
      return;
    }
    first = entry;
  }
  std::vector<TaskReport> reports = msg.tasks;
  std::vector<HealthCondition> health = msg.health;
  proposer_.Propose(state::RegisterNodeCmd{std::move(msg.node), std::move(msg.tasks), std::move(msg.health),
                                           principal.key, admission, std::move(token_hash)},
                    [this, peer, node, request_id = header.request_id, now_ms, reports = std::move(reports),
                     health = std::move(health), key = principal.key, proposal](const state::ApplyResult& result) mutable {
                      // A retry of this registration meanwhile is answered here, under its own id.
                      if (auto it = registrations_in_flight_.find(node);
                          it != registrations_in_flight_.end() && it->second.proposal == proposal) {
                        request_id = it->second.request_id;
                        if (result.status.ok()) {
                          it->second.committed = true;  // kept a while: retries of it are answered at once
                        } else {
                          registrations_in_flight_.erase(it);
                        }
                      }
                      const uint64_t epoch = proposer_.epoch();
                      if (!result.status.ok()) {
                        Reply(peer, MakeError(request_id, epoch, result.status));
                        return;
                      }
                      connection_keys_[node] = key;
                      pending_refreshed_ms_.erase(key);
                      // The committed binding, not the key that registered: during a
                      // rotation's grace the old key registers but the name stays the new key's.
                      const state::NodeRecord* bound = state_.FindNode(node);
                      if (!key.empty() && options_.keys != nullptr && bound != nullptr && !bound->worker_key.empty()) {
                        options_.keys->EnrolNode(node, bound->worker_key);
                      }
                      // A re-registration replaces the old connection.
                      workers_.Connect(node, peer, now_ms, options_.clock->WallMs());
                      workers_.RecordHealth(node, 1, health, 0);
                      watches_[node] = Watch{now_ms};
                      Recheck(now_ms);
                      for (WorkerEvents* listener : listeners_) listener->NodeConnected(node);
                      spdlog::info("node registered node={} epoch={}", node, epoch);
                      Reply(peer, MakeFrame(request_id, epoch, MakeRegisterReply()));
                      StopStrays(peer, node, reports);
                    });
}

RegisterNodeReply NodeRegistry::MakeRegisterReply() const {
  RegisterNodeReply reply;
  reply.heartbeat_interval_ms = options_.heartbeat_interval_ms;
  reply.coordinator_id = options_.coordinator_id;
  reply.lease_ms = options_.lease_ms;
  reply.lease_hold_ms = LeaseHoldMs(options_.node_lost_ms, options_.lease_ms);
  reply.health_kinds = static_cast<uint32_t>(kHealthKindCount);
  return reply;
}

void NodeRegistry::RecordPending(const std::string& peer, const Header& header, const RegisterNode& msg,
                                 const Principal& principal, int64_t now_ms) {
  constexpr int64_t kRefreshMs = 60'000;  // how stale LAST SEEN of a pending key may get
  const std::string fingerprint = KeyFingerprint(principal.key);
  const Status waiting = Status::PermissionDenied(
      "node '" + msg.node.name + "' awaits admission (key " + fingerprint + "): an admin approves it with `gpool node "
      "approve " + msg.node.name + "`, or start the worker with --join-token");
  const auto& pending = state_.pending_enrolments();
  auto known = pending.find(principal.key);
  auto refreshed = pending_refreshed_ms_.find(principal.key);
  if (known != pending.end() && known->second.node == msg.node.name && refreshed != pending_refreshed_ms_.end() &&
      now_ms - refreshed->second < kRefreshMs) {
    Reply(peer, MakeError(header.request_id, proposer_.epoch(), waiting));
    return;
  }
  if (known == pending.end() && pending.size() >= state::ClusterState::kMaxPendingEnrolments) {
    spdlog::warn("pending enrolment refused: the table is full node={} key={}", msg.node.name, fingerprint);
    Reply(peer, MakeError(header.request_id, proposer_.epoch(),
                          Status::ResourceExhausted("too many enrolments are pending; ask an admin to approve this "
                                                    "node or to start its worker with --join-token")));
    return;
  }
  PendingEnrolment seen;
  seen.node = msg.node.name;
  seen.key = principal.key;
  seen.fingerprint = fingerprint;
  seen.hostname = msg.node.hostname;
  seen.gpus = static_cast<uint32_t>(msg.node.gpus.size());
  if (!msg.node.gpus.empty()) seen.gpu_model = msg.node.gpus.front().model;
  pending_refreshed_ms_[principal.key] = now_ms;
  if (pending_refreshed_ms_.size() > 2 * state::ClusterState::kMaxPendingEnrolments) {
    // Keys rejected or admitted meanwhile: only pending ones are worth remembering.
    std::erase_if(pending_refreshed_ms_, [&](const auto& entry) { return pending.count(entry.first) == 0; });
  }
  if (known == pending.end()) {
    spdlog::warn("node pending enrolment node={} key={} gpus={} hostname={}", seen.node, fingerprint, seen.gpus,
                 seen.hostname);
  }
  state::EnrolmentCmd cmd;
  cmd.op = state::EnrolmentCmdOp::kPending;
  cmd.pending = std::move(seen);
  proposer_.Propose(std::move(cmd), [this, peer, waiting, request_id = header.request_id,
                                     key = principal.key](const state::ApplyResult& result) {
    if (!result.status.ok() || !result.committed) pending_refreshed_ms_.erase(key);
    Reply(peer, MakeError(request_id, proposer_.epoch(), result.status.ok() ? waiting : result.status));
  });
}

void NodeRegistry::WarnOverShare(const std::string& node, Watch& watch) {
  const WorkerConnection* connection = workers_.Find(node);
  if (connection == nullptr) return;
  for (const TaskUsage& usage : connection->usage) {
    // A share's limit is enforced by the interception layer, if the node
    // has one; a task above it says the node runs without (or it leaks).
    const state::TaskRecord* task = state_.FindTask(usage.task);
    if (task == nullptr || !task->grant().shared || task->grant().gpu_memory_mib == 0) continue;
    const uint64_t share = task->grant().gpu_memory_mib * task->gpu_indices.size();
    if (usage.gpu_memory_used_mib > share && watch.warned_over_share.insert(usage.task).second) {
      spdlog::warn("task above its GPU memory share task={} node={} used_mib={} share_mib={}",
                   usage.task.ToString(), node, usage.gpu_memory_used_mib, share);
    }
  }
  std::erase_if(watch.warned_over_share,
                [&](const TaskId& id) { return workers_.GpuMemoryUsed(node, id) < 0; });
}

void NodeRegistry::OnHeartbeat(const std::string& peer, const Header& header, const Heartbeat& msg, int64_t now_ms,
                               const Principal& principal) {
  const uint64_t epoch = proposer_.epoch();
  if (!Authenticate(peer, msg.node, principal)) {
    Reply(peer, MakeError(header.request_id, epoch,
                          Status::NotFound("node '" + msg.node.substr(0, 253) + "' is not registered on this "
                                           "connection; register again")));
    return;
  }
  Touch(msg.node, now_ms);
  if (options_.metrics != nullptr) ++options_.metrics->heartbeats;
  workers_.RecordUsage(msg.node, msg.usage);
  workers_.RecordGpus(msg.node, msg.gpus);
  if (msg.health_version != 0) {
    if (const std::string bad = CheckHealthConditions(msg.health); !bad.empty()) {
      Reply(peer, MakeError(header.request_id, epoch, Status::InvalidArgument(bad)));
      return;
    }
  }
  workers_.RecordHealth(msg.node, msg.health_version, msg.health, msg.health_rounds);
  Watch& watch = watches_[msg.node];
  WarnOverShare(msg.node, watch);
  SyncHealth(msg.node, watch);
  // A node heartbeating on the connection it registered is up, whoever made
  // it NotReady: not only this leadership's silence check but an earlier
  // leadership's entry, or this one's scan for nodes that had not reconnected
  // committing just after the node registered again (which reset the link),
  // leave it NotReady with no proposal of ours to undo.
  const state::NodeRecord* record = state_.FindNode(msg.node);
  if (record != nullptr && record->state != NodeState::kReady && !watch.ready_proposed) {
    watch.not_ready_proposed = false;
    watch.lost_proposed = false;
    watch.ready_proposed = true;
    Recheck(now_ms);
    spdlog::info("node back node={}", msg.node);
    proposer_.Propose(state::NodeStateCmd{msg.node, NodeState::kReady},
                      [this, node = msg.node](const state::ApplyResult&) {
                        // Committed or not, the next heartbeat looks again.
                        if (auto it = watches_.find(node); it != watches_.end()) it->second.ready_proposed = false;
                      });
  }
  Reply(peer, MakeFrame(header.request_id, epoch, Ack{}));
  for (WorkerEvents* listener : listeners_) listener->NodeHeartbeat(msg.node, msg.labels_digest, now_ms);
}

void NodeRegistry::OnTaskEvent(const std::string& peer, const Header& header, TaskEvent msg, int64_t now_ms,
                               const Principal& principal) {
  if (!Authenticate(peer, msg.node, principal)) {
    Reply(peer, MakeError(header.request_id, proposer_.epoch(),
                          Status::NotFound("node '" + msg.node.substr(0, 253) + "' is not registered on this "
                                           "connection; register again")));
    return;
  }
  Touch(msg.node, now_ms);
  const uint64_t seq = msg.seq;
  auto key = std::make_pair(msg.node, seq);
  auto [in_flight, fresh] = events_in_flight_.try_emplace(key, now_ms);
  if (!fresh) {
    if (now_ms - in_flight->second < kEventInFlightMs) {
      if (options_.metrics != nullptr) ++options_.metrics->task_events_in_flight_dropped;
      return;  // the copy in flight is acknowledged when it commits
    }
    in_flight->second = now_ms;
  }
  const TaskId task_id = msg.task;
  const std::string task = msg.task.ToString();
  proposer_.Propose(state::TaskEventCmd{std::move(msg)},
                    [this, peer, seq, task, task_id, key = std::move(key),
                     request_id = header.request_id](const state::ApplyResult& result) {
                      events_in_flight_.erase(key);
                      if (!result.committed) {
                        // Not durable: no ack, so the worker sends it again.
                        spdlog::warn("task event not committed task={} error=\"{}\"", task,
                                     result.status.ToString());
                        return;
                      }
                      if (!result.status.ok()) {
                        // Still acknowledged: resending an event that can never
                        // apply would loop forever.
                        spdlog::warn("task event ignored task={} error=\"{}\"", task, result.status.ToString());
                      }
                      for (WorkerEvents* listener : listeners_) listener->TaskSettled(task_id);
                      Reply(peer, MakeFrame(request_id, proposer_.epoch(), TaskEventAck{seq}));
                    });
}

void NodeRegistry::ProposeNotReady(const std::string& node) {
  proposer_.Propose(state::NodeStateCmd{node, NodeState::kNotReady,
                                        workers_.LastSeenWallMs(node)},
                    [this, node](const state::ApplyResult& result) {
                      if (result.committed) return;
                      // Not durable (leadership is moving): a later tick tries
                      // again, a full timeout after the node was last seen. Only
                      // a flag changes, so this is safe inside Tick's loops.
                      auto it = watches_.find(node);
                      if (it == watches_.end()) return;
                      it->second.not_ready_proposed = false;
                      Recheck(LastSeen(node, it->second));
                    });
}

void NodeRegistry::ProposeLost(const std::string& node) {
  proposer_.Propose(state::NodeLostCmd{node, workers_.LastSeenWallMs(node)},
                    [this, node](const state::ApplyResult& result) {
                      if (result.committed) return;
                      auto it = watches_.find(node);
                      if (it == watches_.end()) return;
                      it->second.lost_proposed = false;  // not durable: a later tick tries again
                      Recheck(LastSeen(node, it->second));
                    });
}

void NodeRegistry::SyncHealth(const std::string& node, Watch& watch) {
  const WorkerConnection* connection = workers_.Find(node);
  const state::NodeRecord* record = state_.FindNode(node);
  if (connection == nullptr || record == nullptr || watch.health_proposed) return;
  if (SameHealth(connection->health, record->health)) return;
  watch.health_proposed = true;
  spdlog::info("node health changed node={} conditions={}", node, connection->health.size());
  proposer_.Propose(state::NodeHealthCmd{node, connection->health}, [this, node](const state::ApplyResult&) {
    // Committed or not, the next heartbeat compares again.
    if (auto it = watches_.find(node); it != watches_.end()) it->second.health_proposed = false;
  });
}

void NodeRegistry::StopStrays(const std::string& peer, const std::string& node,
                              const std::vector<TaskReport>& reports) {
  for (const TaskReport& report : reports) {
    if (report.state != TaskState::kRunning) continue;
    const state::TaskRecord* task = state_.FindTask(report.task);
    if (task != nullptr && state::HoldsResources(task->state) && task->node == node) continue;
    // Fenced by attempt: an attempt the state no longer places here (lost,
    // requeued elsewhere, cancelled while the node was away) must not run.
    spdlog::warn("stopping a task not placed on its node node={} task={} pid={}", node, report.task.ToString(),
                 report.pid);
    PreemptTask preempt;
    preempt.task = report.task;
    preempt.grace_ms = 0;
    preempt.reason = "not placed on node " + node + " any more (lost, requeued or cancelled while it was away)";
    // Request id 0: its reply matches nothing; the next registration resends it.
    Reply(peer, MakeFrame(0, proposer_.epoch(), preempt));
  }
}

void NodeRegistry::Reset(int64_t now_ms) {
  workers_.Clear();
  watches_.clear();
  connection_keys_.clear();
  pending_refreshed_ms_.clear();
  events_in_flight_.clear();
  registrations_in_flight_.clear();
  start_ms_ = now_ms;
  next_silence_check_ms_ = INT64_MAX;
  next_orphan_scan_ms_ = now_ms + options_.node_timeout_ms;
}

void NodeRegistry::Tick(int64_t now_ms) {
  if (now_ms >= next_silence_check_ms_) {
    next_silence_check_ms_ = INT64_MAX;
    for (auto& [node, watch] : watches_) {
      const int64_t last_seen_ms = LastSeen(node, watch);
      const state::NodeRecord* record = state_.FindNode(node);
      if (record != nullptr && record->state == NodeState::kNotReady) {
        // NotReady: Lost once silent past the longer grace.
        if (watch.lost_proposed) continue;
        if (now_ms - last_seen_ms < options_.node_lost_ms) {
          next_silence_check_ms_ = std::min(next_silence_check_ms_, last_seen_ms + options_.node_lost_ms);
          continue;
        }
        watch.lost_proposed = true;
        spdlog::warn("node lost node={} silent_ms={}", node, now_ms - last_seen_ms);
        ProposeLost(node);
        continue;
      }
      if (watch.not_ready_proposed) continue;  // watched again once it is cleared or committed
      if (now_ms - last_seen_ms < options_.node_timeout_ms) {
        Recheck(last_seen_ms);
        continue;
      }
      if (record == nullptr || record->state != NodeState::kReady) {
        // Silent but nothing to propose now; look again shortly, as its
        // state may still change.
        next_silence_check_ms_ = std::min(next_silence_check_ms_, now_ms + kRecheckSilentMs);
        continue;
      }
      watch.not_ready_proposed = true;
      // Looked at again when the grace can have run out (NotReady by then).
      next_silence_check_ms_ = std::min(next_silence_check_ms_, last_seen_ms + options_.node_lost_ms);
      spdlog::warn("node silent node={} silent_ms={}", node, now_ms - last_seen_ms);
      ProposeNotReady(node);
    }
  }
  // Nodes the state knows that have not reconnected since this leadership
  // began: first once they had a full timeout to find us, then once per
  // timeout (an entry of an earlier leadership can still commit a node
  // registered with another replica). NotReady ones are watched too, so they
  // become Lost a full grace after this leadership began.
  if (now_ms < next_orphan_scan_ms_) return;
  next_orphan_scan_ms_ = now_ms + std::max<int64_t>(1, options_.node_timeout_ms);
  for (const auto& [name, record] : state_.nodes()) {
    if (record.state == NodeState::kLost || watches_.count(name)) continue;
    Watch& watch = watches_[name];  // no connection until it registers
    watch.since_ms = now_ms;
    if (record.state == NodeState::kNotReady) {
      next_silence_check_ms_ = std::min(next_silence_check_ms_, now_ms + options_.node_lost_ms);
      continue;
    }
    watch.not_ready_proposed = true;
    next_silence_check_ms_ = std::min(next_silence_check_ms_, now_ms + options_.node_lost_ms);
    spdlog::warn("node did not reconnect node={}", name);
    ProposeNotReady(name);
  }
}

}  // namespace gpool::control
