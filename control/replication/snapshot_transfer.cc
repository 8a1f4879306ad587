#include "control/replication/snapshot_transfer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "control/replication/replica_directory.h"
#include "protocol/base/write_all.h"

namespace gpool::replication {

namespace snapshot_transfer_detail {

constexpr std::string_view kPartName = "snapshot-receiving.part";

Status WriteAllTo(int fd, std::string_view bytes, const std::string& path) {
  if (!WriteAll(fd, bytes)) return Status::IoError("writing received snapshot " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

Result<std::string> ReadChunkAt(int fd, uint64_t offset, size_t length, const std::string& path) {
  std::string out(length, '\0');
  size_t done = 0;
  while (done < length) {
    const ssize_t n = pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status::IoError("reading snapshot image " + path + ": " +
                             (n < 0 ? std::string(std::strerror(errno)) : "shorter than its reference says"));
    }
    done += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace snapshot_transfer_detail

Status SnapshotSender::Start(const raft::Message& snapshot, const ImageFileRef& ref, int64_t now_ms) {
  auto running = transfers_.find(snapshot.to);
  if (running != transfers_.end()) {
    // The core asking again while the transfer is under way: the window and
    // the stall rule (Pump) decide what is resent, not the core's timer.
    if (running->second.header.snapshot.index == snapshot.snapshot.index &&
        running->second.header.term == snapshot.term) {
      return Status::Ok();
    }
    close(running->second.fd);
    transfers_.erase(running);
  }
  const std::string path = (std::filesystem::path(dir_) / ref.name).string();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("opening snapshot image " + path + " to send: " + std::strerror(errno));
  Transfer transfer;
  transfer.header = snapshot;
  transfer.header.type = raft::MessageType::kSnapshotChunk;
  transfer.fd = fd;
  transfer.total = ref.bytes;
  transfer.progress_ms = now_ms;
  transfers_.emplace(snapshot.to, std::move(transfer));
  ++stats_.transfers_started;
  spdlog::info("snapshot transfer started to={} index={} term={} bytes={} chunk_bytes={} window_chunks={}",
               snapshot.to, snapshot.snapshot.index, snapshot.snapshot.term, ref.bytes, chunk_bytes_, window_chunks_);
  return Status::Ok();
}

void SnapshotSender::GoBack(Transfer& t, uint64_t offset, int64_t now_ms, const char* why) {
  t.offset = offset;
  t.acked = offset;
  ++t.attempt;
  t.progress_ms = now_ms;
  ++stats_.resends;
  spdlog::info("snapshot transfer resending to={} index={} from_offset={} attempt={} why={}", t.header.to,
               t.header.snapshot.index, offset, t.attempt, why);
}

void SnapshotSender::Pump(const SendFn& send, int64_t now_ms, const HeardFn& heard_ms_ago) {
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    Transfer& t = it->second;
    // Chunks outstanding and no progress: resend only to a follower heard
    // from since (alive, so something was lost); a silent one could not take
    // them, and queueing more for it is what this bound is for.
    const int64_t quiet_ms = now_ms - t.progress_ms;
    if (t.offset > t.acked && quiet_ms >= stall_ms_) {
      const int64_t heard = heard_ms_ago ? heard_ms_ago(t.header.to) : -1;
      if (heard >= 0 && heard < quiet_ms) GoBack(t, t.acked, now_ms, "stalled");
    }
    bool failed = false;
    for (size_t i = 0; i < kChunksPerTurn && WindowOpen(t); ++i) {
      const size_t length = static_cast<size_t>(std::min<uint64_t>(chunk_bytes_, t.total - t.offset));
      auto bytes = snapshot_transfer_detail::ReadChunkAt(t.fd, t.offset, length, dir_ + "/" + std::to_string(
                                                                                       t.header.snapshot.index));
      if (!bytes.ok()) {
        spdlog::warn("snapshot transfer failed to={} index={} error=\"{}\"", t.header.to, t.header.snapshot.index,
                     bytes.status().ToString());
        failed = true;
        break;
      }
      raft::Message chunk = t.header;
      chunk.index = t.offset;
      chunk.log_term = t.attempt;
      chunk.context = std::move(bytes).value();
      if (!send(t.header.to, raft::EncodeMessage(chunk))) {
        ++stats_.refused;  // the queue is full: this offset goes again next turn
        break;
      }
      t.offset += length;
      ++stats_.chunks;
      stats_.chunk_bytes += length;
      stats_.largest_chunk = std::max<uint64_t>(stats_.largest_chunk, length);
    }
    if (failed) {
      close(t.fd);
      it = transfers_.erase(it);
    } else {
      ++it;
    }
  }
}

void SnapshotSender::Acked(const raft::Message& ack, int64_t now_ms) {
  auto it = transfers_.find(ack.from);
  if (it == transfers_.end()) return;
  Transfer& t = it->second;
  if (ack.snapshot.index != t.header.snapshot.index || ack.term != t.header.term) return;
  ++stats_.acks;
  if (ack.reject) {
    spdlog::info("snapshot transfer given up by the follower to={} index={} acked={}", t.header.to,
                 t.header.snapshot.index, t.acked);
    close(t.fd);
    transfers_.erase(it);
    return;
  }
  if (ack.log_term != t.attempt) return;  // answers chunks sent before the last go-back
  if (ack.index > t.acked && ack.index <= t.offset) {
    t.acked = ack.index;
    t.progress_ms = now_ms;
    if (t.acked >= t.total) {
      ++stats_.transfers_finished;
      spdlog::info("snapshot transfer acknowledged to={} index={} bytes={} resends={}", t.header.to,
                   t.header.snapshot.index, t.total, stats_.resends);
      close(t.fd);
      transfers_.erase(it);
    }
    return;
  }
  // At or below what was acknowledged: a gap (a chunk lost) or a follower
  // that restarted and expects 0. Beyond what was sent: not an answer to
  // this leader's chunks; start again.
  GoBack(t, ack.index <= t.acked ? ack.index : 0, now_ms, ack.index <= t.acked ? "gap" : "unexpected offset");
}

bool SnapshotSender::ready() const {
  for (const auto& [to, t] : transfers_) {
    if (WindowOpen(t)) return true;
  }
  return false;
}

uint64_t SnapshotSender::outstanding_bytes() const {
  uint64_t bytes = 0;
  for (const auto& [to, t] : transfers_) bytes += t.offset - t.acked;
  return bytes;
}

void SnapshotSender::Clear() {
  for (auto& [to, t] : transfers_) close(t.fd);
  transfers_.clear();
}

SnapshotReceiver::SnapshotReceiver(std::string dir) : dir_(std::move(dir)) {
  // What an earlier process was receiving when it stopped is of no use.
  (void)unlink(part_path().c_str());
}

std::string SnapshotReceiver::part_path() const {
  return (std::filesystem::path(dir_) / snapshot_transfer_detail::kPartName).string();
}

void SnapshotReceiver::Abandon() {
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  (void)unlink(part_path().c_str());
}

Result<std::optional<raft::Message>> SnapshotReceiver::Take(const raft::Message& chunk) {
  auto image = DecodeSnapshotImage(chunk.snapshot.data);
  if (!image.ok() || image->file.empty()) {
    Abandon();
    return Status::Malformed("snapshot chunk from replica " + std::to_string(chunk.from) +
                             " carries no image file reference" +
                             (image.ok() ? std::string() : ": " + image.status().message()));
  }
  const ImageFileRef& ref = image->file;
  const std::string path = part_path();
  if (chunk.index == 0) {
    Abandon();
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0) return Status::IoError("creating " + path + " for a received snapshot: " + std::strerror(errno));
    from_ = chunk.from;
    index_ = chunk.snapshot.index;
    term_ = chunk.term;
    received_ = 0;
    digest_ = Sha256();
    ++stats_.transfers_started;
  } else if (fd_ < 0 || chunk.from != from_ || chunk.snapshot.index != index_ || chunk.term != term_ ||
             chunk.index != received_) {
    // A gap (a dropped frame) or a transfer that was replaced: the leader
    // starts again from 0 when its core asks.
    ++stats_.chunks_dropped;
    return std::optional<raft::Message>();
  }
  if (received_ + chunk.context.size() > ref.bytes) {
    Abandon();
    return Status::Malformed("snapshot chunk from replica " + std::to_string(chunk.from) + " goes past the " +
                             std::to_string(ref.bytes) + " bytes of its image");
  }
  if (Status wrote = snapshot_transfer_detail::WriteAllTo(fd_, chunk.context, path); !wrote.ok()) {
    Abandon();
    return wrote;
  }
  digest_.Update(chunk.context);
  received_ += chunk.context.size();
  ++stats_.chunks;
  stats_.chunk_bytes += chunk.context.size();
  stats_.largest_chunk = std::max<uint64_t>(stats_.largest_chunk, chunk.context.size());
  if (received_ < ref.bytes) return std::optional<raft::Message>();

  const std::string digest = digest_.HexDigest();
  if (digest != ref.sha256) {
    Abandon();
    return Status::Malformed("snapshot " + std::to_string(index_) + " received from replica " +
                             std::to_string(from_) + " does not match its sha256 (got " + digest + ", expected " +
                             ref.sha256 + ")");
  }
  if (fdatasync(fd_) != 0) {
    const std::string why = std::strerror(errno);
    Abandon();
    return Status::IoError("syncing received snapshot " + path + ": " + why);
  }
  close(fd_);
  fd_ = -1;
  const std::string name = ImageFileName(index_);
  const std::string target = (std::filesystem::path(dir_) / name).string();
  if (rename(path.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    (void)unlink(path.c_str());
    return Status::IoError("renaming received snapshot " + path + " to " + target + ": " + why);
  }
  GPOOL_RETURN_IF_ERROR(SyncDirectory(dir_));
  ++stats_.transfers_finished;
  installed_index_ = index_;
  installed_term_ = term_;
  installed_bytes_ = received_;
  spdlog::info("snapshot received from={} index={} bytes={} file={}", from_, index_, received_, target);

  raft::Message install;
  install.type = raft::MessageType::kSnapshot;
  install.from = chunk.from;
  install.to = chunk.to;
  install.term = chunk.term;
  install.snapshot = chunk.snapshot;
  install.snapshot.data =
      EncodeSnapshotImage(SnapshotImage{image->replicas, "", ImageFileRef{name, ref.bytes, ref.sha256}});
  return std::optional<raft::Message>(std::move(install));
}

raft::Message SnapshotReceiver::AckFor(const raft::Message& chunk, bool rejected) const {
  raft::Message ack;
  ack.type = raft::MessageType::kSnapshotChunkAck;
  ack.from = chunk.to;
  ack.to = chunk.from;
  ack.term = chunk.term;
  ack.log_term = chunk.log_term;
  ack.snapshot.index = chunk.snapshot.index;
  ack.snapshot.term = chunk.snapshot.term;
  ack.reject = rejected;
  if (rejected) return ack;
  if (fd_ >= 0 && chunk.from == from_ && chunk.snapshot.index == index_ && chunk.term == term_) {
    ack.index = received_;
  } else if (chunk.snapshot.index == installed_index_ && chunk.term == installed_term_) {
    ack.index = installed_bytes_;  // the last chunk completed it
  }
  return ack;
}

}  // namespace gpool::replication
