// RawNode: the Raft core's public face. It wraps the step machine (raft.h)
// and turns its changes into Ready batches (ready.h), remembering what it
// already handed out so each Ready carries only news.
//
// Usage, from one actor thread:
//   auto node = RawNode::Restart(config, initial_state);   // from the LogStore
//   loop:
//     on a timer          node->Tick();
//     on a peer message   node->Step(DecodeMessage(bytes));
//     on a client command node->Propose(...) / ReadIndex(...) / ...
//     while (node->HasReady()) {
//       Ready rd = node->GetReady();
//       ... persist, send, apply, serve reads (see ready.h) ...
//       node->Advance(rd);
//     }
// At most one Ready is outstanding: after GetReady, HasReady() is false until
// Advance(). Tick/Step/Propose may be called in between; their effects come
// in the next Ready.
//
// Ownership: the caller owns the RawNode. Thread-safety: none.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "control/raft/raft.h"
#include "control/raft/ready.h"

namespace gpool::raft {

class RawNode {
 public:
  // Starts (or restarts) a node from its durable state; an empty
  // InitialState with config.peers bootstraps a new cluster.
  static Result<std::unique_ptr<RawNode>> Restart(const Config& config, InitialState state);

  void Tick() { raft_->Tick(); }
  int TicksUntilDue() const { return raft_->TicksUntilDue(); }
  Status Step(const Message& m) { return raft_->Step(m); }
  // NotLeader on a follower (the message names the leader if known): the
  // core never forwards proposals. Returns the index the entry will have.
  Result<uint64_t> Propose(std::string_view data) { return raft_->Propose(data); }
  Result<uint64_t> ProposeConfChange(const ConfChange& change) { return raft_->ProposeConfChange(change); }
  Status TransferLeadership(uint64_t to) { return raft_->TransferLeadership(to); }
  // `context` identifies the request in the resulting ReadState; make it
  // unique across the cluster (e.g. node id + counter). NotLeader if this
  // node knows no leader to forward to.
  Status ReadIndex(std::string context) { return raft_->ReadIndex(std::move(context)); }
  Status Campaign() { return raft_->Campaign(); }
  // The application has snapshotted its state at `index` (<= applied): the
  // log up to `index` is dropped from memory, and the returned record (with
  // the configuration at `index`) is what to persist with the snapshot and
  // pass back in InitialState::snapshot at restart.
  Result<Snapshot> Compact(uint64_t index, std::string data) { return raft_->Compact(index, std::move(data)); }
  // The entries the last Compact calls dropped (Compact keeps them so that
  // freeing them can happen elsewhere than the caller's loop).
  std::vector<LogEntry> TakeCompacted() { return raft_->TakeCompacted(); }

  bool HasReady() const;
  Ready GetReady();
  void Advance(const Ready& rd);

  NodeInfo info() const { return raft_->info(); }
  // Cheap views for callers that poll every step (the simulator's checker).
  SoftState soft_state() const { return raft_->soft_state(); }
  HardState hard_state() const { return raft_->hard_state(); }
  // Read-only view of the in-memory log, for status and checkers.
  const RaftLog& log() const { return raft_->log(); }

 private:
  explicit RawNode(std::unique_ptr<Raft> raft);

  std::unique_ptr<Raft> raft_;
  SoftState prev_soft_;
  HardState prev_hard_;
  bool outstanding_ = false;
  std::vector<ReadState> pending_reads_;  // finished reads waiting for the apply index
};

}  // namespace gpool::raft
