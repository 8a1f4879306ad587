// Snapshot transfer: a snapshot whose image is a file (image_file.h) goes to
// a lagging follower in bounded chunks read from that file (issue 49).
//
// The Raft core still decides when a follower needs a snapshot and emits one
// kSnapshot; its data is only the small file reference. RaftLog hands it to
// SnapshotSender instead of the transport, which opens the file (the open
// descriptor keeps it readable even once a newer snapshot replaces it) and
// sends kChunkBytes pieces as raft::kSnapshotChunk messages, at most
// kChunksPerTurn per follower per loop turn: the leader's loop never holds
// more than one chunk of the image, and heartbeats and appends go out between
// the chunks. The follower's SnapshotReceiver writes the pieces, in order, to
// a ".part" file while hashing them; after the last one it checks length and
// SHA-256 against the reference, fsyncs, renames the file to
// ImageFileName(index), fsyncs the directory and returns the kSnapshot the
// chunks stand for, its data now a reference to the follower's own file, to
// be stepped into its core. The follower then restores its state from that
// file once, on its loop (it is not serving as leader while it installs).
//
// Losses: chunks travel over the same ordered peer connection; a piece that
// does not continue the transfer under way (a gap after a dropped frame, a
// restarted follower) drops the transfer. The core re-sends kSnapshot when
// the follower has not answered for two election timeouts
// (raft.cc: snapshot_ticks), and a kSnapshot for a snapshot whose transfer has
// finished or failed starts it again from offset 0; one for the transfer still
// under way is ignored.
//
// Not thread-safe; the RaftLog (the coordinator's loop thread) owns both.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "control/raft/messages.h"
#include "control/log/image_file.h"
#include "protocol/base/sha256.h"
#include "protocol/base/status.h"

namespace gpool::replication {

struct SnapshotTransferStats {
  uint64_t transfers_started = 0;
  uint64_t transfers_finished = 0;  // sender: every chunk sent; receiver: image installed
  uint64_t chunks = 0;              // sent or received
  uint64_t chunk_bytes = 0;
  uint64_t chunks_dropped = 0;      // receiver: did not continue the transfer under way
  uint64_t largest_chunk = 0;
};

class SnapshotSender {
 public:
  static constexpr size_t kChunkBytes = size_t{1} << 20;
  static constexpr size_t kChunksPerTurn = 4;

  explicit SnapshotSender(std::string dir, size_t chunk_bytes = kChunkBytes)
      : dir_(std::move(dir)), chunk_bytes_(chunk_bytes) {}
  ~SnapshotSender() { Clear(); }
  SnapshotSender(const SnapshotSender&) = delete;
  SnapshotSender& operator=(const SnapshotSender&) = delete;

  // `snapshot` is a kSnapshot the core emitted, `ref` its image file.
  // Replaces a transfer of an older snapshot to the same follower. IoError
  // when the file cannot be opened (the core asks again later).
  Status Start(const raft::Message& snapshot, const ImageFileRef& ref);
  // Reads and hands `send` up to kChunksPerTurn chunks of each transfer.
  using SendFn = std::function<void(uint64_t to, std::string frame)>;
  void Pump(const SendFn& send);
  // Drops every transfer (this replica stopped leading).
  void Clear();
  bool busy() const { return !transfers_.empty(); }
  const SnapshotTransferStats& stats() const { return stats_; }

 private:
  struct Transfer {
    raft::Message header;  // kSnapshotChunk, with the snapshot and its reference
    int fd = -1;
    uint64_t offset = 0;
    uint64_t total = 0;
  };
  std::string dir_;
  size_t chunk_bytes_;
  std::map<uint64_t, Transfer> transfers_;  // by follower
  SnapshotTransferStats stats_;
};

class SnapshotReceiver {
 public:
  explicit SnapshotReceiver(std::string dir);
  ~SnapshotReceiver() { Abandon(); }
  SnapshotReceiver(const SnapshotReceiver&) = delete;
  SnapshotReceiver& operator=(const SnapshotReceiver&) = delete;

  // One chunk. nullopt until the last one is in; then the kSnapshot to step.
  // An error (a bad reference, a digest mismatch, a failed write) drops the
  // transfer; the leader sends it again.
  Result<std::optional<raft::Message>> Take(const raft::Message& chunk);
  const SnapshotTransferStats& stats() const { return stats_; }
  std::string part_path() const;

 private:
  void Abandon();

  std::string dir_;
  int fd_ = -1;
  uint64_t from_ = 0;
  uint64_t index_ = 0;
  uint64_t term_ = 0;
  uint64_t received_ = 0;
  Sha256 digest_;
  SnapshotTransferStats stats_;
};

}  // namespace gpool::replication
