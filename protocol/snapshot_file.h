// A snapshot file: a coordinator's state saved for a backup (`gpool admin
// snapshot save`), restored into a new data dir (`gpool admin snapshot
// restore`). Layout of format 2, which save writes without a signing key,
// and of format 3, which it writes with one (issue 48):
//
//   "GPOOLSNAP2\n" or "GPOOLSNAP3\n"     11 bytes of magic (format 2 or 3)
//   header length                        4 bytes, big-endian
//   SnapshotFileHeader                   msgpack
//   the state image                      header.state_bytes bytes
//   file digest                          64 lowercase hex digits: the SHA-256
//                                        of every byte before it
//   format 3 only, the signature trailer:
//     key id                             16 lowercase hex digits: the signer's
//                                        (snapshot_signing.h)
//     signature                          128 lowercase hex digits: Ed25519 over
//                                        SnapshotSignedMessage(file digest)
//
// The magic is covered by the digest, so a signed file cannot be passed off
// as an unsigned one without a new digest; a restore that requires a
// signature then refuses it as unsigned. Format 2 readers refuse format 3
// files as "an unknown format ... written by a newer gpool?".
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
// keep a forged header from wedging a cluster. What tells a forged file from
// one the operator saved is format 3's signature, checked against a verify
// key the operator gives (snapshot_signing.h).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool {

inline constexpr std::string_view kSnapshotFileMagic = "GPOOLSNAP2\n";
inline constexpr std::string_view kSnapshotFileMagicV1 = "GPOOLSNAP1\n";
inline constexpr std::string_view kSnapshotFileMagicV3 = "GPOOLSNAP3\n";
inline constexpr size_t kSnapshotFileDigestChars = 64;
inline constexpr size_t kSnapshotKeyIdChars = 16;
inline constexpr size_t kSnapshotSignatureChars = 128;  // an Ed25519 signature's 64 bytes
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
  // Read from the file's end, not from the header's bytes: the digest (format
  // 2 and 3) and, in format 3, the signer's key id and the signature (hex).
  std::string file_sha256;
  std::string key_id;
  std::string signature;
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

// Magic, length and header: what precedes the image in a format 2 file (or
// with `format` 3, a signed one). A writer hashes the prefix and the image
// (Sha256), ends the file with the HexDigest() and, in format 3, the trailer.
std::string EncodeSnapshotFilePrefix(const SnapshotFileHeader& header, uint32_t format = 2);
// A whole format 2 file: prefix, image, digest.
std::string EncodeSnapshotFile(const SnapshotFileHeader& header, std::string_view image);
// What a format 3 file's signature is made over: a fixed context and the
// file digest (hex). The digest, not the bytes, because Ed25519 signs in one
// pass over its whole message and an image may be gigabytes; SHA-256's
// collision resistance makes a signature over it one over prefix and image.
std::string SnapshotSignedMessage(std::string_view file_sha256);
// The format 3 trailer: key id and signature, InvalidArgument unless both
// are lowercase hex of their lengths.
Result<std::string> EncodeSnapshotFileTrailer(std::string_view key_id, std::string_view signature);

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
// such file, Malformed when it is not a snapshot file or is damaged. A format
// 3 file's trailer is read (header.key_id, header.signature) but its
// signature is not checked here: that needs the signer's public key
// (CheckSnapshotSignature, snapshot_signing.h).
Result<SnapshotFile> ReadSnapshotFile(const std::string& path);
// The same checks without keeping the image in memory (`snapshot info`).
Result<SnapshotFileHeader> VerifySnapshotFile(const std::string& path);

}  // namespace gpool
