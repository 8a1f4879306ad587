// ReplicaDirectory: where each coordinator replica listens, by Raft id.
//
// Raft itself knows replicas only by id; the transport needs their peer
// endpoints and clients need the leader's client endpoint. The directory
// starts from the command line (--peers, --peer-clients), and membership
// changes extend it: an added replica's addresses travel in its
// configuration-change entry (ConfChange::context), and every snapshot
// carries the whole directory (SnapshotImage), so a replica that learns the
// configuration from a snapshot also learns how to reach its members.
//
// Thread-safety: none (a value type).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "control/log/image_file.h"
#include "protocol/base/status.h"

namespace gpool::replication {

struct ReplicaAddress {
  uint64_t id = 0;
  std::string peer;    // peer endpoint (Raft traffic)
  std::string client;  // client endpoint (clients' redirects); may be empty
  std::string worker;  // worker endpoint (workers' redirects); may be empty
  std::string key;     // CurveZMQ public key (Z85); empty on an insecure cluster
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Required("peer", peer);
    v.Optional("client", client);
    v.Optional("worker", worker);
    v.Optional("key", key);
  }
  bool operator==(const ReplicaAddress&) const = default;
};

class ReplicaDirectory {
 public:
  // Entries from `other` replace this one's for the same id.
  void Merge(const std::vector<ReplicaAddress>& other);
  void Put(ReplicaAddress address) { by_id_[address.id] = std::move(address); }
  void Erase(uint64_t id) { by_id_.erase(id); }
  const ReplicaAddress* Find(uint64_t id) const;
  std::string ClientOf(uint64_t id) const;
  std::string WorkerOf(uint64_t id) const;
  std::vector<ReplicaAddress> List() const;

 private:
  std::map<uint64_t, ReplicaAddress> by_id_;
};

// ConfChange::context of an added replica.
std::string EncodeReplicaAddress(const ReplicaAddress& address);
Result<ReplicaAddress> DecodeReplicaAddress(std::string_view bytes);

// The bytes of a Raft snapshot of a replicated coordinator: the directory at
// the time it was taken and the state-machine image: inline in `state`, or
// (issue 49) in the file `file` names, `state` then empty. Images written
// before `file` existed decode with an empty one: inline.
struct SnapshotImage {
  std::vector<ReplicaAddress> replicas;
  std::string state;
  ImageFileRef file;
  template <typename V>
  void Fields(V& v) {
    v.Required("replicas", replicas);
    v.Required("state", state);
    v.Optional("file", file);
  }
};
std::string EncodeSnapshotImage(const SnapshotImage& image);
Result<SnapshotImage> DecodeSnapshotImage(std::string_view bytes);

}  // namespace gpool::replication
