#include "control/task_lookup.h"

#include <charconv>
#include <string>

namespace gpool::control {
namespace {

bool ParseNumber(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// The task of `job` whose stable name is `name`, or nullptr. Task indices
// run group by group (ClusterState::ApplySubmitJob), so a group's replica r
// is task (replicas of the groups before it) + r.
const state::TaskRecord* MatchStableName(const state::JobRecord& job, std::string_view name) {
  uint32_t first = 0;
  for (const auto& group : job.spec.tasks) {
    const std::string prefix = job.spec.name + "-" + group.name + "-";
    uint64_t replica = 0;
    if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix &&
        ParseNumber(name.substr(prefix.size()), replica) && replica < group.replicas &&
        first + replica < job.tasks.size()) {
      return &job.tasks[first + replica];
    }
    first += group.replicas;
  }
  return nullptr;
}

}  // namespace

Result<FoundTask> FindTaskByName(const state::ClusterState& state, std::string_view name, uint64_t job_scope) {
  if (name.empty()) return Status::InvalidArgument("task: empty (name a task as JOBID.INDEX or by its stable name)");
  if (name.size() > 512) return Status::InvalidArgument("task: longer than 512 bytes");
  // JOBID.INDEX
  if (const size_t dot = name.find('.'); dot != std::string_view::npos) {
    uint64_t job_id = 0, index = 0;
    if (ParseNumber(name.substr(0, dot), job_id) && ParseNumber(name.substr(dot + 1), index)) {
      const state::JobRecord* job = state.FindJob(JobId(job_id));
      if (job == nullptr) return Status::NotFound("job " + std::to_string(job_id) + " does not exist");
      if (job_scope != 0 && job_scope != job_id) {
        return Status::NotFound("task " + std::string(name) + " is not a task of job " + std::to_string(job_scope));
      }
      if (index >= job->tasks.size()) {
        return Status::NotFound("job " + std::to_string(job_id) + " has no task " + std::to_string(index) +
                                " (it has " + std::to_string(job->tasks.size()) + ")");
      }
      return FoundTask{job, &job->tasks[index]};
    }
  }
  if (job_scope != 0) {
    const state::JobRecord* job = state.FindJob(JobId(job_scope));
    if (job == nullptr) return Status::NotFound("job " + std::to_string(job_scope) + " does not exist");
    if (const auto* task = MatchStableName(*job, name)) return FoundTask{job, task};
    return Status::NotFound("job " + std::to_string(job_scope) + " has no task named " + std::string(name));
  }
  FoundTask found;
  std::string jobs;
  int matches = 0;
  for (const auto& [id, job] : state.jobs()) {
    if (IsTerminal(job.state)) continue;
    const state::TaskRecord* task = MatchStableName(job, name);
    if (task == nullptr) continue;
    found = FoundTask{&job, task};
    jobs += (jobs.empty() ? "" : ", ") + std::to_string(job.id.value());
    ++matches;
  }
  if (matches == 1) return found;
  if (matches > 1) {
    return Status::FailedPrecondition("task name " + std::string(name) + " is ambiguous: jobs " + jobs +
                                      " have it; name the task as JOBID.INDEX");
  }
  return Status::NotFound("no unfinished job has a task named " + std::string(name) +
                          " (names are <job>-<group>-<index>; or use JOBID.INDEX)");
}

}  // namespace gpool::control
