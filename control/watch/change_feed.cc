#include "control/watch/change_feed.h"

#include <algorithm>
#include <functional>
#include <string_view>

#include "control/views.h"
#include "control/watch/summary_print.h"
#include "control/watch/watch_frames.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"

namespace gpool::control {

namespace {

void AddNode(const state::ClusterState& state, const std::string& name, FeedCandidates& out) {
  out.nodes.push_back(name);
  // Ending a node (lost, fenced, drained, re-registered) touches its tasks.
  if (const state::NodeRecord* node = state.FindNode(name)) {
    for (const TaskId& id : node->tasks) out.jobs.push_back(id.job.value());
  }
}

template <typename T>
void Dedupe(std::vector<T>& items) {
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
}

}  // namespace

JobSummary WatchJobSummary(const state::JobRecord& job) { return ToJobSummary(job, /*now_ms=*/0); }

NodeSummary WatchNodeSummary(const state::ClusterState& state, const state::NodeRecord& node) {
  return ToNodeSummary(node, /*devices=*/false, &state);
}

FeedCandidates CandidatesOf(const state::ClusterState& state, const state::Command& command) {
  FeedCandidates out;
  std::visit(
      [&](const auto& cmd) {
        using T = std::decay_t<decltype(cmd)>;
        if constexpr (std::is_same_v<T, state::RegisterNodeCmd>) {
          AddNode(state, cmd.node.name, out);
          for (const auto& report : cmd.tasks) out.jobs.push_back(report.task.job.value());
        } else if constexpr (std::is_same_v<T, state::NodeStateCmd> || std::is_same_v<T, state::NodeLostCmd> ||
                             std::is_same_v<T, state::NodeHealthCmd> || std::is_same_v<T, state::HealthFenceCmd>) {
          AddNode(state, cmd.node, out);
        } else if constexpr (std::is_same_v<T, state::UpdateNodeCmd>) {
          AddNode(state, cmd.update.node, out);
        } else if constexpr (std::is_same_v<T, state::ProbeResultCmd>) {
          for (const auto& probe : cmd.results) AddNode(state, probe.node, out);
        } else if constexpr (std::is_same_v<T, state::CancelJobCmd> || std::is_same_v<T, state::RenewSessionCmd>) {
          out.jobs.push_back(cmd.job_id);
        } else if constexpr (std::is_same_v<T, state::ApplyPlanCmd>) {
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
  // (a cancelled bound task releases its GPUs at once).
  for (size_t i = 0, jobs = out.jobs.size(); i < jobs; ++i) {
    if (const state::JobRecord* job = state.FindJob(JobId(out.jobs[i]))) {
      for (const auto& task : job->tasks) {
        if (state::HoldsResources(task.state)) out.nodes.push_back(task.node);
      }
    }
  }
  return out;
}

void ChangeFeed::Note(const state::ClusterState& state, const state::Command& command) {
  noted_ = CandidatesOf(state, command);
}

size_t ChangeFeed::Record(const state::ClusterState& state, uint64_t index, const state::Command& command,
                          const state::ApplyResult& result) {
  FeedCandidates candidates = std::move(noted_);
  noted_ = {};
  if (std::holds_alternative<state::SubmitJobCmd>(command.body) && result.job_id != 0) {
    candidates.jobs.push_back(result.job_id);
  }
  if (std::holds_alternative<state::ForgetJobsCmd>(command.body)) {
    std::erase_if(job_prints_, [&](const auto& entry) { return state.FindJob(JobId(entry.first)) == nullptr; });
  }
  Dedupe(candidates.jobs);
  Dedupe(candidates.nodes);
  position_ = index;
  size_t appended = 0;
  // Whether a summary differs from the last one recorded under `key`, by
  // its print (summary_print.h): nothing is encoded here.
  auto changed = [](auto& prints, const auto& key, size_t print) {
    auto [it, first] = prints.try_emplace(key, print);
    if (!first && it->second == print) return false;
    it->second = print;
    return true;
  };
  for (uint64_t id : candidates.jobs) {
    const state::JobRecord* job = state.FindJob(JobId(id));
    if (job == nullptr) continue;
    JobSummary summary = WatchJobSummary(*job);
    if (!changed(job_prints_, id, SummaryPrint(summary))) continue;
    FeedChange& change = Append();
    change.position = index;
    change.job = id;
    change.user = job->spec.user;
    change.queue = summary.queue;
    change.summary = std::move(summary);
    ++appended;
  }
  for (const std::string& name : candidates.nodes) {
    const state::NodeRecord* node = state.FindNode(name);
    if (node == nullptr) continue;
    NodeSummary summary = WatchNodeSummary(state, *node);
    if (!changed(node_prints_, name, SummaryPrint(summary))) continue;
    FeedChange& change = Append();
    change.position = index;
    change.node = name;
    change.summary = std::move(summary);
    ++appended;
  }
  Trim();
  return appended;
}

const std::string& FeedChange::encoded() const {
  if (encoded_cache.empty()) encoded_cache = job != 0 ? EncodeWatchItem(job_summary()) : EncodeWatchItem(node_summary());
  return encoded_cache;
}

FeedChange& ChangeFeed::Append() { return history_.emplace_back(); }

void ChangeFeed::Trim() {
  while (history_.size() > capacity_) {
    // What falls off can no longer be replayed: a watcher from before it
    // starts from the current state.
    covered_after_ = std::max(covered_after_, history_.front().position);
    history_.pop_front();
  }
}

void ChangeFeed::Reset(const state::ClusterState& state) {
  history_.clear();
  job_prints_.clear();
  node_prints_.clear();
  noted_ = {};
  position_ = state.applied_index();
  covered_after_ = position_;
}

std::optional<std::vector<const FeedChange*>> ChangeFeed::Since(uint64_t after) const {
  if (after < covered_after_ || after > position_) return std::nullopt;
  std::vector<const FeedChange*> out;
  // History is in position order: find the first change past `after`.
  auto first = std::upper_bound(history_.begin(), history_.end(), after,
                                [](uint64_t value, const FeedChange& change) { return value < change.position; });
  for (auto it = first; it != history_.end(); ++it) out.push_back(&*it);
  return out;
}

}  // namespace gpool::control
