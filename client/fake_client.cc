#include "client/fake_client.h"

#include <algorithm>
#include <string_view>

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
  if (auto failure = TakeFailure()) return *failure;
  gpool::ListJobs request;
  request.include_finished = include_finished;
  request.limit = limit;
  cluster_->list_jobs_requests.push_back(request);
  ListJobsReply reply;
  for (auto it = cluster_->jobs.rbegin(); it != cluster_->jobs.rend() && reply.jobs.size() < limit; ++it) {
    auto state = JobStateFromString(it->second.summary.state);
    if (!include_finished && state && IsTerminal(*state)) continue;
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

Result<ListNodesReply> FakeClient::ListNodes() {
  if (auto failure = TakeFailure()) return *failure;
  return cluster_->nodes;
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
  auto it = std::find(voters.begin(), voters.end(), request.replica_id);
  if (request.op == "add") {
    if (request.peer_address.empty()) return Status::InvalidArgument("peer_address: required for add");
    if (it != voters.end()) return Status::AlreadyExists(name + " is already a voter");
    voters.push_back(request.replica_id);
    std::sort(voters.begin(), voters.end());
  } else if (request.op == "remove") {
    if (it == voters.end()) return Status::NotFound(name + " is not a voter");
    voters.erase(it);
  } else {
    return Status::InvalidArgument("op: expected \"add\" or \"remove\", got \"" + request.op + "\"");
  }
  return ChangeReplicasReply{++cluster_->status.commit_index, voters};
}

Result<UpdateNodeReply> FakeClient::UpdateNode(const gpool::UpdateNode& request) {
  if (auto failure = TakeFailure()) return *failure;
  cluster_->node_updates.push_back(request);
  GPOOL_RETURN_IF_ERROR(ValidateUpdateNode(request));
  auto& nodes = cluster_->nodes.nodes;
  auto it = std::find_if(nodes.begin(), nodes.end(), [&](const NodeSummary& n) { return n.name == request.node; });
  if (it == nodes.end()) return Status::NotFound("node " + request.node + " is not registered");
  NodeSummary& node = *it;
  if (request.op == "cordon" || request.op == "uncordon") {
    constexpr std::string_view kSuffix = ",Cordoned";
    const bool suffixed = node.state.size() >= kSuffix.size() &&
                          node.state.compare(node.state.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
    node.cordoned = request.op == "cordon";
    if (node.cordoned && !suffixed) node.state += kSuffix;
    if (!node.cordoned && suffixed) node.state.resize(node.state.size() - kSuffix.size());
  } else if (request.op == "pool") {
    node.pool = request.pool;
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

}  // namespace gpool
