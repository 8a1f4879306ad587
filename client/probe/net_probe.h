// The network probe of gpool-probe: TCP bandwidth and latency to the next
// member of a ring, while serving the previous member's measurement.
//
// A ring of n tasks (one per node) is a list of HOST:PORT. Task i listens on
// ring[i]'s port (every interface), connects to ring[(i + 1) % n] (retrying
// while it is not up yet), measures that link as the sender, and meanwhile
// serves the one connection its predecessor opens. So every node's result is
// its own sending side: a node that sends slowly is the one flagged.
//
// The link protocol, every frame a 9-byte header (op byte, 64-bit big-endian
// value), the sender asking and the receiver answering:
//   'H' kMagic  -> 'h' kMagic                hello (a stray connection is dropped)
//   'P' seq     -> 'p' seq                   a ping: latency is the median round trip
//   'B' n, then n bytes -> 'b' n             a bulk transfer: bandwidth is n over the
//                                            time from the first byte to the ack
//   'Q' 0       (no answer; both close)      done
// The receiver reads into a fixed buffer (bounded reads; n itself is capped
// at kMaxBulkBytes) and every blocking call on either side waits at most
// until the deadline: nothing hangs past --timeout-ms.
//
// Thread-safety: the functions share nothing; RunNetworkProbe uses a thread
// of its own to serve while it measures.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::probe {

using Deadline = std::chrono::steady_clock::time_point;

// --- Framing (pure) --------------------------------------------------------------------

inline constexpr uint64_t kMagic = 0x4750524f42450001;  // "GPROBE", version 1
inline constexpr uint64_t kMaxBulkBytes = uint64_t{16} << 30;  // 16 GiB per transfer
inline constexpr size_t kFrameSize = 9;

enum class Op : uint8_t {
  kHello = 'H',
  kHelloAck = 'h',
  kPing = 'P',
  kPong = 'p',
  kBulk = 'B',
  kBulkAck = 'b',
  kQuit = 'Q',
};

struct Frame {
  Op op = Op::kQuit;
  uint64_t value = 0;
  bool operator==(const Frame&) const = default;
};

std::array<uint8_t, kFrameSize> EncodeFrame(const Frame& frame);
// Malformed for an op byte that is not one of Op.
Result<Frame> DecodeFrame(const std::array<uint8_t, kFrameSize>& bytes);

// --- One link, over a connected stream socket ------------------------------------------

struct LinkOptions {
  uint64_t bytes = uint64_t{64} << 20;  // per bulk transfer
  uint32_t rounds = 3;                  // bulk transfers; bandwidth is the best of them
  uint32_t pings = 100;                 // ping-pongs; latency is their median
};

struct LinkMeasurement {
  double bandwidth_mib_s = 0;
  double latency_us = 0;
};

// The sender's side: hello, pings, bulk rounds, quit. DeadlineExceeded when
// the deadline passes first; Unavailable when the peer closes; Malformed on
// an unexpected answer.
Result<LinkMeasurement> MeasureLink(int fd, const LinkOptions& options, Deadline deadline);

// The receiver's side: answers until 'Q' (OK) or the peer closes (Unavailable),
// bad hello or frame (Malformed), or the deadline (DeadlineExceeded).
Status ServeLink(int fd, Deadline deadline);

// --- The ring ------------------------------------------------------------------------

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const;
};

// "HOST:PORT,HOST:PORT,..." (IPv6 hosts in brackets: "[::1]:7000"); at least
// one entry, every port 1-65535. InvalidArgument naming the entry.
Result<std::vector<HostPort>> ParseRing(std::string_view text);

struct NetworkProbeOptions {
  size_t rank = 0;
  std::vector<HostPort> ring;
  LinkOptions link;
  int64_t timeout_ms = 60'000;  // everything, connecting included
};

struct NetworkProbeResult {
  LinkMeasurement measurement;
  std::string peer;          // ring[rank + 1]
  Status served;             // how serving the predecessor went (OK when it finished)
};

// Listens, measures the link to the next member, serves the previous one,
// and returns once both are done or the timeout passed. An error is about
// this node's own measurement; serving's outcome is in `served`. With
// `on_measured`, it is called with the measurement as soon as there is one
// (gpool-probe prints it then, before waiting for the predecessor).
Result<NetworkProbeResult> RunNetworkProbe(const NetworkProbeOptions& options,
                                           const std::function<void(const NetworkProbeResult&)>& on_measured = {});

}  // namespace gpool::probe
