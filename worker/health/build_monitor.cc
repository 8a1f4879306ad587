#include "worker/health/build_monitor.h"

#include <algorithm>
#include <map>

#include "worker/label_overlay.h"
#include "worker/log.h"
#include "worker/discovery/nvml_library.h"
#include "worker/health/gpu_checks.h"
#include "worker/health/gpu_repair.h"
#include "worker/health/nic_check.h"
#include "worker/health/service_check.h"
#include "worker/health/vendor_health_check.h"
#include "worker/vendor/vendor_profile.h"

namespace gpool::worker {
namespace {

// The GPU repair, after the GPU checks whose conditions it reads; only for
// GPUs NVML watches, and on a --spec node only with a reset command given
// (its GPUs are not the host's: nvidia-smi must never reset those).
void AddGpuRepair(HealthMonitor& monitor, const WorkerFlags& flags, const std::vector<uint32_t>& watched,
                  std::function<bool(uint32_t)> gpu_held, const RepairLabelQuery& labelled_off,
                  const std::shared_ptr<spdlog::logger>& logger) {
  if (!flags.health.gpu_reset || !gpu_held || watched.empty()) return;
  if (!flags.spec_path.empty() && flags.health.gpu_reset_command.empty()) return;
  GpuRepairOptions options;
  options.off = [labelled_off] { return labelled_off(kGpuResetLabel); };
  options.gpu_indices = watched;
  options.interval_ms = flags.health.gpu_interval_ms;
  options.reset_command = GpuResetCommand(flags.health.gpu_reset_command);
  HealthMonitor* owner = &monitor;  // owns the repair: outlives every call
  options.conditions = [owner] { return owner->conditions(); };
  options.rounds = [owner] { return owner->rounds(); };
  options.gpu_held = std::move(gpu_held);
  options.logger = logger;
  monitor.Add(std::make_unique<GpuRepair>(std::move(options)));
}

// The NVIDIA GPUs NVML watches (empty: none).
std::vector<uint32_t> AddGpuChecks(HealthMonitor& monitor, const WorkerFlags& flags, const NodeSpec& node,
                                   const std::shared_ptr<spdlog::logger>& logger) {
  std::vector<uint32_t> nvidia;
  for (const auto& gpu : node.gpus) {
    if (gpu.vendor.empty() || gpu.vendor == "nvidia") nvidia.push_back(gpu.index);
  }
  if (nvidia.empty()) return {};
  // A simulated node's GPUs are not the host's, unless a library was named.
  if (!flags.spec_path.empty() && !flags.nvml_library_given) return {};
  auto nvml = NvmlLibrary::Open(flags.nvml_library);
  if (!nvml.ok()) {
    logger->warn("GPU health is not watched: NVML unavailable library={} error={}", Q(flags.nvml_library),
                 Q(nvml.status().ToString()));
    return {};
  }
  // A simulated node may list more GPUs than the named library has: those
  // past its count are not watched (rather than all reported lost at once).
  unsigned count = 0;
  if (!flags.spec_path.empty() && (*nvml)->get_count()(&count) == nvml::kSuccess && count < nvidia.size()) {
    logger->warn("GPU health watches only the first GPUs of the spec: the NVML library has fewer library={} "
                 "spec_gpus={} nvml_gpus={}",
                 Q(flags.nvml_library), nvidia.size(), count);
    nvidia.resize(count);
  }
  GpuCheckOptions options;
  options.gpu_indices = nvidia;
  options.xid_hold_ms = flags.health.xid_hold_ms;
  options.max_temp_c = flags.health.gpu_max_temp_c;
  options.xid_interval_ms = flags.health.xid_interval_ms;
  options.state_interval_ms = flags.health.gpu_interval_ms;
  for (auto& check : MakeGpuChecks(std::shared_ptr<NvmlLibrary>(std::move(nvml).value()), options, logger)) {
    monitor.Add(std::move(check));
  }
  return nvidia;
}

// Non-NVIDIA families found by their tools are watched through the same
// tools; a simulated node's devices are not the host's.
void AddVendorChecks(HealthMonitor& monitor, const WorkerFlags& flags, const NodeSpec& node,
                     const std::shared_ptr<spdlog::logger>& logger) {
  if (!flags.spec_path.empty()) return;
  std::map<NodeVendor, std::vector<uint32_t>> families;
  for (const auto& gpu : node.gpus) {
    if (VendorOf(gpu) != NodeVendor::kNvidia) families[VendorOf(gpu)].push_back(gpu.index);
  }
  for (auto& [family, indices] : families) {
    if (ProfileOf(family).tool.empty()) continue;
    std::sort(indices.begin(), indices.end());
    logger->info("vendor health check on vendor={} devices={}", ProfileOf(family).name, indices.size());
    monitor.Add(std::make_unique<VendorHealthCheck>(
        VendorHealthOptions{.vendor = family, .gpu_indices = indices, .logger = logger}));
  }
}

}  // namespace

std::vector<std::string> GpuResetCommand(const std::string& flag) {
  std::vector<std::string> argv;
  for (size_t at = 0; at < flag.size();) {
    const size_t end = std::min(flag.find(' ', at), flag.size());
    if (end > at) argv.push_back(flag.substr(at, end - at));
    at = end + 1;
  }
  return argv.empty() ? GpuRepairOptions{}.reset_command : argv;
}

std::unique_ptr<HealthMonitor> BuildHealthMonitor(const WorkerFlags& flags, const NodeSpec& node, const Clock* clock,
                                                  std::function<int64_t()> coordinator_silent_ms,
                                                  std::shared_ptr<spdlog::logger> logger,
                                                  std::function<bool(uint32_t)> gpu_held,
                                                  RepairLabelQuery labelled_off) {
  if (!flags.health.enabled) return nullptr;
  if (!labelled_off) {
    labelled_off = [spec = std::make_shared<const LabelOverlay>(node.labels)](std::string_view label) {
      return spec->Off(label);
    };
  }
  auto monitor = std::make_unique<HealthMonitor>(clock, logger);
  const std::vector<uint32_t> watched = AddGpuChecks(*monitor, flags, node, logger);
  AddVendorChecks(*monitor, flags, node, logger);
  AddGpuRepair(*monitor, flags, watched, std::move(gpu_held), labelled_off, logger);
  monitor->Add(std::make_unique<NicCheck>(
      NicCheckOptions{.sysfs_root = flags.health.sysfs_root, .interval_ms = flags.health.nic_interval_ms}));
  ServiceCheckOptions services;
  services.interval_ms = flags.health.service_interval_ms;
  services.sysfs_root = flags.health.sysfs_root;
  services.peermem = PeermemModeFromString(flags.health.peermem).value_or(PeermemMode::kAuto);
  services.peermem_reload = flags.health.peermem_reload;
  services.fabricmanager_restart = flags.health.fabricmanager_restart;
  services.fabricmanager_restart_off = [labelled_off] { return labelled_off(kFabricManagerRestartLabel); };
  services.has_nvidia_gpus = std::any_of(node.gpus.begin(), node.gpus.end(), [](const GpuInfo& g) {
    return g.vendor.empty() || g.vendor == "nvidia";
  });
  // A simulated node's GPUs are not the host's: no host services are required for them.
  if (!flags.spec_path.empty()) {
    services.nvswitch = NvswitchMode::kNo;
    services.peermem = PeermemMode::kOff;
  }
  services.data_dir = flags.data_dir;
  services.disk_min_free_mib = static_cast<int64_t>(flags.health.disk_min_free_mib);
  services.coordinator_silent_ms = std::move(coordinator_silent_ms);
  services.clock = clock;
  services.logger = logger;
  monitor->Add(std::make_unique<ServiceCheck>(std::move(services)));
  return monitor;
}

}  // namespace gpool::worker
