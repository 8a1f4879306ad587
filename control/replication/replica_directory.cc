#include "control/replication/replica_directory.h"

#include "control/replication/stored_snapshot.h"
#include "protocol/wire.h"

namespace gpool::replication {

void ReplicaDirectory::Merge(const std::vector<ReplicaAddress>& other) {
  for (ReplicaAddress address : other) {
    // An entry stored before the cluster had keys (an --insecure cluster
    // restarted with CurveZMQ) keeps the key the command line gives.
    if (const ReplicaAddress* known = Find(address.id); known != nullptr && address.key.empty()) {
      address.key = known->key;
    }
    Put(std::move(address));
  }
}

const ReplicaAddress* ReplicaDirectory::Find(uint64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

std::string ReplicaDirectory::ClientOf(uint64_t id) const {
  const ReplicaAddress* address = Find(id);
  return address == nullptr ? std::string() : address->client;
}

std::string ReplicaDirectory::WorkerOf(uint64_t id) const {
  const ReplicaAddress* address = Find(id);
  return address == nullptr ? std::string() : address->worker;
}

std::vector<ReplicaAddress> ReplicaDirectory::List() const {
  std::vector<ReplicaAddress> list;
  list.reserve(by_id_.size());
  for (const auto& [id, address] : by_id_) list.push_back(address);
  return list;
}

std::string EncodeReplicaAddress(const ReplicaAddress& address) { return wire::PackToString(address); }

Result<ReplicaAddress> DecodeReplicaAddress(std::string_view bytes) {
  auto decoded = wire::UnpackFromString<ReplicaAddress>(bytes);
  if (!decoded.ok()) return decoded.status().WithContext("replica address in a configuration change");
  return decoded;
}

std::string EncodeSnapshotImage(const SnapshotImage& image) { return wire::PackToString(image); }

Result<SnapshotImage> DecodeSnapshotImage(std::string_view bytes) {
  auto decoded = wire::UnpackFromString<SnapshotImage>(bytes, SnapshotDecodeLimits());
  if (!decoded.ok()) return decoded.status().WithContext("raft snapshot image");
  return decoded;
}

}  // namespace gpool::replication
