// A snapshot file: a coordinator's state saved for a backup (`gpool admin
// snapshot save`), restored into a new data dir (`gpool admin snapshot
// restore`). Layout of format 2, which save writes:
//
//   "GPOOLSNAP2\n"                       11 bytes of magic (format 2)
//   header length                        4 bytes, big-endian
//   SnapshotFileHeader                   msgpack
//   the state image                      header.state_bytes bytes
//   file digest                          64 lowercase hex digits: the SHA-256
//                                        of every byte before it
//
// Format 1 ("GPOOLSNAP1\n") has no file digest: only the image was covered
// (header.sha256), so a header edited to term 2^64-1 restored "fine" into a
// cluster that refused every write (issue 48, finding 7). Format 1 files are
// still read (backups taken before the upgrade must stay restorable), with
// the same range checks on every header field; `version` says which format
// a file was, and restore reports it.
//
// Every header field is range-checked when read (InvalidArgument naming the
// field and its bound); a truncated or damaged file, or one whose digest
// differs, is Malformed. The image itself is ClusterState::Snapshot()'s
// bytes, opaque here. The digest is unkeyed: it catches damage and careless
// edits; a deliberate forger recomputes it, and the range checks are what
// keep a forged header from wedging a cluster.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool {

inline constexpr std::string_view kSnapshotFileMagic = "GPOOLSNAP2\n";
inline constexpr std::string_view kSnapshotFileMagicV1 = "GPOOLSNAP1\n";
inline constexpr size_t kSnapshotFileDigestChars = 64;
// Bounds on header fields. An honest term grows by one per election and a
// restore adds one per millisecond since the save (snapshot_restore.h), so
// 2^40 is out of honest reach while leaving Raft's own bound (2^62) far
// above anything a restore can produce. Indexes likewise.
inline constexpr uint64_t kMaxSnapshotTerm = uint64_t{1} << 40;
inline constexpr uint64_t kMaxSnapshotIndex = uint64_t{1} << 48;
inline constexpr uint64_t kMaxSnapshotStateBytes = uint64_t{1} << 40;  // 1 TiB
inline constexpr size_t kMaxSnapshotSourceBytes = 1024;

struct SnapshotFileHeader {
  uint64_t index = 0;       // the last Raft log index the image includes
  uint64_t term = 0;        // the leader's term when it was taken
  int64_t taken_ms = 0;     // wall clock, Unix ms
  uint64_t state_bytes = 0;
  std::string sha256;       // of the image, lowercase hex
  std::string source;       // the replica and endpoint it was saved from, for people
  uint32_t version = 2;     // the file format it was read from; not in the header's bytes
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

// Magic, length and header: what precedes the image in a format 2 file.
// A writer hashes the prefix and the image (Sha256) and ends the file with
// the HexDigest().
std::string EncodeSnapshotFilePrefix(const SnapshotFileHeader& header);
// A whole format 2 file: prefix, image, digest.
std::string EncodeSnapshotFile(const SnapshotFileHeader& header, std::string_view image);

// InvalidArgument naming the first header field out of its range (above).
Status ValidateSnapshotFileHeader(const SnapshotFileHeader& header);

// Reads the magic and the header and range-checks it, leaving `in` at the
// image's first byte. `raw` (if given) receives the bytes read, which a
// format 2 file's digest covers.
Result<SnapshotFileHeader> ReadSnapshotFileHeader(std::istream& in, std::string* raw = nullptr);

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
