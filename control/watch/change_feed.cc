#include "control/watch/change_feed.h"

#include <algorithm>
#include <functional>
#include <string_view>

#include "control/views.h"
#include "protocol/fingerprint.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"

namespace gpool::control {

namespace {

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
  // Whether `summary` differs from the last one recorded under `key`.
  auto changed = [](auto& prints, const auto& key, const auto& summary) {
    const size_t print = Fingerprint(summary);
    auto [it, first] = prints.try_emplace(key, print);
    if (!first && it->second == print) return false;
    it->second = print;
    return true;
  };
  for (uint64_t id : candidates.jobs) {
    const state::JobRecord* job = state.FindJob(JobId(id));
    if (job == nullptr) continue;
    FeedChange change{.position = index, .job = id, .job_summary = WatchJobSummary(*job), .user = job->spec.user};
    if (!changed(job_prints_, id, change.job_summary)) continue;
    Append(std::move(change));
    ++appended;
  }
  for (const std::string& name : candidates.nodes) {
    const state::NodeRecord* node = state.FindNode(name);
    if (node == nullptr) continue;
    FeedChange change{.position = index, .node = name, .node_summary = WatchNodeSummary(state, *node)};
    if (!changed(node_prints_, name, change.node_summary)) continue;
    Append(std::move(change));
    ++appended;
  }
  return appended;
}

void ChangeFeed::Append(FeedChange change) {
  history_.push_back(std::move(change));
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
