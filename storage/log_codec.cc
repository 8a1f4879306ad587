#include "storage/log_codec.h"

#include "storage/key_encoding.h"

namespace gpool::storage::log_codec {
namespace {

constexpr char kFormatV1 = '\x01';

// Checks the format byte and exact or minimum size, then strips the format byte.
Status CheckHeader(std::string_view* value, size_t size, bool exact, std::string_view what) {
  bool size_ok = exact ? value->size() == size : value->size() >= size;
  if (!size_ok) {
    return Status::Malformed(std::string(what) + ": value has " + std::to_string(value->size()) +
                             " bytes, want " + (exact ? "" : "at least ") + std::to_string(size));
  }
  if ((*value)[0] != kFormatV1) {
    return Status::Malformed(std::string(what) + ": unknown format byte " +
                             std::to_string(static_cast<uint8_t>((*value)[0])));
  }
  value->remove_prefix(1);
  return Status::Ok();
}

}  // namespace

std::string LogKey(uint64_t index) { return KeyBuilder(kLogPrefix).U64(index).Build(); }

Result<uint64_t> ParseLogKey(std::string_view key) {
  KeyDecoder decoder(key);
  GPOOL_RETURN_IF_ERROR(decoder.ExpectPrefix(kLogPrefix));
  GPOOL_ASSIGN_OR_RETURN(uint64_t index, decoder.U64());
  GPOOL_RETURN_IF_ERROR(decoder.Done());
  return index;
}

std::string EncodeEntry(const LogEntry& entry) {
  std::string out(1, kFormatV1);
  AppendU64(&out, entry.term);
  out.append(entry.data);
  return out;
}

Result<LogEntry> DecodeEntry(uint64_t index, std::string_view value) {
  std::string what = "raft log entry " + std::to_string(index);
  GPOOL_RETURN_IF_ERROR(CheckHeader(&value, 9, /*exact=*/false, what));
  LogEntry entry;
  entry.index = index;
  GPOOL_ASSIGN_OR_RETURN(entry.term, ReadU64(&value));
  entry.data.assign(value);
  return entry;
}

std::string EncodeHardState(const HardState& state) {
  std::string out(1, kFormatV1);
  AppendU64(&out, state.term);
  AppendU64(&out, state.vote);
  AppendU64(&out, state.commit);
  return out;
}

Result<HardState> DecodeHardState(std::string_view value) {
  GPOOL_RETURN_IF_ERROR(CheckHeader(&value, 25, /*exact=*/true, "raft hard state"));
  HardState state;
  GPOOL_ASSIGN_OR_RETURN(state.term, ReadU64(&value));
  GPOOL_ASSIGN_OR_RETURN(state.vote, ReadU64(&value));
  GPOOL_ASSIGN_OR_RETURN(state.commit, ReadU64(&value));
  return state;
}

std::string EncodePosition(const SnapshotMeta& position) {
  std::string out(1, kFormatV1);
  AppendU64(&out, position.index);
  AppendU64(&out, position.term);
  return out;
}

Result<SnapshotMeta> DecodePosition(std::string_view value, std::string_view what) {
  GPOOL_RETURN_IF_ERROR(CheckHeader(&value, 17, /*exact=*/true, what));
  SnapshotMeta position;
  GPOOL_ASSIGN_OR_RETURN(position.index, ReadU64(&value));
  GPOOL_ASSIGN_OR_RETURN(position.term, ReadU64(&value));
  return position;
}

}  // namespace gpool::storage::log_codec
