// Ordered key encoding: builds composite keys whose bytewise (memcmp) order is
// the order of the tuples they encode, so range scans over a KvStore walk a
// table in its natural order ("raft/log/" + index, "jobs/" + name + attempt).
//
//   u64     8 bytes big-endian, fixed width.
//   string  bytes with 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x01.
//           The terminator sorts below any escaped or ordinary byte, so "a"
//           sorts before "a\0" and "ab", and a string never runs into the
//           component after it.
//
// Decoding never trusts its input: a short u64, a missing terminator, a bad
// escape or unexpected trailing bytes give Status::Malformed.
//
// Thread-safety: free functions are pure; KeyBuilder and KeyDecoder are plain
// values owned by one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::storage {

void AppendU64(std::string* out, uint64_t value);
// Reads 8 bytes from the front of *in and advances it.
Result<uint64_t> ReadU64(std::string_view* in);

void AppendOrderedString(std::string* out, std::string_view value);
// Reads one encoded string from the front of *in and advances past its terminator.
Result<std::string> ReadOrderedString(std::string_view* in);

// The smallest key greater than every key that starts with prefix, for use as
// an exclusive scan bound. Empty when there is none (prefix is all 0xFF or
// empty): scan to the end of the store.
std::string PrefixSuccessor(std::string_view prefix);

// Appends components after a literal prefix:
//   std::string key = KeyBuilder("raft/log/").U64(index).Build();
class KeyBuilder {
 public:
  explicit KeyBuilder(std::string_view prefix = {}) : key_(prefix) {}

  KeyBuilder& U64(uint64_t value) {
    AppendU64(&key_, value);
    return *this;
  }
  KeyBuilder& String(std::string_view value) {
    AppendOrderedString(&key_, value);
    return *this;
  }
  // Bytes copied as they are; only safe at the end or before a fixed-width field.
  KeyBuilder& Raw(std::string_view bytes) {
    key_.append(bytes);
    return *this;
  }

  const std::string& key() const { return key_; }
  std::string Build() const { return key_; }

 private:
  std::string key_;
};

// Reads components back in the order they were built; the view must outlive it.
//   KeyDecoder d(key);
//   GPOOL_RETURN_IF_ERROR(d.ExpectPrefix("raft/log/"));
//   GPOOL_ASSIGN_OR_RETURN(uint64_t index, d.U64());
//   GPOOL_RETURN_IF_ERROR(d.Done());
class KeyDecoder {
 public:
  explicit KeyDecoder(std::string_view key) : key_(key), rest_(key) {}

  Status ExpectPrefix(std::string_view prefix);
  Result<uint64_t> U64();
  Result<std::string> String();
  // Malformed if any bytes are left: a key with a suffix is a different key.
  Status Done() const;

  std::string_view remaining() const { return rest_; }

 private:
  // Malformed, naming the whole key (escaped) so a corrupt key can be found.
  Status Error(std::string_view what) const;

  std::string_view key_;
  std::string_view rest_;
};

// Printable form of arbitrary key bytes for error messages ("raft/log/\x00...").
std::string EscapeKey(std::string_view key);

}  // namespace gpool::storage
