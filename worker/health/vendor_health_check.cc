#include "worker/health/vendor_health_check.h"

#include <map>

#include "worker/discovery/vendor_smi.h"
#include "worker/log.h"

namespace gpool::worker {

VendorHealthCheck::VendorHealthCheck(VendorHealthOptions options)
    : options_(std::move(options)),
      runner_(VendorRunnerOf(VendorProbeOptions{.runner = options_.runner, .timeout_ms = options_.timeout_ms})),
      name_(std::string(ProfileOf(options_.vendor).name) + "-health") {
  options_.logger = OrDefault(options_.logger);
}

std::vector<HealthFinding> VendorHealthCheck::Run(int64_t /*wall_ms*/) {
  if (in_flight_.valid() && in_flight_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    last_ = Evaluate(in_flight_.get());
  }
  if (!in_flight_.valid()) {
    const VendorProfile& profile = ProfileOf(options_.vendor);
    std::vector<std::string> argv(profile.tool.begin(), profile.tool.end());
    if (argv.empty()) {
      last_ = Evaluate(Status::FailedPrecondition(std::string(profile.display) + "s have no management tool"));
    } else {
      in_flight_ = std::async(std::launch::async, [runner = runner_, argv = std::move(argv)] { return runner(argv); });
    }
  }
  return last_;
}

bool VendorHealthCheck::WaitForTool(std::chrono::milliseconds timeout) {
  return !in_flight_.valid() || in_flight_.wait_for(timeout) == std::future_status::ready;
}

std::vector<HealthFinding> VendorHealthCheck::Evaluate(const Result<std::string>& output) {
  const VendorProfile& profile = ProfileOf(options_.vendor);
  Result<std::vector<GpuInfo>> listed =
      output.ok() ? ParseVendorTool(options_.vendor, *output) : Result<std::vector<GpuInfo>>(output.status());
  // NotFound from the parse is "the tool lists no device": every device is gone.
  if (!listed.ok() && listed.status().code() != StatusCode::kNotFound) {
    const std::string error = listed.status().ToString();
    if (error != last_error_) {
      options_.logger->warn("vendor health check cannot look vendor={} error={}", profile.name, Q(error));
      last_error_ = error;
    }
    return {};
  }
  last_error_.clear();
  std::map<uint32_t, const GpuInfo*> by_ordinal;
  if (listed.ok()) {
    for (const GpuInfo& gpu : *listed) by_ordinal[gpu.index] = &gpu;
  }
  std::vector<HealthFinding> findings;
  for (size_t ordinal = 0; ordinal < options_.gpu_indices.size(); ++ordinal) {
    const std::string device = "gpu/" + std::to_string(options_.gpu_indices[ordinal]);
    auto it = by_ordinal.find(static_cast<uint32_t>(ordinal));
    if (it == by_ordinal.end()) {
      findings.push_back({.kind = HealthKind::kGpuLost,
                          .device = device,
                          .severity = HealthSeverity::kFatal,
                          .message = std::string(profile.display) + " " + std::to_string(ordinal) + " is no longer listed by " +
                                     std::string(profile.tool.front())});
    } else if (profile.tool_reports_health && !it->second->healthy) {
      findings.push_back({.kind = HealthKind::kGpuLost,
                          .device = device,
                          .severity = HealthSeverity::kFatal,
                          .message = std::string(profile.tool.front()) + " reports " + std::string(profile.display) +
                                     " " + std::to_string(ordinal) + " unhealthy"});
    }
  }
  return findings;
}

}  // namespace gpool::worker
