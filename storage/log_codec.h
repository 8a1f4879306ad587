// Keys and value encodings of the Raft log store (everything under "raft/").
// Private to storage/: LogStore is the only writer; tests use it to plant
// corrupt values.
//
// Values are fixed-layout binary, big-endian, led by a format byte so a later
// layout can be told apart from this one:
//   raft/log/<u64 index>  -> [1][u64 term][data...]
//   raft/hard_state       -> [1][u64 term][u64 vote][u64 commit]
//   raft/truncated        -> [1][u64 index][u64 term]  last entry removed from the log
//   raft/snapshot/meta    -> [1][u64 index][u64 term]
//   raft/snapshot/data    -> the snapshot bytes as given
// Decoders reject any other length or format byte with Status::Malformed.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"
#include "storage/log_types.h"

namespace gpool::storage::log_codec {

inline constexpr std::string_view kLogPrefix = "raft/log/";
inline constexpr std::string_view kHardStateKey = "raft/hard_state";
inline constexpr std::string_view kTruncatedKey = "raft/truncated";
inline constexpr std::string_view kSnapshotMetaKey = "raft/snapshot/meta";
inline constexpr std::string_view kSnapshotDataKey = "raft/snapshot/data";

std::string LogKey(uint64_t index);
Result<uint64_t> ParseLogKey(std::string_view key);

std::string EncodeEntry(const LogEntry& entry);
// The index comes from the key; it names the entry in errors.
Result<LogEntry> DecodeEntry(uint64_t index, std::string_view value);

std::string EncodeHardState(const HardState& state);
Result<HardState> DecodeHardState(std::string_view value);

// Used for both raft/truncated and raft/snapshot/meta; `what` names which in errors.
std::string EncodePosition(const SnapshotMeta& position);
Result<SnapshotMeta> DecodePosition(std::string_view value, std::string_view what);

}  // namespace gpool::storage::log_codec
