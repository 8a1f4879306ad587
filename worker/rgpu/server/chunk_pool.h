// Buffers for the bulk chunks of device-to-host replies, reused.
//
// Why: a reply's chunks are freed by ZeroMQ's I/O thread once sent. With
// plain malloc, glibc handed a two-chunk (4 MiB) reply's memory back to the
// kernel at the free (the heap's top grew past its trim threshold), and the
// next copy page-faulted all of it in again: 4 MiB DtoH ran at 0.64-0.73 of
// raw ZeroMQ CURVE moving the same bytes, every run. Kept buffers stay
// mapped, whatever the allocator's heuristics.
//
// At most `keep` idle buffers are kept (kChunkBytes each); a copy needing
// more chunks gets fresh ones, freed again when sent beyond `keep`.
//
// Lifetime: the pool must outlive every message it made; its owner
// destroys its ZeroMQ context (which frees every queued message) first.
// Thread-safety: Take() on one thread at a time; chunks come back on
// ZeroMQ's I/O thread, so the idle list is locked.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <zmq.hpp>

namespace gpool::rgpu {

// The session server's pool size: 8 x 2 MiB, so that copies of up to
// 16 MiB reuse mapped memory; a server holds at most this much beyond what
// its largest reply needs.
inline constexpr std::size_t kKeptReplyChunks = 8;

class ChunkPool {
 public:
  explicit ChunkPool(std::size_t keep) : keep_(keep) {}
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // A message of `bytes` (at most kChunkBytes) whose buffer comes back here
  // when ZeroMQ is done with it. Above kChunkBytes: a plain message.
  zmq::message_t Take(std::size_t bytes);

  std::size_t idle() const;
  std::size_t keep() const { return keep_; }

 private:
  static void GiveBack(void* data, void* pool);

  const std::size_t keep_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<char[]>> idle_;
};

}  // namespace gpool::rgpu
