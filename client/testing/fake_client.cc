#include "client/testing/fake_client.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <tuple>

#include "protocol/base/sha256.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_snapshot.h"
#include "protocol/messages_usage.h"
#include "protocol/messages_users.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"
#include "protocol/validate.h"

namespace gpool {

void FakeCluster::SetJobState(uint64_t job_id, JobState state, std::string reason) {
  auto it = jobs.find(job_id);
  if (it == jobs.end()) return;
  auto& job = it->second;
  job.summary.state = std::string(ToString(state));
  job.summary.reason = std::move(reason);
  TaskState task_state = TaskState::kPending;
  switch (state) {
    case JobState::kPending: task_state = TaskState::kPending; break;
    case JobState::kRunning: task_state = TaskState::kRunning; break;
    case JobState::kSucceeded: task_state = TaskState::kSucceeded; break;
    case JobState::kFailed: task_state = TaskState::kFailed; break;
    case JobState::kCancelled: task_state = TaskState::kCancelled; break;
  }
  for (auto& task : job.tasks) task.state = std::string(ToString(task_state));
  job.summary.tasks_running = state == JobState::kRunning ? job.summary.tasks_total : 0;
  job.summary.tasks_finished = IsTerminal(state) ? job.summary.tasks_total : 0;
}

std::map<std::string, QueueSummary> FakeCluster::DefaultQueues() {
  QueueSummary root;
  root.spec.name = "root";
  root.spec.parent = "";
  QueueSummary default_queue;
  default_queue.spec.name = "default";
  default_queue.spec.parent = "root";
  return {{"root", root}, {"default", default_queue}};
}

namespace {

// high before medium before low; unknown classes last.
int ClassRank(const std::string& priority_class) {
  auto cls = PriorityClassFromString(priority_class);
  return cls ? 2 - static_cast<int>(*cls) : 3;
}

bool IsUnfinished(const GetJobReply& job) {
  auto state = JobStateFromString(job.summary.state);
  return !state || !IsTerminal(*state);
}

// A child may not be capable of more than its parent, for any resource both
// name (one of the coordinator's tree rules; it also checks guarantees).
Status CapabilityWithin(const QueueSpec& child, const QueueSpec& parent) {
  for (const auto& [resource, amount] : child.capability) {
    auto it = parent.capability.find(resource);
    if (it != parent.capability.end() && amount > it->second) {
      return Status::FailedPrecondition("capability " + resource + "=" + std::to_string(amount) + " of queue " +
                                        child.name + " is more than its parent " + parent.name + "'s " +
                                        std::to_string(it->second));
    }
  }
  return Status::Ok();
}

// Appends `name` and its descendants, depth first, children by name (the
// map's order).
void AppendSubtree(const std::map<std::string, QueueSummary>& queues, const std::string& name,
                   std::vector<QueueSummary>& out, std::set<std::string>& listed) {
  if (!listed.insert(name).second) return;
  out.push_back(queues.at(name));
  for (const auto& [child, queue] : queues) {
    if (queue.spec.parent == name && child != name) AppendSubtree(queues, child, out, listed);
  }
}

}  // namespace

std::optional<Status> FakeClient::TakeFailure() {
  std::optional<Status> failure;
  failure.swap(cluster_->fail_next);
  return failure;
}

Result<SubmitJobReply> FakeClient::Submit(const JobSpec& spec, std::string idempotency_key) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->submits.push_back(SubmitJob{spec, idempotency_key});
  GPOOL_RETURN_IF_ERROR(ValidateJobSpec(spec));
  if (!idempotency_key.empty()) {
    auto it = cluster_->idempotency_keys.find(idempotency_key);
    if (it != cluster_->idempotency_keys.end()) return SubmitJobReply{it->second, true};
  }
  const uint64_t id = cluster_->next_job_id++;
  if (!idempotency_key.empty()) cluster_->idempotency_keys[idempotency_key] = id;
  GetJobReply job;
  job.spec = spec;
  job.summary.job_id = id;
  job.summary.name = spec.name;
  job.summary.queue = spec.queue;
  job.summary.priority = spec.priority;
  job.summary.state = std::string(ToString(JobState::kPending));
  job.summary.tasks_total = spec.TotalTasks();
  job.summary.submit_ms = cluster_->now_ms;
  uint32_t index = 0;
  for (const auto& group : spec.tasks) {
    job.summary.gpus += group.resources.gpus * group.replicas;
    for (uint32_t r = 0; r < group.replicas; ++r) {
      TaskInfo task;
      task.index = index++;
      task.group = group.name;
      task.state = std::string(ToString(TaskState::kPending));
      job.tasks.push_back(std::move(task));
    }
  }
  cluster_->jobs[id] = std::move(job);
  return SubmitJobReply{id, false};
}

Result<ListJobsReply> FakeClient::ListJobs(bool include_finished, uint32_t limit) {
  return List(include_finished, limit, false);
}

Result<ListJobsReply> FakeClient::ListSessions(bool include_finished, uint32_t limit) {
  return List(include_finished, limit, true);
}

Result<ListJobsReply> FakeClient::List(bool include_finished, uint32_t limit, bool sessions_only) {
  if (auto failure = TakeFailure()) return *failure;
  gpool::ListJobs request;
  request.include_finished = include_finished;
  request.limit = limit;
  request.sessions_only = sessions_only;
  cluster_->list_jobs_requests.push_back(request);
  ListJobsReply reply;
  const size_t most = limit == 0 ? cluster_->jobs.size() : limit;  // 0: all, as the coordinator
  for (auto it = cluster_->jobs.rbegin(); it != cluster_->jobs.rend() && reply.jobs.size() < most; ++it) {
    auto state = JobStateFromString(it->second.summary.state);
    if (!include_finished && state && IsTerminal(*state)) continue;
    if (sessions_only && it->second.summary.session.state.empty()) continue;
    reply.jobs.push_back(it->second.summary);
  }
  return reply;
}

Result<GetJobReply> FakeClient::GetJob(JobId job) {
  if (auto failure = TakeFailure()) return *failure;
  ++cluster_->get_job_calls;
  if (cluster_->on_get_job) cluster_->on_get_job(*cluster_, job.value());
  auto it = cluster_->jobs.find(job.value());
  if (it == cluster_->jobs.end()) return Status::NotFound("job " + std::to_string(job.value()) + " does not exist");
  return it->second;
}

Result<CancelJobReply> FakeClient::CancelJob(JobId job, uint32_t grace_ms) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->cancels.push_back(gpool::CancelJob{job.value(), grace_ms});
  auto it = cluster_->jobs.find(job.value());
  if (it == cluster_->jobs.end()) return Status::NotFound("job " + std::to_string(job.value()) + " does not exist");
  auto state = JobStateFromString(it->second.summary.state);
  if (state && IsTerminal(*state)) {
    return Status::FailedPrecondition("job " + std::to_string(job.value()) + " already finished (" +
                                      it->second.summary.state + ")");
  }
  cluster_->SetJobState(job.value(), JobState::kCancelled, "cancelled by user");
  return CancelJobReply{job.value(), it->second.summary.state};
}

Result<ListNodesReply> FakeClient::ListNodes(bool devices) {
  if (auto failure = TakeFailure()) return *failure;
  ListNodesReply reply = cluster_->nodes;
  if (!devices) {
    for (auto& node : reply.nodes) {
      node.devices.clear();
      node.numa.clear();
    }
  }
  return reply;
}

Result<GetTaskLogReply> FakeClient::GetTaskLog(JobId job, uint32_t task_index, uint32_t max_bytes) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->log_requests.push_back(gpool::GetTaskLog{job.value(), task_index, max_bytes});
  auto it = cluster_->logs.find({job.value(), task_index});
  if (it == cluster_->logs.end()) {
    return Status::NotFound("task " + std::to_string(job.value()) + "." + std::to_string(task_index) +
                            " has no log");
  }
  const std::string& log = it->second;
  GetTaskLogReply reply;
  reply.size = log.size();
  reply.truncated = log.size() > max_bytes;
  reply.data = reply.truncated ? log.substr(log.size() - max_bytes) : log;
  return reply;
}

Result<ClusterStatusReply> FakeClient::ClusterStatus() {
  if (auto failure = TakeFailure()) return *failure;
  return cluster_->status;
}

Result<ChangeReplicasReply> FakeClient::ChangeReplicas(const gpool::ChangeReplicas& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->replica_changes.push_back(request);
  const std::string name = "replica " + std::to_string(request.replica_id);
  if (request.replica_id == 0) return Status::InvalidArgument("replica_id: must be positive");
  std::vector<uint64_t>& voters = cluster_->voters;
  std::vector<uint64_t>& learners = cluster_->learners;
  auto it = std::find(voters.begin(), voters.end(), request.replica_id);
  auto learner = std::find(learners.begin(), learners.end(), request.replica_id);
  if (request.op == ReplicaOp::kAdd) {
    if (request.peer_address.empty()) return Status::InvalidArgument("peer_address: required for add");
    if (it != voters.end()) return Status::AlreadyExists(name + " is already a voter");
    if (learner != learners.end()) return Status::AlreadyExists(name + " is already a learner");
    learners.push_back(request.replica_id);
    std::sort(learners.begin(), learners.end());
  } else if (request.op == ReplicaOp::kRotateKey) {
    // The members stay; only the key changes (recorded in replica_changes).
    if (it == voters.end() && learner == learners.end()) {
      return Status::NotFound(name + " is not in the replica configuration");
    }
  } else {  // remove
    if (learner != learners.end()) {
      learners.erase(learner);
    } else if (it == voters.end()) {
      return Status::NotFound(name + " is neither a voter nor a learner");
    } else {
      voters.erase(it);
    }
  }
  return ChangeReplicasReply{++cluster_->status.commit_index, voters, learners};
}

Result<UpdateNodeReply> FakeClient::UpdateNode(const gpool::UpdateNode& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->node_updates.push_back(request);
  GPOOL_RETURN_IF_ERROR(ValidateUpdateNode(request));
  auto& nodes = cluster_->nodes.nodes;
  auto it = std::find_if(nodes.begin(), nodes.end(), [&](const NodeSummary& n) { return n.name == request.node; });
  if (it == nodes.end()) return Status::NotFound("node " + request.node + " is not registered");
  NodeSummary& node = *it;
  if (request.op == NodeUpdateOp::kCordon || request.op == NodeUpdateOp::kUncordon) {
    constexpr std::string_view kSuffix = ",Cordoned";
    const bool suffixed = node.state.size() >= kSuffix.size() &&
                          node.state.compare(node.state.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
    node.cordoned = request.op == NodeUpdateOp::kCordon;
    if (node.cordoned && !suffixed) node.state += kSuffix;
    if (!node.cordoned && suffixed) node.state.resize(node.state.size() - kSuffix.size());
  } else if (request.op == NodeUpdateOp::kPool) {
    node.pool = request.pool;
    node.pool_queue = request.queue;
  } else if (request.op == NodeUpdateOp::kTaint) {
    for (const auto& key : request.remove_taints) node.taints.erase(key);
    for (const auto& [key, value] : request.taints) node.taints[key] = value;
  } else {  // "label"
    auto spec = cluster_->spec_labels.find(request.node);
    for (const auto& key : request.remove_labels) {
      std::optional<std::string> from_spec;
      if (spec != cluster_->spec_labels.end()) {
        if (auto label = spec->second.find(key); label != spec->second.end()) from_spec = label->second;
      }
      if (from_spec) {
        node.labels[key] = *from_spec;
      } else {
        node.labels.erase(key);
      }
    }
    for (const auto& [key, value] : request.labels) node.labels[key] = value;
  }
  return UpdateNodeReply{node};
}

Result<UpdateQueueReply> FakeClient::UpdateQueue(const gpool::UpdateQueue& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->queue_updates.push_back(request);
  GPOOL_RETURN_IF_ERROR(ValidateUpdateQueue(request));
  auto& queues = cluster_->queues;
  const std::string& name = request.spec.name;
  auto it = queues.find(name);
  if (request.op == QueueOp::kCreate) {
    if (it != queues.end()) return Status::AlreadyExists("queue '" + name + "' already exists");
    auto parent = queues.find(request.spec.parent);
    if (parent == queues.end()) return Status::NotFound("parent queue '" + request.spec.parent + "' does not exist");
    for (const auto& [id, job] : cluster_->jobs) {
      if (job.spec.queue == request.spec.parent && IsUnfinished(job)) {
        return Status::FailedPrecondition("queue '" + request.spec.parent + "' has unfinished jobs (job " +
                                          std::to_string(id) + "); jobs run only in leaf queues");
      }
    }
    GPOOL_RETURN_IF_ERROR(CapabilityWithin(request.spec, parent->second.spec));
    QueueSummary queue;
    queue.spec = request.spec;
    queues[name] = queue;
    return UpdateQueueReply{queue};
  }
  if (it == queues.end()) return Status::NotFound("queue '" + name + "' does not exist");
  QueueSummary& queue = it->second;
  if (request.op == QueueOp::kUpdate) {
    if (auto parent = queues.find(queue.spec.parent); parent != queues.end()) {
      GPOOL_RETURN_IF_ERROR(CapabilityWithin(request.spec, parent->second.spec));
    }
    for (const auto& [child, summary] : queues) {
      if (summary.spec.parent == name) GPOOL_RETURN_IF_ERROR(CapabilityWithin(summary.spec, request.spec));
    }
    // The parent stays: an update only replaces the quotas.
    queue.spec.capability = request.spec.capability;
    queue.spec.deserved = request.spec.deserved;
    queue.spec.guarantee = request.spec.guarantee;
    queue.spec.pools = request.spec.pools;
    queue.spec.preempting_classes = request.spec.preempting_classes;
    queue.spec.low_reclaimable = request.spec.low_reclaimable;
    return UpdateQueueReply{queue};
  }
  if (request.op == QueueOp::kGrantClass || request.op == QueueOp::kRevokeClass) {
    // Issue 50: a set of classes, as the coordinator keeps it (sorted).
    auto& granted = queue.granted_classes;
    auto at = std::lower_bound(granted.begin(), granted.end(), request.priority_class);
    const bool held = at != granted.end() && *at == request.priority_class;
    if (request.op == QueueOp::kGrantClass && !held) granted.insert(at, request.priority_class);
    if (request.op == QueueOp::kRevokeClass && held) granted.erase(at);
    return UpdateQueueReply{queue};
  }
  for (const auto& [child, summary] : queues) {
    if (summary.spec.parent == name) {
      return Status::FailedPrecondition("queue '" + name + "' has child queue '" + child + "'; delete it first");
    }
  }
  for (const auto& [id, job] : cluster_->jobs) {
    if (job.spec.queue == name && IsUnfinished(job)) {
      return Status::FailedPrecondition("queue '" + name + "' has unfinished job " + std::to_string(id));
    }
  }
  UpdateQueueReply reply{queue};
  queues.erase(it);
  return reply;
}

Result<ListQueuesReply> FakeClient::ListQueues() {
  if (auto failure = TakeFailure()) return *failure;
  ++cluster_->list_queues_calls;
  ListQueuesReply reply;
  std::set<std::string> listed;
  for (const auto& [name, queue] : cluster_->queues) {
    if (!cluster_->queues.count(queue.spec.parent)) AppendSubtree(cluster_->queues, name, reply.queues, listed);
  }
  return reply;
}

Result<ReportProbeReply> FakeClient::ReportProbe(const gpool::ReportProbe& request) {
  cluster_->probe_reports.push_back(request);
  ReportProbeReply reply;
  for (const auto& r : request.results) reply.flagged += r.slow ? 1 : 0;
  return reply;
}

Result<ListEventsReply> FakeClient::ListEvents(const gpool::ListEvents& request) {
  ListEventsReply reply;
  reply.last_seq = request.after_seq;
  for (const auto& event : cluster_->events) {
    if (event.seq <= request.after_seq) continue;
    if (reply.events.size() == request.limit) break;
    reply.last_seq = event.seq;
    if ((!request.node.empty() && event.node != request.node) || (request.job != 0 && event.job != request.job)) {
      continue;
    }
    reply.events.push_back(event);
  }
  return reply;
}

Result<RenewSessionReply> FakeClient::RenewSession(JobId session) {
  if (auto failure = TakeFailure()) return *failure;
  auto it = cluster_->jobs.find(session.value());
  if (it == cluster_->jobs.end() || it->second.summary.session.state.empty()) {
    return Status::NotFound("session " + std::to_string(session.value()) + " does not exist");
  }
  ++cluster_->renewals[session.value()];
  return RenewSessionReply{session.value(), it->second.summary.session};
}

Result<ExplainJobReply> FakeClient::ExplainJob(JobId job) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->explain_requests.push_back(job.value());
  auto it = cluster_->jobs.find(job.value());
  if (it == cluster_->jobs.end()) return Status::NotFound("job " + std::to_string(job.value()) + " does not exist");
  const GetJobReply& target = it->second;
  const bool pending = JobStateFromString(target.summary.state) == JobState::kPending;
  ExplainJobReply reply;
  reply.job = target.summary;
  reply.reasons = target.reasons;
  // Leaf to root; the size bound stops a cycle a test might build by hand.
  for (auto q = cluster_->queues.find(target.spec.queue);
       q != cluster_->queues.end() && reply.queue_path.size() <= cluster_->queues.size();
       q = cluster_->queues.find(q->second.spec.parent)) {
    reply.queue_path.push_back(q->second);
  }
  auto key = [](const GetJobReply& j) {
    return std::make_tuple(ClassRank(j.spec.priority_class), -static_cast<int64_t>(j.spec.priority), j.summary.job_id);
  };
  for (const auto& [id, other] : cluster_->jobs) {
    if (!pending || id == job.value() || other.spec.queue != target.spec.queue) continue;
    if (JobStateFromString(other.summary.state) != JobState::kPending) continue;
    if (key(other) < key(target)) ++reply.jobs_ahead;
  }
  return reply;
}

Result<ExecStartReply> FakeClient::ExecStart(const gpool::ExecStart& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->exec_starts.push_back(request);
  if (cluster_->exec_start_error) return *cluster_->exec_start_error;
  return cluster_->exec_reply;
}

Result<ExecPollReply> FakeClient::ExecPoll(const gpool::ExecPoll& request) {
  if (auto failure = TakeFailure()) return *failure;
  const size_t n = cluster_->exec_poll_requests.size();
  cluster_->exec_poll_requests.push_back(request);
  if (cluster_->exec_polls.empty()) return Status::NotFound("no exec scripted");
  ExecPollReply reply = cluster_->exec_polls[std::min(n, cluster_->exec_polls.size() - 1)];
  reply.stdout_offset = request.stdout_offset;
  reply.stderr_offset = request.stderr_offset;
  return reply;
}

Status FakeClient::ExecSignal(const gpool::ExecSignal& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->exec_signals.push_back(request);
  return Status::Ok();
}

Result<UpdateUserReply> FakeClient::UpdateUser(const gpool::UpdateUser& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->user_updates.push_back(request);
  auto& users = cluster_->users;
  const std::string& name = request.spec.name;
  auto it = users.find(name);
  if (request.op == UserOp::kCreate) {
    if (it != users.end()) return Status::AlreadyExists("user " + name + " exists");
    users[name] = request.spec;
    return UpdateUserReply{request.spec};
  }
  if (it == users.end()) return Status::NotFound("user " + name + " does not exist");
  UserSpec& user = it->second;
  if (request.op == UserOp::kDelete) {
    UserSpec before = user;
    users.erase(it);
    return UpdateUserReply{before};
  }
  if (request.op == UserOp::kUpdate) {
    user.uid = request.spec.uid;
    user.gid = request.spec.gid;
  }
  if (request.op == UserOp::kAddKey) user.keys.insert(user.keys.end(), request.spec.keys.begin(), request.spec.keys.end());
  if (request.op == UserOp::kRemoveKey) {
    for (const auto& key : request.spec.keys) std::erase(user.keys, key);
  }
  if (request.op == UserOp::kRotateKey) {
    // The deadline is the coordinator's to compute; the fake marks the
    // retiring keys one grace after the Unix epoch, enough to show them.
    for (const auto& key : request.retire_keys) {
      if (request.grace_ms == 0) std::erase(user.keys, key);
      else user.key_expiry[key] = static_cast<int64_t>(request.grace_ms);
    }
    user.keys.insert(user.keys.end(), request.spec.keys.begin(), request.spec.keys.end());
  }
  if (request.op == UserOp::kGrant) user.roles.insert(user.roles.end(), request.spec.roles.begin(), request.spec.roles.end());
  if (request.op == UserOp::kRevoke) {
    for (const auto& grant : request.spec.roles) std::erase(user.roles, grant);
  }
  return UpdateUserReply{user};
}

Result<ListUsersReply> FakeClient::ListUsers() {
  if (auto failure = TakeFailure()) return *failure;
  ListUsersReply reply;
  for (const auto& [name, user] : cluster_->users) reply.users.push_back(user);
  return reply;
}

Result<UpdateUserReply> FakeClient::Bootstrap(const gpool::Bootstrap& request) {
  if (auto failure = TakeFailure()) return *failure;
  UserSpec admin = request.admin;
  admin.roles = {RoleGrant{Role::kAdmin, ""}};
  cluster_->users[admin.name] = admin;
  return UpdateUserReply{admin};
}

Result<WhoAmIReply> FakeClient::WhoAmI() {
  if (auto failure = TakeFailure()) return *failure;
  return cluster_->whoami;
}

Result<ListAuditReply> FakeClient::ListAudit(const gpool::ListAudit& request) {
  if (auto failure = TakeFailure()) return *failure;
  ListAuditReply reply;
  reply.last_seq = request.after_seq;
  for (const auto& entry : cluster_->audit) {
    if (entry.seq <= request.after_seq) continue;
    if (reply.entries.size() >= request.limit) break;
    reply.entries.push_back(entry);
    reply.last_seq = entry.seq;
  }
  return reply;
}

Result<GetUsageReply> FakeClient::GetUsage(const gpool::GetUsage& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->usage_requests.push_back(request);
  GetUsageReply reply = cluster_->usage;
  reply.from_ms = request.from_ms;
  reply.to_ms = request.to_ms;
  reply.by = request.by;
  return reply;
}

Result<CreditReply> FakeClient::Credit(const gpool::Credit& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->credit_requests.push_back(request);
  auto& accounts = cluster_->credit_accounts;
  CreditReply reply;
  if (cluster_->prices) reply.currency = cluster_->prices->currency;
  if (request.op == CreditOp::kAdd) {
    if (!cluster_->queues.count(request.queue)) return Status::NotFound("queue '" + request.queue + "' does not exist");
    const bool again = std::any_of(cluster_->credit_requests.begin(), cluster_->credit_requests.end() - 1,
                                   [&](const gpool::Credit& earlier) {
                                     return !request.idempotency_key.empty() &&
                                            earlier.idempotency_key == request.idempotency_key;
                                   });
    CreditAccount& account = accounts[request.queue];
    account.queue = request.queue;
    if (!again) account.credited_micro += request.amount_micro;
    reply.accounts.push_back(account);
    return reply;
  }
  for (const auto& [queue, account] : accounts) {
    if (request.queue.empty() || request.queue == queue) reply.accounts.push_back(account);
  }
  return reply;
}

Result<UpdatePricesReply> FakeClient::UpdatePrices(const gpool::UpdatePrices& request) {
  if (auto failure = TakeFailure()) return *failure;
  if (request.op == PricesOp::kSet) cluster_->prices = request.table;
  UpdatePricesReply reply;
  if (cluster_->prices) {
    reply.set = true;
    reply.table = *cluster_->prices;
  }
  return reply;
}

Result<EnrolmentReply> FakeClient::Enrol(const gpool::Enrolment& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->enrolments.push_back(request);
  return cluster_->enrolment_reply;
}

Result<ExportSnapshotReply> FakeClient::ExportSnapshot(const gpool::ExportSnapshot& request) {
  if (auto failure = TakeFailure()) return *failure;
  if (request.export_id == 0) {
    ++cluster_->snapshot_starts;
  } else if (request.export_id != static_cast<uint64_t>(cluster_->snapshot_starts) ||
             cluster_->snapshot_forget_reads > 0) {
    if (cluster_->snapshot_forget_reads > 0) --cluster_->snapshot_forget_reads;
    return Status::NotFound("snapshot export " + std::to_string(request.export_id) + " is not held here");
  }
  const std::string& image = cluster_->snapshot_image;
  if (request.offset > image.size()) return Status::InvalidArgument("offset past the image's end");
  ExportSnapshotReply reply;
  reply.export_id = static_cast<uint64_t>(cluster_->snapshot_starts);
  reply.index = 42;
  reply.term = 3;
  reply.taken_ms = 1'800'000'000'000;
  reply.total_bytes = image.size();
  reply.sha256 = cluster_->snapshot_bad_sha ? std::string(64, '0') : Sha256::Of(image);
  reply.replica_id = "1";
  reply.offset = request.offset;
  const uint32_t limit = request.max_bytes == 0 ? kDefaultSnapshotChunkBytes : request.max_bytes;
  reply.data = wire::Bytes(image.substr(static_cast<size_t>(request.offset), limit));
  return reply;
}

}  // namespace gpool
