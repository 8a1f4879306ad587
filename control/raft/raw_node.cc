#include "control/raft/raw_node.h"

#include <utility>

namespace gpool::raft {

Result<std::unique_ptr<RawNode>> RawNode::Restart(const Config& config, InitialState state) {
  GPOOL_ASSIGN_OR_RETURN(std::unique_ptr<Raft> raft, Raft::Create(config, std::move(state)));
  return std::unique_ptr<RawNode>(new RawNode(std::move(raft)));
}

RawNode::RawNode(std::unique_ptr<Raft> raft)
    : raft_(std::move(raft)), prev_soft_(raft_->soft_state()), prev_hard_(raft_->hard_state()) {}

bool RawNode::HasReady() const {
  if (outstanding_) return false;
  const RaftLog& log = raft_->log();
  if (raft_->soft_state() != prev_soft_ || raft_->hard_state() != prev_hard_) return true;
  if (log.HasUnstableEntries() || log.pending_snapshot().has_value() || log.HasNextCommitted()) return true;
  if (raft_->HasMessages() || raft_->HasReadStates()) return true;
  for (const auto& r : pending_reads_) {
    if (r.index <= log.committed()) return true;
  }
  return false;
}

Ready RawNode::GetReady() {
  Ready rd;
  if (outstanding_) return rd;
  RaftLog& log = raft_->mutable_log();
  SoftState soft = raft_->soft_state();
  if (soft != prev_soft_) rd.soft_state = prev_soft_ = soft;
  HardState hard = raft_->hard_state();
  if (hard != prev_hard_) rd.hard_state = prev_hard_ = hard;
  rd.snapshot = log.pending_snapshot();
  rd.entries = log.UnstableEntries();
  const uint64_t slice = raft_->config().max_committed_per_ready;
  rd.committed_entries = log.NextCommitted(log.NextCommittedCount() > 16 * slice ? slice : 0);
  rd.messages = raft_->TakeMessages();
  // Reads are released once the application will have applied their index
  // after this Ready: the last committed entry here (fewer than
  // log.committed() when the batch is bounded), else all that is committed.
  for (auto& r : raft_->TakeReadStates()) pending_reads_.push_back(std::move(r));
  const uint64_t applied_after =
      rd.committed_entries.empty() ? log.committed() : rd.committed_entries.back().index;
  std::vector<ReadState> waiting;
  for (auto& r : pending_reads_) {
    (r.index <= applied_after ? rd.read_states : waiting).push_back(std::move(r));
  }
  pending_reads_ = std::move(waiting);
  outstanding_ = true;
  return rd;
}

void RawNode::Advance(const Ready& rd) {
  RaftLog& log = raft_->mutable_log();
  if (rd.snapshot.has_value()) {
    log.StableSnapshotTo(rd.snapshot->index);
    log.AppliedTo(rd.snapshot->index);
  }
  if (!rd.entries.empty()) log.StableTo(rd.entries.back().index, rd.entries.back().term);
  if (!rd.committed_entries.empty()) log.AppliedTo(rd.committed_entries.back().index);
  outstanding_ = false;
}

}  // namespace gpool::raft
