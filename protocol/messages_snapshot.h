// Snapshot export (docs/protocol.md 7.20): an admin copies the serving
// leader's state for a backup (`gpool admin snapshot save`). The image is
// taken once, when a request with export_id 0 arrives (after the read
// barrier, so it holds every write acknowledged before it), and is then read
// in chunks by offset; the leader keeps it for a minute after the last read.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/bytes.h"
#include "protocol/messages_common.h"

namespace gpool {

// Largest chunk one reply carries; a request asking for more gets this much.
inline constexpr uint32_t kMaxSnapshotChunkBytes = 4 * 1024 * 1024;
inline constexpr uint32_t kDefaultSnapshotChunkBytes = 1024 * 1024;

struct ExportSnapshot {
  static constexpr MessageType kType = MessageType::kExportSnapshot;
  uint64_t export_id = 0;  // 0: take a new image; else the reply's export_id
  uint64_t offset = 0;     // where in the image this chunk starts
  uint32_t max_bytes = 0;  // 0: kDefaultSnapshotChunkBytes
  template <typename V>
  void Fields(V& v) {
    v.Optional("export_id", export_id);
    v.Optional("offset", offset);
    v.Optional("max_bytes", max_bytes);
  }
};

struct ExportSnapshotReply {
  static constexpr MessageType kType = MessageType::kExportSnapshotReply;
  uint64_t export_id = 0;
  uint64_t index = 0;       // the last Raft log index the image includes
  uint64_t term = 0;        // the leader's term when it was taken
  int64_t taken_ms = 0;     // wall clock, Unix ms
  uint64_t total_bytes = 0;
  std::string sha256;       // of the whole image, lowercase hex
  std::string replica_id;   // the replica that took it
  uint64_t offset = 0;      // where `data` starts
  wire::Bytes data;         // image bytes [offset, offset + data.size())
  template <typename V>
  void Fields(V& v) {
    v.Required("export_id", export_id);
    v.Required("index", index);
    v.Required("term", term);
    v.Required("taken_ms", taken_ms);
    v.Required("total_bytes", total_bytes);
    v.Required("sha256", sha256);
    v.Optional("replica_id", replica_id);
    v.Required("offset", offset);
    v.Required("data", data);
  }
};

}  // namespace gpool
