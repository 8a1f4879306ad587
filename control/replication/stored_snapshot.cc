#include "control/replication/stored_snapshot.h"

#include "protocol/wire.h"

namespace gpool::replication {

wire::DecodeLimits SnapshotDecodeLimits() {
  wire::DecodeLimits limits;
  limits.max_frame_bytes = size_t{1} << 32;
  limits.max_string_bytes = size_t{1} << 31;
  return limits;
}

std::string EncodeStoredSnapshot(const StoredSnapshot& snapshot) { return wire::PackToString(snapshot); }

Result<StoredSnapshot> DecodeStoredSnapshot(std::string_view bytes) {
  auto decoded = wire::UnpackFromString<StoredSnapshot>(bytes, SnapshotDecodeLimits());
  if (!decoded.ok()) {
    return Status::Malformed("stored snapshot is not a replicated coordinator's (was this data dir written "
                             "without --peers?): " + decoded.status().message());
  }
  decoded->conf.Normalize();
  return decoded;
}

}  // namespace gpool::replication
