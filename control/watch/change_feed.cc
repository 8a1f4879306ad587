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
  position_ = index;
  size_t appended = 0;
  // Whether a summary differs from the last one recorded for its job or
  // node, by its print (summary_print.h): nothing is encoded here.
  auto changed = [index](Printed& printed, bool fresh, size_t print) {
    printed.rendered_at = index;
    if (!fresh && printed.print == print) return false;
    printed.print = print;
    return true;
  };
  for (uint64_t id : candidates.jobs) {
    const state::JobRecord* job = state.FindJob(JobId(id));
    if (job == nullptr) continue;
    JobSummary summary = WatchJobSummary(*job);
    auto [printed, fresh] = job_prints_.try_emplace(id);
    if (!changed(printed->second, fresh, SummaryPrint(summary))) continue;
    FeedChange& change = Append();
    change.position = index;
    change.job = id;
    change.user = job->spec.user;
    change.queue = summary.queue;
    change.summary = std::move(summary);
    ++appended;
  }
  // Nodes in the order the command names them, each once.
  for (const std::string& name : candidates.nodes) {
    auto [printed, fresh] = node_prints_.try_emplace(name);
    if (!fresh && printed->second.rendered_at == index) continue;  // named again
    const state::NodeRecord* node = state.FindNode(name);
    if (node == nullptr) {
      if (fresh) node_prints_.erase(printed);
      continue;
    }
    NodeSummary summary = WatchNodeSummary(state, *node);
    if (!changed(printed->second, fresh, SummaryPrint(summary))) continue;
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
  // Sized for the state now: filling it a plan at a time rehashed it (and
  // reallocated its buckets) under the feed's per-plan cost.
  node_prints_.reserve(state.nodes().size());
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
