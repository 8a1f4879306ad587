// What a Raft log entry's bytes mean: the entry kinds the core knows and the
// configuration types that ride inside configuration-change entries.
//
// Encoding of storage::LogEntry::data (the core writes and reads it; the
// application decodes committed entries with the helpers below):
//   ""                   an empty entry: the no-op a new leader appends so it
//                        can commit entries of earlier terms (thesis 3.6.2)
//   0x01 + payload       a normal entry; payload is the application command
//   0x02 + msgpack map   a configuration change (ConfChangeEntry)
// Any other first byte is kUnknown, which the core treats like a normal entry
// it does not look into. The tag byte keeps every command unambiguous without
// a second field in LogEntry, whose layout storage/ owns.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/wire.h"
#include "storage/log_types.h"

namespace gpool::raft {

using storage::LogEntry;

// The members of one configuration: voters, and learners (thesis 4.2.1,
// etcd's learners), which receive the log but neither vote nor count toward
// a quorum, so a replica that has not caught up (or never answers) cannot
// cost the cluster its majority. Each list sorted and unique; no id in both.
struct ConfState {
  std::vector<uint64_t> voters;
  std::vector<uint64_t> learners;

  // A voter (the word predates learners; every quorum counts only voters).
  bool Contains(uint64_t id) const { return std::binary_search(voters.begin(), voters.end(), id); }
  bool IsLearner(uint64_t id) const { return std::binary_search(learners.begin(), learners.end(), id); }
  bool IsMember(uint64_t id) const { return Contains(id) || IsLearner(id); }
  bool empty() const { return voters.empty() && learners.empty(); }
  // Sorts and removes duplicates (a voter is never also a learner); every
  // constructor of a ConfState calls it.
  void Normalize();
  template <typename V>
  void Fields(V& v) {
    v.Required("voters", voters);
    v.Optional("learners", learners);
  }
  bool operator==(const ConfState&) const = default;
};

// Single-server changes only (thesis 4.1): one member in or out per entry.
// kAddVoter of a learner promotes it; kRemoveVoter removes a voter or a
// learner. The numbers are stored in the log; never renumber.
enum class ConfChangeType : uint8_t { kAddVoter = 1, kRemoveVoter = 2, kAddLearner = 3 };
std::string_view ConfChangeTypeName(ConfChangeType type);

// What the application asks for.
struct ConfChange {
  ConfChangeType type = ConfChangeType::kAddVoter;
  uint64_t node_id = 0;
  std::string context;  // opaque to Raft, e.g. the new node's address
  bool operator==(const ConfChange&) const = default;
};

// What the log stores: the change and the voter set it produces. Carrying the
// full result (not just the delta) means a node that sees the entry, even one
// that joined with no prior configuration, knows the configuration in force
// from that index on without replaying earlier changes.
struct ConfChangeEntry {
  ConfChange change;
  ConfState result;
  bool operator==(const ConfChangeEntry&) const = default;
};

enum class EntryType : uint8_t { kEmpty, kNormal, kConfChange, kUnknown };

std::string EncodeNormal(std::string_view payload);
std::string EncodeConfChange(const ConfChangeEntry& cc);

EntryType TypeOf(const LogEntry& entry);
// The command of a kNormal entry (empty for other kinds).
std::string_view NormalPayload(const LogEntry& entry);
// Malformed if the entry is not a well-formed configuration change.
Result<ConfChangeEntry> DecodeConfChange(const LogEntry& entry);

}  // namespace gpool::raft
