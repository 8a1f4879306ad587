#include "worker/rgpu/client/connection.h"

#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "worker/rgpu/client/key_file.h"

namespace gpool::rgpu {

void RgpuLog(const char* format, ...) {
  char line[1024];
  int n = std::snprintf(line, sizeof(line), "gpool-rgpu: pid=%d event=", static_cast<int>(getpid()));
  va_list args;
  va_start(args, format);
  const int m = std::vsnprintf(line + n, sizeof(line) - static_cast<std::size_t>(n) - 1, format, args);
  va_end(args);
  if (m < 0) return;
  n = std::min<int>(n + m, static_cast<int>(sizeof(line)) - 2);
  line[n++] = '\n';
  (void)!write(STDERR_FILENO, line, static_cast<std::size_t>(n));
}

namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

std::string CallFrame(Op op, std::uint64_t context, std::uint32_t data_frames, const Writer* args) {
  Writer w;
  w.U16(static_cast<std::uint16_t>(op));
  w.U64(context);
  w.U32(data_frames);
  std::string frame = std::move(w.mutable_bytes());
  if (args != nullptr) frame += args->bytes();
  return frame;
}

std::uint32_t ChunksOf(const std::vector<Span>& data) {
  std::size_t n = 0;
  for (const Span& s : data) n += (s.size + kChunkBytes - 1) / kChunkBytes;
  return static_cast<std::uint32_t>(n);
}

// Sends one frame; more=true for all but the last. The first frame may
// wait (HWM reached) until the deadline; later parts of a multipart message
// never block once its first part was taken.
bool SendFrame(void* socket, const void* data, std::size_t size, bool more, bool copy, Clock::time_point deadline) {
  zmq_msg_t msg;
  if (copy) {
    zmq_msg_init_size(&msg, size);
    if (size > 0) std::memcpy(zmq_msg_data(&msg), data, size);
  } else {
    // Zero copy: the caller's buffer outlives the call, and a dead
    // connection terminates the context (which drops the message) before
    // the call returns.
    zmq_msg_init_data(&msg, const_cast<void*>(data), size, nullptr, nullptr);
  }
  for (;;) {
    if (zmq_msg_send(&msg, socket, (more ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) >= 0) return true;
    if (zmq_errno() != EAGAIN) break;
    zmq_pollitem_t item{socket, 0, ZMQ_POLLOUT, 0};
    if (zmq_poll(&item, 1, MillisLeft(deadline)) <= 0) break;
  }
  zmq_msg_close(&msg);
  return false;
}

}  // namespace

Connection& Connection::Get() {
  // Never destroyed: calls may come from other threads during exit.
  static Connection* connection = new Connection();
  return *connection;
}

void Connection::MarkDead(const char* why) {
  if (!dead_) RgpuLog("session_unreachable reason=%s result=CUDA_ERROR_DEVICE_UNAVAILABLE", why);
  dead_ = true;
  DropQueue();
  if (socket_ != nullptr) {
    int linger = 0;
    zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_close(socket_);
    socket_ = nullptr;
  }
  // Terminating the context waits until libzmq let go of every message,
  // zero-copy frames pointing into a caller's buffer included.
  if (context_ != nullptr) zmq_ctx_term(context_);
  context_ = nullptr;
}

void Connection::DropQueue() {
  queued_frames_.clear();
  queued_calls_ = 0;
  queued_bytes_ = 0;
}

CUresult Connection::EnsureOpen() {
  if (dead_) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  if (opened_) return CUDA_SUCCESS;
  opened_ = true;
  const char* endpoint = std::getenv("GPOOL_RGPU_ENDPOINT");
  const char* server_key = std::getenv("GPOOL_RGPU_SERVER_KEY");
  const char* key_file = std::getenv("GPOOL_RGPU_KEY_FILE");
  if (const char* t = std::getenv("GPOOL_RGPU_CALL_TIMEOUT_MS"); t != nullptr && *t != '\0') {
    char* end = nullptr;
    const long v = std::strtol(t, &end, 10);
    if (*end != '\0' || v <= 0 || v > 86400000) {
      RgpuLog("bad_env name=GPOOL_RGPU_CALL_TIMEOUT_MS value=%s using=10000", t);
    } else {
      timeout_ms_ = static_cast<int>(v);
    }
  }
  if (endpoint == nullptr || *endpoint == '\0' || server_key == nullptr || std::strlen(server_key) != 40 ||
      key_file == nullptr) {
    RgpuLog("bad_env need=GPOOL_RGPU_ENDPOINT,GPOOL_RGPU_SERVER_KEY(40 Z85 chars),GPOOL_RGPU_KEY_FILE");
    MarkDead("bad_environment");
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
  }
  ClientKeys keys;
  std::string error;
  if (!ReadClientKeyFile(key_file, &keys, &error)) {
    RgpuLog("bad_key_file error=\"%s\"", error.c_str());
    MarkDead("bad_key_file");
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
  }
  context_ = zmq_ctx_new();
  socket_ = zmq_socket(context_, ZMQ_DEALER);
  const int linger = 0;
  const std::int64_t max_frame = static_cast<std::int64_t>(kMaxFrameBytes);
  zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof(linger));
  zmq_setsockopt(socket_, ZMQ_MAXMSGSIZE, &max_frame, sizeof(max_frame));
  // A session is Open once its server is launched, a moment before it
  // listens: retry a refused connect after 10 ms, not ZeroMQ's 100, which
  // was most of a fresh session's first-call latency.
  const int reconnect_ms = 10;
  zmq_setsockopt(socket_, ZMQ_RECONNECT_IVL, &reconnect_ms, sizeof(reconnect_ms));
  // Z85 keys: 40 characters plus the terminating NUL.
  if (zmq_setsockopt(socket_, ZMQ_CURVE_SERVERKEY, server_key, 41) != 0 ||
      zmq_setsockopt(socket_, ZMQ_CURVE_PUBLICKEY, keys.public_key.c_str(), 41) != 0 ||
      zmq_setsockopt(socket_, ZMQ_CURVE_SECRETKEY, keys.secret_key.c_str(), 41) != 0 ||
      zmq_connect(socket_, endpoint) != 0) {
    RgpuLog("connect_failed endpoint=%s error=\"%s\"", endpoint, zmq_strerror(zmq_errno()));
    MarkDead("connect_failed");
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
  }
  return CUDA_SUCCESS;
}

CUresult Connection::Enqueue(Op op, std::uint64_t context, const Writer& args, const std::vector<Span>& data) {
  std::lock_guard lock(mu_);
  if (const CUresult r = EnsureOpen(); r != CUDA_SUCCESS) return r;
  if (deferred_ != CUDA_SUCCESS) {
    const CUresult r = deferred_;
    deferred_ = CUDA_SUCCESS;
    return r;
  }
  queued_frames_.push_back(CallFrame(op, context, ChunksOf(data), &args));
  queued_bytes_ += queued_frames_.back().size();
  for (const Span& s : data) {
    for (std::size_t at = 0; at < s.size; at += kChunkBytes) {
      queued_frames_.emplace_back(static_cast<const char*>(s.data) + at, std::min(kChunkBytes, s.size - at));
      queued_bytes_ += queued_frames_.back().size();
    }
  }
  ++queued_calls_;
  if (queued_calls_ < kMaxQueuedCalls && queued_bytes_ < kMaxQueuedBytes) return CUDA_SUCCESS;
  // The queue is full: send it on its own; its error waits for the next call.
  Reply ignored;
  const CUresult r = RoundTrip(op, 0, nullptr, &ignored, {}, nullptr, 0);
  if (r == CUDA_ERROR_DEVICE_UNAVAILABLE) return r;
  deferred_ = r;
  return CUDA_SUCCESS;
}

CUresult Connection::Call(Op op, std::uint64_t context, const Writer& args, Reply* reply, const std::vector<Span>& data,
                          void* bulk_into, std::size_t bulk_capacity) {
  std::lock_guard lock(mu_);
  if (const CUresult r = EnsureOpen(); r != CUDA_SUCCESS) return r;
  // A queued call that failed in an earlier flush: this call answers its
  // error and does not run, as when the failure is in the same request.
  if (deferred_ != CUDA_SUCCESS) {
    const CUresult earlier = deferred_;
    deferred_ = CUDA_SUCCESS;
    return earlier;
  }
  return RoundTrip(op, context, &args, reply, data, bulk_into, bulk_capacity);
}

// With args == nullptr only the queue is sent (it must not be empty).
CUresult Connection::RoundTrip(Op op, std::uint64_t context, const Writer* args, Reply* reply,
                               const std::vector<Span>& data, void* bulk_into, std::size_t bulk_capacity) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  const std::uint64_t id = next_id_++;
  const std::size_t queued_calls = queued_calls_;
  Writer header;
  header.U8(kWireVersion);
  header.U8(kRequest);
  header.U64(id);
  header.U32(static_cast<std::uint32_t>(queued_calls + (args != nullptr ? 1 : 0)));
  const std::string call = args != nullptr ? CallFrame(op, context, ChunksOf(data), args) : std::string();
  bool sent = SendFrame(socket_, header.bytes().data(), header.bytes().size(), true, true, deadline);
  for (std::size_t i = 0; sent && i < queued_frames_.size(); ++i) {
    const bool last = args == nullptr && i + 1 == queued_frames_.size();
    sent = SendFrame(socket_, queued_frames_[i].data(), queued_frames_[i].size(), !last, true, deadline);
  }
  DropQueue();
  if (sent && args != nullptr) {
    std::uint32_t chunks_left = ChunksOf(data);
    sent = SendFrame(socket_, call.data(), call.size(), chunks_left > 0, true, deadline);
    for (const Span& s : data) {
      for (std::size_t at = 0; sent && at < s.size; at += kChunkBytes) {
        --chunks_left;
        sent = SendFrame(socket_, static_cast<const char*>(s.data) + at, std::min(kChunkBytes, s.size - at),
                         chunks_left > 0, false, deadline);
      }
    }
  }
  if (!sent) {
    MarkDead("send_timeout");
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
  }
  for (;;) {
    zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, MillisLeft(deadline)) <= 0) {
      MarkDead("reply_timeout");
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    // Frames: header, outputs, bulk...
    // A deque: a zmq_msg_t must not be moved by copying its bytes, which a
    // growing vector would do.
    std::deque<zmq_msg_t> frames;
    int more = 1;
    while (more) {
      frames.emplace_back();
      zmq_msg_init(&frames.back());
      if (zmq_msg_recv(&frames.back(), socket_, 0) < 0) {
        for (zmq_msg_t& m : frames) zmq_msg_close(&m);
        MarkDead("receive_failed");
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
      }
      more = zmq_msg_more(&frames.back());
    }
    Reader h(zmq_msg_data(&frames[0]), zmq_msg_size(&frames[0]));
    const std::uint8_t version = h.U8();
    const std::uint8_t kind = h.U8();
    const std::uint64_t reply_id = h.U64();
    const CUresult result = h.I32();
    const std::uint32_t index = h.U32();
    CUresult answer = result;
    const bool ours = h.ok() && version == kWireVersion && kind == kReply && reply_id == id && frames.size() >= 2;
    if (ours) {
      if (result != CUDA_SUCCESS && index < queued_calls) {
        answer = result;  // a batched call failed; this call did not run
      } else if (result == CUDA_SUCCESS) {
        reply->out.assign(static_cast<const char*>(zmq_msg_data(&frames[1])), zmq_msg_size(&frames[1]));
        std::size_t at = 0;
        for (std::size_t i = 2; i < frames.size(); ++i) {
          const std::size_t n = zmq_msg_size(&frames[i]);
          if (bulk_into == nullptr || n > bulk_capacity - at) {
            answer = CUDA_ERROR_INVALID_VALUE;  // more bytes than asked for: a confused server
            break;
          }
          std::memcpy(static_cast<char*>(bulk_into) + at, zmq_msg_data(&frames[i]), n);
          at += n;
        }
      }
    }
    for (zmq_msg_t& m : frames) zmq_msg_close(&m);
    if (ours) return answer;
    // A late reply to a request that was given up on: dropped.
  }
}

}  // namespace gpool::rgpu
