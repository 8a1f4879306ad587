// A snapshot file: a coordinator's state saved for a backup (`gpool admin
// snapshot save`), restored into a new data dir (`gpool admin snapshot
// restore`). Layout:
//
//   "GPOOLSNAP1\n"                       11 bytes of magic (format 1)
//   header length                        4 bytes, big-endian
//   SnapshotFileHeader                   msgpack
//   the state image                      header.state_bytes bytes
//
// The header says which log index and term the image is of, when and where
// it was taken, and the image's SHA-256, so a truncated or damaged file is
// refused (Malformed, naming what is wrong) before anything is built from
// it. The image itself is ClusterState::Snapshot()'s bytes, opaque here.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool {

inline constexpr std::string_view kSnapshotFileMagic = "GPOOLSNAP1\n";

struct SnapshotFileHeader {
  uint64_t index = 0;       // the last Raft log index the image includes
  uint64_t term = 0;        // the leader's term when it was taken
  int64_t taken_ms = 0;     // wall clock, Unix ms
  uint64_t state_bytes = 0;
  std::string sha256;       // of the image, lowercase hex
  std::string source;       // the replica and endpoint it was saved from, for people
  template <typename V>
  void Fields(V& v) {
    v.Required("index", index);
    v.Required("term", term);
    v.Required("taken_ms", taken_ms);
    v.Required("state_bytes", state_bytes);
    v.Required("sha256", sha256);
    v.Optional("source", source);
  }
};

// Magic, length and header: what precedes the image in the file.
std::string EncodeSnapshotFilePrefix(const SnapshotFileHeader& header);

// Reads the magic and the header, leaving `in` at the image's first byte.
Result<SnapshotFileHeader> ReadSnapshotFileHeader(std::istream& in);

struct SnapshotFile {
  SnapshotFileHeader header;
  std::string state;
};
// The whole file, its length and checksum checked: NotFound when there is no
// such file, Malformed when it is not a snapshot file or is damaged.
Result<SnapshotFile> ReadSnapshotFile(const std::string& path);
// The same checks without keeping the image in memory (`snapshot info`).
Result<SnapshotFileHeader> VerifySnapshotFile(const std::string& path);

}  // namespace gpool
