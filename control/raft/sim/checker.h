// Checker: the Raft safety properties the simulator asserts, fed by the
// cluster as things happen. Each hook returns Internal naming the property
// and the nodes, indexes and terms involved when a property breaks.
//
//   Election safety       at most one leader per term (CheckNode, every step)
//   Log matching          two durable entries with the same index and term
//                         hold the same data and follow the same term, which
//                         by induction makes their prefixes identical
//                         (OnPersist; durable logs change only there, so this
//                         is the same as checking them all after every step)
//   Leader completeness   a leader's log holds every entry committed in an
//                         earlier term (CheckNode, when a leader first shows)
//   State machine safety  no two nodes commit or apply different entries at
//                         one index, and each node's state after applying
//                         index i equals every other node's (a hash chain)
//   Monotonic progress    per incarnation, commit and applied indexes never
//                         go back and entries apply one index at a time
//   Linearizable reads    a ReadState's index covers every entry known
//                         committed when the read was issued, and the node
//                         has applied it before serving
//
// Owned by SimCluster. Thread-safety: none.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "control/raft/raw_node.h"
#include "control/raft/sim/memory_log.h"

namespace gpool::raft::sim {

uint64_t HashBytes(std::string_view data);
// The state-machine hash after applying `e` to a state with hash `chain`.
uint64_t ChainHash(uint64_t chain, const LogEntry& e);

class Checker {
 public:
  // Every live node after every step.
  Status CheckNode(uint64_t id, const RawNode& node);
  // A node (re)started: its progress tracking restarts from durable state.
  void OnRestart(uint64_t id, uint64_t durable_commit) { last_commit_[id] = durable_commit; }
  Status OnPersist(uint64_t id, const std::vector<LogEntry>& entries, const MemoryLog& durable);
  Status OnApply(uint64_t id, const LogEntry& e, uint64_t applied_before, uint64_t chain_after);
  // The state machine was replaced by a snapshot's state (install or restart).
  Status OnRestore(uint64_t id, uint64_t index, uint64_t chain);
  void OnReadIssued(const std::string& context) { reads_issued_[context] = max_committed(); }
  Status OnRead(uint64_t id, const ReadState& read, uint64_t applied);

  uint64_t max_committed() const { return committed_.empty() ? 0 : committed_.size() - 1; }
  // Whether an entry with this data hash is known committed.
  bool IsCommitted(uint64_t index, uint64_t data_hash) const {
    return index < committed_.size() && committed_[index].known && committed_[index].hash == data_hash;
  }
  size_t leaders_seen() const { return leaders_.size(); }
  uint64_t reads_checked() const { return reads_checked_; }

 private:
  struct Committed {
    bool known = false;
    uint64_t term = 0;
    uint64_t hash = 0;
    uint64_t observed_term = 0;  // committed by a leader of this term or earlier
  };
  struct Persisted {
    uint64_t hash;
    uint64_t prev_term;  // kUnknown if the previous entry was compacted
  };
  static constexpr uint64_t kUnknown = ~0ULL;

  Status RecordCommitted(uint64_t id, uint64_t index, uint64_t term, uint64_t hash, uint64_t observed_term);
  Status CheckLeaderCompleteness(uint64_t id, uint64_t term, const RaftLog& log) const;

  std::map<uint64_t, uint64_t> leaders_;  // term -> leader
  std::vector<Committed> committed_;      // by index
  std::vector<std::pair<bool, uint64_t>> chains_;  // by index: state hash after applying it
  std::map<std::pair<uint64_t, uint64_t>, Persisted> persisted_;  // (index, term)
  std::map<uint64_t, uint64_t> last_commit_;                      // node -> commit seen
  std::map<std::string, uint64_t> reads_issued_;                  // context -> committed then
  uint64_t reads_checked_ = 0;
};

}  // namespace gpool::raft::sim
