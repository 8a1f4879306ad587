#include "control/state/command_candidates.h"

#include <type_traits>
#include <variant>

namespace gpool::control {
namespace {

void AddNodeAndItsJobs(const state::ClusterState& state, const std::string& name, FeedCandidates& out) {
  out.nodes.push_back(name);
  // Ending a node (lost, fenced, drained, re-registered) touches its tasks.
  if (const state::NodeRecord* node = state.FindNode(name)) {
    for (const TaskId& id : node->tasks) out.jobs.push_back(id.job.value());
  }
}

}  // namespace

FeedCandidates CandidatesOf(const state::ClusterState& state, const state::Command& command) {
  FeedCandidates out;
  std::visit(
      [&](const auto& cmd) {
        using T = std::decay_t<decltype(cmd)>;
        if constexpr (std::is_same_v<T, state::RegisterNodeCmd>) {
          AddNodeAndItsJobs(state, cmd.node.name, out);
          for (const auto& report : cmd.tasks) out.jobs.push_back(report.task.job.value());
        } else if constexpr (std::is_same_v<T, state::NodeStateCmd> || std::is_same_v<T, state::NodeLostCmd> ||
                             std::is_same_v<T, state::NodeHealthCmd> || std::is_same_v<T, state::HealthFenceCmd>) {
          AddNodeAndItsJobs(state, cmd.node, out);
        } else if constexpr (std::is_same_v<T, state::UpdateNodeCmd>) {
          AddNodeAndItsJobs(state, cmd.update.node, out);
        } else if constexpr (std::is_same_v<T, state::ProbeResultCmd>) {
          for (const auto& probe : cmd.results) AddNodeAndItsJobs(state, probe.node, out);
        } else if constexpr (std::is_same_v<T, state::CancelJobCmd> || std::is_same_v<T, state::RenewSessionCmd>) {
          out.jobs.push_back(cmd.job_id);
        } else if constexpr (std::is_same_v<T, state::ScaleJobCmd>) {
          out.jobs.push_back(cmd.job);  // shrinking stops tasks: their nodes follow below
        } else if constexpr (std::is_same_v<T, state::ApplyPlanCmd>) {
          out.jobs.reserve(cmd.binds.size() + 2 * cmd.evictions.size() + cmd.pending.size());
          out.nodes.reserve(cmd.binds.size() + cmd.evictions.size());
          for (const auto& bind : cmd.binds) {
            out.jobs.push_back(bind.job.value());
            out.nodes.push_back(bind.node);
          }
          for (const auto& eviction : cmd.evictions) {
            out.jobs.push_back(eviction.job.value());
            out.jobs.push_back(eviction.for_job.value());
            if (const state::TaskRecord* victim = state.FindTask(
                    TaskId{eviction.job, eviction.task_index, 0});
                victim != nullptr) {
              out.nodes.push_back(victim->node);
            }
          }
          for (const auto& pending : cmd.pending) out.jobs.push_back(pending.job.value());
          // A bind clears the reasons of every job it places; a job the plan
          // does not name keeps its reasons.
        } else if constexpr (std::is_same_v<T, state::TaskEventCmd>) {
          out.jobs.push_back(cmd.event.task.job.value());
          out.nodes.push_back(cmd.event.node);
        } else if constexpr (std::is_same_v<T, state::RefuseBindCmd>) {
          out.jobs.push_back(cmd.task.job.value());
          out.nodes.push_back(cmd.node);
        }
        // Submissions are named by their result (Record); the rest (queues,
        // users, audit, sinks, usage, prices, alerts, retention) change no
        // job or node summary.
      },
      command.body);
  // A job's change can free or take what its tasks hold on their nodes
  // (a cancelled bound task releases its GPUs at once). Not a plan's: it
  // takes only on the nodes its binds name, and an eviction only asks a
  // task to stop (it holds until its node reports it gone). Looking up a
  // plan's thousand jobs for nothing was a quarter of the change feed's
  // cost per plan (issue 49).
  if (std::holds_alternative<state::ApplyPlanCmd>(command.body)) return out;
  for (size_t i = 0, jobs = out.jobs.size(); i < jobs; ++i) {
    if (const state::JobRecord* job = state.FindJob(JobId(out.jobs[i]))) {
      for (const auto& task : job->tasks) {
        if (state::HoldsResources(task.state)) out.nodes.push_back(task.node);
      }
    }
  }
  return out;
}

}  // namespace gpool::control
