// What the coordinator's health policy decided about a node, a GPU or its
// own fencing circuit breaker, as the replicated log keeps it
// (HealthFenceCmd). The actions travel by the names they always had, so
// older log entries replay.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "protocol/base/enum_names.h"

namespace gpool {

//   kCordon | kDrain | kUncordon       the node (drain also stops its tasks)
//   kGpuUnhealthy | kGpuHealthy        one GPU of the node
//   kBreakerOpen | kBreakerClose       the fencing circuit breaker (no node)
//   kSuppressed                        a fence the policy held back: an event only
enum class HealthFenceAction : uint8_t {
  kCordon,
  kDrain,
  kUncordon,
  kGpuUnhealthy,
  kGpuHealthy,
  kBreakerOpen,
  kBreakerClose,
  kSuppressed,
};
template <>
struct EnumNames<HealthFenceAction> {
  static constexpr std::array<std::string_view, 8> kNames = {
      "cordon", "drain", "uncordon", "gpu-unhealthy", "gpu-healthy", "breaker-open", "breaker-close", "suppressed"};
};

}  // namespace gpool
