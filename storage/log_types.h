// The records a Raft log store keeps: entries, the hard state, snapshot meta.
// Plain values shared between storage/log_store.h and the Raft core.
#pragma once

#include <cstdint>
#include <string>

namespace gpool::storage {

struct LogEntry {
  uint64_t index = 0;  // 1-based; 0 is never a real entry
  uint64_t term = 0;
  std::string data;    // opaque to storage: the state machine command

  // What Entries() counts against max_bytes: the payload plus 16 bytes for
  // index and term, so a run of empty entries is still bounded.
  uint64_t ByteSize() const { return data.size() + 16; }
  bool operator==(const LogEntry&) const = default;
};

// What Raft must have on disk before it answers a vote or append request.
struct HardState {
  uint64_t term = 0;
  uint64_t vote = 0;    // node voted for in `term`; 0 = none
  uint64_t commit = 0;
  bool operator==(const HardState&) const = default;
};

// The last log position a snapshot covers.
struct SnapshotMeta {
  uint64_t index = 0;
  uint64_t term = 0;
  bool operator==(const SnapshotMeta&) const = default;
};

}  // namespace gpool::storage
