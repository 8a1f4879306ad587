// SnapshotExports: the state images the serving leader holds for admins
// copying them out (ExportSnapshot, `gpool admin snapshot save`). An image is
// taken once per export and read in chunks by offset, so a large state
// travels in frames of a few MiB and a slow reader sees one consistent image.
//
// Images are big (the whole state), so few are held: at most kMaxHeld at a
// time, each dropped a minute after its last read (Expire, from the loop's
// tick) and all of them when this replica stops leading (DropAll): an
// export's reader then starts again at the new leader.
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "control/snapshot_fork.h"
#include "protocol/base/status.h"
#include "protocol/messages_snapshot.h"

namespace gpool::control {

class SnapshotExports {
 public:
  static constexpr size_t kMaxHeld = 2;
  static constexpr int64_t kIdleMs = 60'000;
  // An export read to its end is kept this long for a resent last request,
  // and is the first to go when a new one needs room.
  static constexpr int64_t kReadIdleMs = 5'000;

  // Holds `image` as a new export and returns its first chunk (as Read);
  // ResourceExhausted when kMaxHeld are held already.
  Result<ExportSnapshotReply> Start(std::string image, uint64_t index, uint64_t term, int64_t taken_ms,
                                    std::string replica_id, uint32_t max_bytes, int64_t now_ms);
  // The same for an image encoded off the loop (issue 49): the file is read
  // a chunk at a time, never whole, and its digest is the child's.
  Result<ExportSnapshotReply> StartFile(std::shared_ptr<const ForkedImage> file, uint64_t term, int64_t taken_ms,
                                        std::string replica_id, uint32_t max_bytes, int64_t now_ms);
  // The chunk of export `export_id` at `offset`: NotFound for an export not
  // held (never, expired or dropped), InvalidArgument for an offset past its end.
  Result<ExportSnapshotReply> Read(uint64_t export_id, uint64_t offset, uint32_t max_bytes, int64_t now_ms);
  void Expire(int64_t now_ms);
  void DropAll() { held_.clear(); }
  size_t held() const { return held_.size(); }

 private:
  struct Held {
    ExportSnapshotReply meta;  // without data
    std::string image;                        // or, when set:
    std::shared_ptr<const ForkedImage> file;  // read a chunk at a time
    int64_t last_read_ms = 0;
    bool read_to_end = false;  // its last chunk was read
  };
  static Result<ExportSnapshotReply> Chunk(const Held& held, uint64_t offset, uint32_t max_bytes);
  Result<ExportSnapshotReply> Hold(Held held, uint32_t max_bytes, int64_t now_ms);

  std::map<uint64_t, Held> held_;
  uint64_t next_id_ = 1;
};

}  // namespace gpool::control
