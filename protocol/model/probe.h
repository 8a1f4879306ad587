// Slow-node probe results (`gpool probe`), as the replicated log keeps them
// (ProbeResultCmd) and ReportProbe carries them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/enum_names.h"

namespace gpool {

// What a probe measures: "network" or "gpu" on the wire.
enum class ProbeKind : uint8_t { kNetwork, kGpu };
template <>
struct EnumNames<ProbeKind> {
  static constexpr std::array<std::string_view, 2> kNames = {"network", "gpu"};
};

// One node's result of a probe run by `gpool probe` (network: TCP to its
// ring neighbour; gpu: host-device copy bandwidth), and whether the run's
// outlier rule (below median - k x MAD) flagged it.
struct ProbeResult {
  std::string node;
  // Integers on the wire (the protocol has no floats): KiB/s and microseconds.
  uint64_t bandwidth_kib_s = 0;  // the node's measured bandwidth
  uint64_t latency_us = 0;       // network: median round trip; 0 for gpu
  bool slow = false;
  std::string message;         // how it compares, for people ("312 MiB/s, median 2,950, MAD 40")
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("bandwidth_kib_s", bandwidth_kib_s);
    v.Optional("latency_us", latency_us);
    v.Optional("slow", slow);
    v.Optional("message", message);
  }
  bool operator==(const ProbeResult&) const = default;
};

}  // namespace gpool
