// Snapshot transfer: a snapshot whose image is a file (image_file.h) goes to
// a lagging follower in bounded chunks read from that file (issue 49).
//
// The Raft core still decides when a follower needs a snapshot and emits one
// kSnapshot; its data is only the small file reference. RaftLog hands it to
// SnapshotSender instead of the transport, which opens the file (the open
// descriptor keeps it readable even once a newer snapshot replaces it) and
// sends chunk_bytes pieces as raft::kSnapshotChunk messages, at most
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
// Flow control: the follower answers every chunk with a kSnapshotChunkAck
// naming the next offset it expects, and the sender keeps at most
// window_chunks chunks past the acknowledged offset. A follower that stops
// reading (SIGSTOP, a loop busy restoring, a dead process whose port is still
// held) therefore costs the leader at most the window in its queues, however
// long it stays so; before, the leader queued the whole image again on every
// re-send of the core, and a 1k-GPU scale run grew a leader by 5 GB in 3
// minutes with one follower down.
//
// Losses (go-back-N): chunks travel over one ordered peer connection. A
// chunk the transport refuses (queue full) is not counted as sent. An ack
// whose offset is at or below what was acknowledged (a gap after a lost
// chunk, a restarted follower expecting 0) sends from that offset again under
// a new attempt number, and acks of older attempts are ignored. With chunks
// outstanding and no progress for stall_ms, the sender resends from the
// acknowledged offset only if the follower has been heard from since the
// last progress (it is alive and lost something); a silent follower is left
// alone. A reject ends the transfer; the core's own re-send (raft.cc:
// snapshot_ticks) starts it again from 0.
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
  uint64_t acks = 0;          // sender: acknowledgements taken
  uint64_t resends = 0;       // sender: went back to the acknowledged offset (a gap, a restart, a stall)
  uint64_t refused = 0;       // sender: chunks the transport refused (queue full), sent again later
};


class SnapshotSender {
 public:
  static constexpr size_t kChunkBytes = size_t{1} << 20;
  static constexpr size_t kChunksPerTurn = 4;
  // 8 MB in flight per follower at the default chunk: a loopback or LAN
  // follower is never waiting for the window, and a stopped one costs 8 MB.
  static constexpr size_t kWindowChunks = 8;
  static constexpr int64_t kStallMs = 2000;

  explicit SnapshotSender(std::string dir, size_t chunk_bytes = kChunkBytes, size_t window_chunks = kWindowChunks,
                          int64_t stall_ms = kStallMs)
      : dir_(std::move(dir)), chunk_bytes_(chunk_bytes), window_chunks_(window_chunks), stall_ms_(stall_ms) {}
  ~SnapshotSender() { Clear(); }
  SnapshotSender(const SnapshotSender&) = delete;
  SnapshotSender& operator=(const SnapshotSender&) = delete;

  // `snapshot` is a kSnapshot the core emitted, `ref` its image file.
  // Replaces a transfer of an older snapshot to the same follower. IoError
  // when the file cannot be opened (the core asks again later).
  Status Start(const raft::Message& snapshot, const ImageFileRef& ref, int64_t now_ms);
  // Hands `send` up to kChunksPerTurn chunks of each transfer whose window
  // has room; `send` returns false when the transport refused the frame (it
  // is sent again next turn). `heard_ms_ago` (-1: never) tells whether a
  // stalled follower is alive.
  using SendFn = std::function<bool(uint64_t to, std::string frame)>;
  using HeardFn = std::function<int64_t(uint64_t follower)>;
  void Pump(const SendFn& send, int64_t now_ms, const HeardFn& heard_ms_ago);
  // A follower's kSnapshotChunkAck.
  void Acked(const raft::Message& ack, int64_t now_ms);
  // Drops every transfer (this replica stopped leading).
  void Clear();
  bool busy() const { return !transfers_.empty(); }
  // A transfer has chunks to send and room in its window: the loop should
  // turn again at once rather than at the next tick.
  bool ready() const;
  // Bytes sent and not yet acknowledged, over every transfer.
  uint64_t outstanding_bytes() const;
  const SnapshotTransferStats& stats() const { return stats_; }

 private:
  struct Transfer {
    raft::Message header;  // kSnapshotChunk, with the snapshot and its reference
    int fd = -1;
    uint64_t offset = 0;  // the next byte to send
    uint64_t acked = 0;   // the follower has every byte below this
    uint64_t total = 0;
    uint64_t attempt = 1;
    int64_t progress_ms = 0;  // when acked last grew, or the transfer (re)started
  };
  bool WindowOpen(const Transfer& t) const {
    return t.offset < t.total && t.offset - t.acked < window_chunks_ * chunk_bytes_;
  }
  void GoBack(Transfer& t, uint64_t offset, int64_t now_ms, const char* why);
  std::string dir_;
  size_t chunk_bytes_;
  size_t window_chunks_;
  int64_t stall_ms_;
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
  // The kSnapshotChunkAck for `chunk` after Take (with its result): the next
  // offset expected from its sender, or a reject.
  raft::Message AckFor(const raft::Message& chunk, bool rejected) const;
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
  // The image just installed: its chunks' acks say it is all here.
  uint64_t installed_index_ = 0;
  uint64_t installed_term_ = 0;
  uint64_t installed_bytes_ = 0;
  Sha256 digest_;
  SnapshotTransferStats stats_;
};

}  // namespace gpool::replication
