// VendorHealthCheck: the health of a non-NVIDIA accelerator family, from its
// management tool (issue 50), at a slow interval. Each run executes the
// family's tool (vendor/vendor_profile.h; the runner from discovery/
// vendor_probe.h) and parses it (discovery/vendor_smi.h):
//   a device discovery saw that the tool no longer lists -> gpu-lost, fatal
//     (device gpu/<node index>);
//   a device the tool reports unhealthy (npu-smi Health "Critical"; only
//     tools whose row says tool_reports_health) -> gpu-lost, fatal, the
//     message naming the tool's state. The protocol has no vendor-neutral
//     "device unhealthy" kind; gpu-lost (the device cannot run work) is the
//     closest, and the message says what the tool said.
// A tool that cannot run, overruns or prints what cannot be read: nothing is
// reported (the check cannot look; HealthCheck's contract), and the reason
// is logged once per change.
//
// Running the tool blocks the agent's loop for as long as it takes, bounded
// by timeout_ms; the tools answer in well under a second, so the default is
// every 30 s with a 5 s bound.
//
// Thread-safety: one thread (the agent's loop).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "worker/discovery/vendor_probe.h"
#include "worker/health/health_check.h"
#include "worker/vendor/vendor_profile.h"

namespace gpool::worker {

struct VendorHealthOptions {
  NodeVendor vendor = NodeVendor::kAscend;
  // The node GPU index of each family ordinal discovery saw (ordinal i is
  // gpu_indices[i]).
  std::vector<uint32_t> gpu_indices;
  VendorToolRunner runner;  // nullptr: RunVendorTool with timeout_ms
  int64_t interval_ms = 30'000;
  int64_t timeout_ms = 5'000;
  std::shared_ptr<spdlog::logger> logger;  // nullptr: spdlog's default
};

class VendorHealthCheck : public HealthCheck {
 public:
  explicit VendorHealthCheck(VendorHealthOptions options);
  std::string_view name() const override { return name_; }
  int64_t interval_ms() const override { return options_.interval_ms; }
  std::vector<HealthKind> kinds() const override { return {HealthKind::kGpuLost}; }
  std::vector<HealthFinding> Run(int64_t wall_ms) override;

 private:
  VendorHealthOptions options_;
  VendorToolRunner runner_;
  std::string name_;
  std::string last_error_;  // logged once per change
};

}  // namespace gpool::worker
