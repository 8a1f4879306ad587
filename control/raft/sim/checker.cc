#include "control/raft/sim/checker.h"

#include "control/raft/config.h"
#include "protocol/model/users.h"

#include <algorithm>
#include <string>

namespace gpool::raft::sim {
namespace {

std::string N(uint64_t v) { return std::to_string(v); }

}  // namespace

uint64_t HashBytes(std::string_view data) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

uint64_t ChainHash(uint64_t chain, const LogEntry& e) {
  uint64_t x = chain ^ (HashBytes(e.data) + 0x9E3779B97F4A7C15ULL + (e.index << 6) + (e.term << 20));
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

Status Checker::CheckNode(uint64_t id, const RawNode& node) {
  const SoftState soft = node.soft_state();
  const HardState hard = node.hard_state();
  const RaftLog& log = node.log();
  if (hard.term > kMaxTerm) {
    return Status::Internal("term bound: node " + N(id) + " is in term " + N(hard.term) + ", beyond " + N(kMaxTerm));
  }
  if (soft.role == Role::kLeader) {
    auto [it, inserted] = leaders_.emplace(hard.term, id);
    if (!inserted && it->second != id) {
      return Status::Internal("election safety: nodes " + N(it->second) + " and " + N(id) + " both lead term " +
                              N(hard.term));
    }
    if (inserted) GPOOL_RETURN_IF_ERROR(CheckLeaderCompleteness(id, hard.term, log));
  }
  uint64_t& seen = last_commit_[id];
  if (hard.commit < seen) {
    return Status::Internal("monotonic: node " + N(id) + " commit went from " + N(seen) + " to " +
                            N(hard.commit));
  }
  for (uint64_t i = std::max(seen, log.snapshot().index) + 1; i <= hard.commit; ++i) {
    const LogEntry* e = log.At(i);
    if (e == nullptr) {
      return Status::Internal("node " + N(id) + " commits index " + N(i) + " that its log does not hold");
    }
    GPOOL_RETURN_IF_ERROR(RecordCommitted(id, i, e->term, HashBytes(e->data), hard.term));
  }
  seen = hard.commit;
  return Status::Ok();
}

Status Checker::RecordCommitted(uint64_t id, uint64_t index, uint64_t term, uint64_t hash,
                                uint64_t observed_term) {
  if (committed_.size() <= index) committed_.resize(index + 1);
  Committed& c = committed_[index];
  if (!c.known) {
    c = {true, term, hash, observed_term};
    return Status::Ok();
  }
  if (c.term != term || c.hash != hash) {
    return Status::Internal("state machine safety: node " + N(id) + " committed index " + N(index) + " in term " +
                            N(term) + " but it was already committed with term " + N(c.term) +
                            (c.hash != hash ? " and different data" : ""));
  }
  c.observed_term = std::min(c.observed_term, observed_term);
  return Status::Ok();
}

Status Checker::CheckLeaderCompleteness(uint64_t id, uint64_t term, const RaftLog& log) const {
  for (uint64_t i = log.snapshot().index + 1; i < committed_.size(); ++i) {
    const Committed& c = committed_[i];
    if (!c.known || c.observed_term >= term) continue;
    const LogEntry* e = log.At(i);
    if (e == nullptr || e->term != c.term || HashBytes(e->data) != c.hash) {
      return Status::Internal("leader completeness: node " + N(id) + " leads term " + N(term) +
                              " without index " + N(i) + " (term " + N(c.term) + "), committed by term " +
                              N(c.observed_term));
    }
  }
  return Status::Ok();
}

Status Checker::OnPersist(uint64_t id, const std::vector<LogEntry>& entries, const MemoryLog& durable) {
  for (const LogEntry& e : entries) {
    if (e.index <= durable.snapshot().index) continue;
    const uint64_t prev_term = e.index - 1 >= durable.snapshot().index ? durable.Term(e.index - 1) : kUnknown;
    const uint64_t hash = HashBytes(e.data);
    auto [it, inserted] = persisted_.emplace(std::make_pair(e.index, e.term), Persisted{hash, prev_term});
    if (inserted) continue;
    Persisted& p = it->second;
    if (p.hash != hash) {
      return Status::Internal("log matching: node " + N(id) + " persisted a different entry at index " +
                              N(e.index) + " term " + N(e.term));
    }
    if (p.prev_term == kUnknown) {
      p.prev_term = prev_term;
    } else if (prev_term != kUnknown && prev_term != p.prev_term) {
      return Status::Internal("log matching: at node " + N(id) + " entry " + N(e.index) + "/" + N(e.term) +
                              " follows term " + N(prev_term) + ", elsewhere term " + N(p.prev_term));
    }
  }
  return Status::Ok();
}

Status Checker::OnApply(uint64_t id, const LogEntry& e, uint64_t applied_before, uint64_t chain_after) {
  if (e.index != applied_before + 1) {
    return Status::Internal("monotonic: node " + N(id) + " applied index " + N(e.index) + " after " +
                            N(applied_before));
  }
  if (e.index >= committed_.size() || !committed_[e.index].known) {
    return Status::Internal("node " + N(id) + " applied index " + N(e.index) + " before anyone committed it");
  }
  const Committed& c = committed_[e.index];
  if (c.term != e.term || c.hash != HashBytes(e.data)) {
    return Status::Internal("state machine safety: node " + N(id) + " applied index " + N(e.index) +
                            " term " + N(e.term) + " but term " + N(c.term) + " was committed there");
  }
  if (chains_.size() <= e.index) chains_.resize(e.index + 1);
  auto& chain = chains_[e.index];
  if (!chain.first) {
    chain = {true, chain_after};
  } else if (chain.second != chain_after) {
    return Status::Internal("state machine safety: node " + N(id) + "'s state after index " + N(e.index) +
                            " differs from another node's");
  }
  return Status::Ok();
}

Status Checker::OnRestore(uint64_t id, uint64_t index, uint64_t chain) {
  if (index == 0) return Status::Ok();
  if (chains_.size() <= index) chains_.resize(index + 1);
  auto& known = chains_[index];
  if (!known.first) {
    known = {true, chain};
  } else if (known.second != chain) {
    return Status::Internal("state machine safety: node " + N(id) + " restored a snapshot at index " + N(index) +
                            " whose state differs from the applied history");
  }
  return Status::Ok();
}

Status Checker::OnRead(uint64_t id, const ReadState& read, uint64_t applied) {
  auto it = reads_issued_.find(read.context);
  if (it == reads_issued_.end()) {
    return Status::Internal("node " + N(id) + " returned a read nobody issued: " + read.context);
  }
  if (read.index < it->second) {
    return Status::Internal("linearizability: read " + read.context + " at node " + N(id) + " got index " +
                            N(read.index) + " but index " + N(it->second) + " was committed when it was issued");
  }
  if (applied < read.index) {
    return Status::Internal("read " + read.context + " served at node " + N(id) + " with applied " + N(applied) +
                            " < read index " + N(read.index));
  }
  ++reads_checked_;
  return Status::Ok();
}

}  // namespace gpool::raft::sim
