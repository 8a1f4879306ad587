// PeerProbe: does a replica's peer address answer, as a ZeroMQ endpoint?
//
// Asked before a replica is added, so that `gpool admin replica add` with a
// wrong or dead address fails with a typed error and changes nothing,
// instead of adding a member that never answers. It opens a TCP connection
// and waits for the ZMTP greeting signature (0xFF, eight bytes, 0x7F),
// which every libzmq socket sends as soon as a connection is accepted,
// before any security handshake; then it closes. Non-blocking: Poll() is
// called once per loop turn until it returns a verdict, so the leader's
// loop (heartbeats) never waits on it.
//
// Thread-safety: none. Owns one socket descriptor until decided.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/base/status.h"

namespace gpool::replication {

class PeerProbe {
 public:
  // Starts probing `endpoint` ("tcp://HOST:PORT"); other transports (ipc,
  // inproc) are not probed and pass at once.
  PeerProbe(std::string endpoint, int64_t now_ms, int64_t timeout_ms);
  ~PeerProbe();
  PeerProbe(PeerProbe&& other) noexcept;
  PeerProbe& operator=(PeerProbe&& other) noexcept;
  PeerProbe(const PeerProbe&) = delete;
  PeerProbe& operator=(const PeerProbe&) = delete;

  // nullopt while undecided; then Ok (a ZeroMQ peer answered),
  // InvalidArgument when `endpoint` is not one to connect to, or Unavailable
  // naming the address and why (refused, no greeting, timed out), and the
  // same verdict on every later call.
  std::optional<Status> Poll(int64_t now_ms);
  const std::string& endpoint() const { return endpoint_; }

 private:
  void Decide(Status verdict);

  std::string endpoint_;
  int64_t deadline_ms_;
  int fd_ = -1;
  std::string greeting_;
  std::optional<Status> verdict_;
};

}  // namespace gpool::replication
