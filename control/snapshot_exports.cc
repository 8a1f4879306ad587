#include "control/snapshot_exports.h"

#include <algorithm>

#include "protocol/base/sha256.h"
#include "protocol/messages_snapshot.h"

namespace gpool::control {

Result<ExportSnapshotReply> SnapshotExports::Start(std::string image, uint64_t index, uint64_t term,
                                                   int64_t taken_ms, std::string replica_id, uint32_t max_bytes,
                                                   int64_t now_ms) {
  Held held;
  held.meta.index = index;
  held.meta.term = term;
  held.meta.taken_ms = taken_ms;
  held.meta.total_bytes = image.size();
  held.meta.sha256 = Sha256::Of(image);
  held.meta.replica_id = std::move(replica_id);
  held.image = std::move(image);
  return Hold(std::move(held), max_bytes, now_ms);
}

Result<ExportSnapshotReply> SnapshotExports::StartFile(std::shared_ptr<const ForkedImage> file, uint64_t term,
                                                       int64_t taken_ms, std::string replica_id, uint32_t max_bytes,
                                                       int64_t now_ms) {
  Held held;
  held.meta.index = file->index();
  held.meta.term = term;
  held.meta.taken_ms = taken_ms;
  held.meta.total_bytes = file->bytes();
  held.meta.sha256 = file->sha256();
  held.meta.replica_id = std::move(replica_id);
  held.file = std::move(file);
  return Hold(std::move(held), max_bytes, now_ms);
}

Result<ExportSnapshotReply> SnapshotExports::Hold(Held held, uint32_t max_bytes, int64_t now_ms) {
  Expire(now_ms);
  if (held_.size() >= kMaxHeld) std::erase_if(held_, [](const auto& entry) { return entry.second.read_to_end; });
  if (held_.size() >= kMaxHeld) {
    return Status::ResourceExhausted("this leader holds " + std::to_string(held_.size()) +
                                     " snapshot exports already; try again once one is read or a minute idle");
  }
  held.meta.export_id = next_id_++;
  held.last_read_ms = now_ms;
  const uint64_t id = held.meta.export_id;
  held_.emplace(id, std::move(held));
  return Read(id, 0, max_bytes, now_ms);
}

Result<ExportSnapshotReply> SnapshotExports::Read(uint64_t export_id, uint64_t offset, uint32_t max_bytes,
                                                  int64_t now_ms) {
  Expire(now_ms);
  auto it = held_.find(export_id);
  if (it == held_.end()) {
    return Status::NotFound("snapshot export " + std::to_string(export_id) +
                            " is not held here (it was idle over a minute, or the leader changed): start again");
  }
  const uint64_t total = it->second.meta.total_bytes;
  if (offset > total) {
    return Status::InvalidArgument("offset " + std::to_string(offset) + " is past the image's end (" +
                                   std::to_string(total) + " bytes)");
  }
  it->second.last_read_ms = now_ms;
  GPOOL_ASSIGN_OR_RETURN(ExportSnapshotReply reply, Chunk(it->second, offset, max_bytes));
  // The last chunk read: the image goes soon, kept a little for a resend of
  // a reply that was lost.
  if (offset + reply.data.size() == total) it->second.read_to_end = true;
  return reply;
}

void SnapshotExports::Expire(int64_t now_ms) {
  std::erase_if(held_, [now_ms](const auto& entry) {
    return now_ms - entry.second.last_read_ms > (entry.second.read_to_end ? kReadIdleMs : kIdleMs);
  });
}

Result<ExportSnapshotReply> SnapshotExports::Chunk(const Held& held, uint64_t offset, uint32_t max_bytes) {
  const uint32_t limit = max_bytes == 0 ? kDefaultSnapshotChunkBytes : std::min(max_bytes, kMaxSnapshotChunkBytes);
  ExportSnapshotReply reply = held.meta;
  reply.offset = offset;
  const size_t length = static_cast<size_t>(std::min<uint64_t>(limit, held.meta.total_bytes - offset));
  if (held.file) {
    GPOOL_ASSIGN_OR_RETURN(std::string data, held.file->ReadAt(offset, length));
    reply.data = wire::Bytes(std::move(data));
  } else {
    reply.data = wire::Bytes(held.image.substr(static_cast<size_t>(offset), length));
  }
  return reply;
}

}  // namespace gpool::control
