#include "control/security/key_sync.h"

#include <algorithm>
#include <map>
#include <string>
#include <variant>

#include "control/state/command_candidates.h"
#include "protocol/model/node_update.h"

namespace gpool::control {

void KeySync::SyncAll(const state::ClusterState& state) {
  if (!keys_) return;
  SyncUsers(state);
  SyncTasks(state);
  std::map<std::string, std::string> bound = state.enrolled_nodes();
  std::map<std::string, std::pair<std::string, int64_t>> retired;
  for (const auto& [name, record] : state.nodes()) {
    if (!record.worker_key.empty()) bound[name] = record.worker_key;
    if (!record.retired_key.empty()) retired[name] = {record.retired_key, record.retired_key_until_ms};
  }
  keys_->SetNodeKeys(bound);
  keys_->SetRetiredNodeKeys(retired);
}

namespace {

// `job`'s tasks that hold a binding (bound or running), the only ones whose
// keys are admitted, each with the job's secret the directory derives from.
void AddLiveTasksOf(const state::JobRecord& job, std::map<TaskId, std::string>& out) {
  if (job.exec_token.empty()) return;  // recorded before exec credentials: none to admit
  for (const state::TaskRecord& task : job.tasks) {
    if (state::HoldsResources(task.state)) out[task.id] = job.exec_token;
  }
}

}  // namespace

void KeySync::SyncTasks(const state::ClusterState& state) {
  std::map<TaskId, std::string> secrets;
  for (const TaskId& id : state.ActiveTasks()) {
    const state::JobRecord* job = state.FindJob(id.job);
    const state::TaskRecord* task = state.FindTask(id);
    if (job == nullptr || task == nullptr || job->exec_token.empty()) continue;
    secrets[id] = job->exec_token;
  }
  keys_->SetLiveTasks(std::move(secrets));
}

void KeySync::SyncJobTasks(const state::ClusterState& state, uint64_t job) {
  std::map<TaskId, std::string> secrets;
  if (const state::JobRecord* record = state.FindJob(JobId(job))) AddLiveTasksOf(*record, secrets);
  keys_->SetJobLiveTasks(job, std::move(secrets));
}

void KeySync::Note(const state::ClusterState& state, const state::Command& command) {
  if (!keys_) return;
  noted_jobs_ = CandidatesOf(state, command).jobs;
}

// The client keys the handshake admits are the committed users'; until an
// admin exists (and none is configured with --admin-key) any key is let in
// for `gpool admin bootstrap` alone.
void KeySync::SyncUsers(const state::ClusterState& state) {
  std::map<std::string, std::string> users;
  std::map<std::string, int64_t> expiry;
  for (const auto& [name, user] : state.users()) {
    for (const auto& key : user.keys) users[key] = name;
    for (const auto& [key, until_ms] : user.key_expiry) expiry[key] = until_ms;
  }
  keys_->SetUsers(std::move(users));
  keys_->SetUserKeyExpiry(std::move(expiry));
  keys_->SetBootstrapOpen(!state.HasAdmin() && !admin_key_configured_);
}

void KeySync::Applied(const state::Command& command, const state::ApplyResult& result,
                      const state::ClusterState& state) {
  if (!keys_) return;
  // A node's key is admitted as its binding commits: the state's binding,
  // which is not the registering key when a rotated-away key registers
  // during its grace.
  const auto* registered = std::get_if<state::RegisterNodeCmd>(&command.body);
  if (registered != nullptr && result.status.ok() && !registered->worker_key.empty()) {
    if (const state::NodeRecord* node = state.FindNode(registered->node.name); node != nullptr) {
      if (!node->worker_key.empty()) keys_->EnrolNode(registered->node.name, node->worker_key);
    }
  }
  const auto* updated = std::get_if<state::UpdateNodeCmd>(&command.body);
  if (updated != nullptr && result.status.ok() && updated->update.op == NodeUpdateOp::kWorkerKey) {
    keys_->EnrolNode(updated->update.node, updated->update.key);
    // With a grace the key it replaced stays admitted until the deadline
    // the state computed; without, nothing is retired.
    if (const state::NodeRecord* node = state.FindNode(updated->update.node); node != nullptr) {
      keys_->RetireNodeKey(updated->update.node, node->retired_key, node->retired_key_until_ms);
    }
  }
  // An approved enrolment binds its key to the name, like an admin's enrolment.
  const auto* enrolment = std::get_if<state::EnrolmentCmd>(&command.body);
  if (enrolment != nullptr && result.status.ok() && enrolment->op == state::EnrolmentCmdOp::kApprove) {
    if (auto it = state.enrolled_nodes().find(enrolment->node); it != state.enrolled_nodes().end()) {
      keys_->EnrolNode(it->first, it->second);
    }
  }
  // Tasks' exec keys: those of every job the command could change, named
  // before it applied (Note) and after (a plan's binds name their jobs; a
  // forgotten job is gone from the state, so a full pass drops its tasks).
  std::vector<uint64_t> jobs = std::move(noted_jobs_);
  noted_jobs_.clear();
  std::vector<uint64_t> after = CandidatesOf(state, command).jobs;
  jobs.insert(jobs.end(), after.begin(), after.end());
  if (result.job_id != 0) jobs.push_back(result.job_id);
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  if (std::holds_alternative<state::ForgetJobsCmd>(command.body)) {
    SyncTasks(state);
  } else {
    for (uint64_t job : jobs) SyncJobTasks(state, job);
  }
  // A user key added or removed is admitted or refused from the next handshake on.
  if (std::holds_alternative<state::UpdateUserCmd>(command.body) ||
      std::holds_alternative<state::BootstrapCmd>(command.body)) {
    SyncUsers(state);
  }
}

}  // namespace gpool::control
