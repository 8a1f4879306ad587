// The client library's one connection to its session server: a DEALER
// socket with CURVE (the server's key from GPOOL_RGPU_SERVER_KEY, the
// client's pair from GPOOL_RGPU_KEY_FILE), opened on the first call to
// GPOOL_RGPU_ENDPOINT.
//
// Calls are requests (wire.h) with an id; a reply with another id (a late
// answer to a request that timed out) is dropped. Batched calls wait in a
// queue and travel in front of the next synchronous call, or alone when
// the queue reaches kMaxQueuedCalls calls or kMaxQueuedBytes bytes. A
// batched call's error is answered by the next call (which then does not
// run), once.
//
// Failure: no reply within GPOOL_RGPU_CALL_TIMEOUT_MS (default 10000), or a
// setup that failed (environment, key file) -> the connection is dead:
// the socket is closed and every call from then on answers
// CUDA_ERROR_DEVICE_UNAVAILABLE at once. Logged once.
//
// Thread-safety: every method locks; one request is in flight at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/rgpu/wire.h"

namespace gpool::rgpu {

// Bytes the caller keeps alive until the call returns (sent without a copy).
struct Span {
  const void* data;
  std::size_t size;
};

// What a synchronous call got back.
struct Reply {
  std::string out;  // the call's outputs (read with a Reader)
};

class Connection {
 public:
  static Connection& Get();

  // Sends the queued calls and this one; waits for the reply. `data`
  // travels as data frames of at most kChunkBytes each; bulk bytes of the
  // reply are written to `bulk_into` (at most `bulk_capacity`).
  CUresult Call(Op op, std::uint64_t context, const Writer& args, Reply* reply, const std::vector<Span>& data = {},
                void* bulk_into = nullptr, std::size_t bulk_capacity = 0);
  // Queues a batchable call; `data` is copied. Answers an earlier batched
  // error, or CUDA_ERROR_DEVICE_UNAVAILABLE once dead, else success.
  CUresult Enqueue(Op op, std::uint64_t context, const Writer& args, const std::vector<Span>& data = {});

 private:
  Connection() = default;
  CUresult EnsureOpen();  // with mu_ held
  CUresult RoundTrip(Op op, std::uint64_t context, const Writer* args, Reply* reply, const std::vector<Span>& data,
                     void* bulk_into, std::size_t bulk_capacity);
  void MarkDead(const char* why);
  void DropQueue();

  std::mutex mu_;
  bool opened_ = false;
  bool dead_ = false;
  void* context_ = nullptr;
  void* socket_ = nullptr;
  int timeout_ms_ = 10000;
  std::uint64_t next_id_ = 1;
  CUresult deferred_ = CUDA_SUCCESS;        // a batched call's error not yet reported
  std::vector<std::string> queued_frames_;  // call frames and their data frames, in order
  std::size_t queued_calls_ = 0;
  std::size_t queued_bytes_ = 0;
};

inline constexpr std::size_t kMaxQueuedCalls = 256;
inline constexpr std::size_t kMaxQueuedBytes = std::size_t{16} << 20;

// Logging from inside a foreign process: one write(2) line to stderr,
// "gpool-rgpu: event=... key=value".
void RgpuLog(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace gpool::rgpu
