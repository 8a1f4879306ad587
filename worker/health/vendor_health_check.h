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
// The tool runs on a thread of its own (HealthCheck's contract: Run never
// blocks the agent's loop, and a tool may take seconds, bounded by
// timeout_ms). Each Run takes the answer of the tool run started by an
// earlier Run, if it has finished, and starts the next one: what Run reports
// is the last finished tool run's findings, at most one interval old (every
// 30 s by default).
//
// Thread-safety: one thread (the agent's loop); the runner is called on the
// check's own thread, one call at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
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
  // Waits up to `timeout` for the tool run in flight (tests); true when none
  // is left running.
  bool WaitForTool(std::chrono::milliseconds timeout);

 private:
  std::vector<HealthFinding> Evaluate(const Result<std::string>& output);

  VendorHealthOptions options_;
  VendorToolRunner runner_;
  std::string name_;
  std::string last_error_;  // logged once per change
  std::future<Result<std::string>> in_flight_;
  std::vector<HealthFinding> last_;  // of the last finished tool run
};

}  // namespace gpool::worker
