#include "worker/discovery/nvml_usage_sampler.h"

#include <algorithm>
#include <vector>

#include "worker/log.h"

namespace gpool::worker {
namespace {

constexpr unsigned long long kMiB = 1024ULL * 1024;
// A process list that outgrows its buffer this many times in a row is
// changing faster than we can read it; this sample gives up.
constexpr int kMaxAttempts = 4;
// Far above what one GPU runs (NVML's own tools assume a few hundred); a
// bound on what a misbehaving driver can make us allocate.
constexpr unsigned int kMaxProcessesPerGpu = 16'384;

// Fills `infos` with the device's processes: first with no buffer, which
// NVML answers with SUCCESS (none) or INSUFFICIENT_SIZE and the count, then
// with a buffer of that size, again while the list keeps growing.
template <typename Info, typename Fn>
nvml::Return QueryProcesses(Fn fn, nvml::Device device, std::vector<Info>* infos) {
  unsigned int capacity = 0;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    infos->assign(capacity, Info{});
    unsigned int count = capacity;
    const nvml::Return rc = fn(device, &count, capacity == 0 ? nullptr : infos->data());
    if (rc == nvml::kSuccess) {
      infos->resize(std::min(count, capacity));
      return rc;
    }
    if (rc != nvml::kErrorInsufficientSize) return rc;
    // NVML says how many it needs; insist on growth so a driver that
    // repeats the same number cannot loop us.
    capacity = std::min(std::max(count, capacity + 1), kMaxProcessesPerGpu);
  }
  return nvml::kErrorInsufficientSize;
}

}  // namespace

Result<std::unique_ptr<NvmlUsageSampler>> NvmlUsageSampler::Open(NvmlUsageSamplerOptions options) {
  auto lib = NvmlLibrary::Open(options.library);
  if (!lib.ok()) return lib.status();
  return std::unique_ptr<NvmlUsageSampler>(new NvmlUsageSampler(std::move(lib.value()), OrDefault(options.logger)));
}

NvmlUsageSampler::NvmlUsageSampler(std::unique_ptr<NvmlLibrary> lib, std::shared_ptr<spdlog::logger> log)
    : lib_(std::move(lib)), log_(std::move(log)) {
  for (const char* name : {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"}) {
    get_v2_ = lib_->Symbol<nvml::GetProcessesV2Fn>(name);
    if (get_v2_ != nullptr) {
      entry_point_ = name;
      break;
    }
  }
  if (get_v2_ == nullptr) {
    get_v1_ = lib_->Symbol<nvml::GetProcessesV1Fn>("nvmlDeviceGetComputeRunningProcesses");
    if (get_v1_ != nullptr) entry_point_ = "nvmlDeviceGetComputeRunningProcesses";
  }
  if (entry_point_.empty()) {
    log_->info("gpu usage not reported: the NVML library has no per-process query library={}", Q(lib_->path()));
  } else {
    log_->debug("gpu usage sampler ready library={} entry_point={}", Q(lib_->path()), entry_point_);
  }
}

Status NvmlUsageSampler::SampleDevice(unsigned int index, std::map<int64_t, unsigned long long>* bytes) {
  nvml::Device device = nullptr;
  nvml::Return rc = lib_->get_handle()(index, &device);
  if (rc != nvml::kSuccess) {
    return Status::Unavailable("nvmlDeviceGetHandleByIndex(" + std::to_string(index) + ") failed: " +
                               lib_->Describe(rc));
  }
  size_t withheld = 0;
  auto add = [&](const auto& infos) {
    for (const auto& info : infos) {
      if (info.usedGpuMemory == nvml::kValueNotAvailable) {
        ++withheld;
        continue;
      }
      (*bytes)[static_cast<int64_t>(info.pid)] += info.usedGpuMemory;
    }
  };
  if (get_v2_ != nullptr) {
    std::vector<nvml::ProcessInfoV2> infos;
    rc = QueryProcesses(get_v2_, device, &infos);
    if (rc == nvml::kSuccess) add(infos);
  } else {
    std::vector<nvml::ProcessInfoV1> infos;
    rc = QueryProcesses(get_v1_, device, &infos);
    if (rc == nvml::kSuccess) add(infos);
  }
  if (rc != nvml::kSuccess) {
    return Status::Unavailable(entry_point_ + " on GPU " + std::to_string(index) + " failed: " + lib_->Describe(rc));
  }
  if (withheld > 0 && !withheld_logged_) {
    withheld_logged_ = true;
    log_->info("gpu memory of some processes is withheld by NVML and not counted gpu={} processes={}", index,
               withheld);
  }
  return Status::Ok();
}

void NvmlUsageSampler::OnFailure(const Status& status) {
  if (!failing_) {
    log_->info("gpu usage sample failed; heartbeats carry no usage until it works again error={}",
               Q(status.ToString()));
  } else {
    log_->debug("gpu usage sample failed error={}", Q(status.ToString()));
  }
  failing_ = true;
}

std::map<int64_t, uint64_t> NvmlUsageSampler::Sample() {
  if (entry_point_.empty()) return {};
  unsigned int count = 0;
  const nvml::Return rc = lib_->get_count()(&count);
  if (rc != nvml::kSuccess) {
    OnFailure(Status::Unavailable("nvmlDeviceGetCount failed: " + lib_->Describe(rc)));
    return {};
  }
  std::map<int64_t, unsigned long long> bytes;
  for (unsigned int i = 0; i < std::min(count, 1024u); ++i) {
    Status status = SampleDevice(i, &bytes);
    if (!status.ok()) {
      OnFailure(status);
      return {};
    }
  }
  if (failing_) log_->info("gpu usage sampling works again processes={}", bytes.size());
  failing_ = false;
  std::map<int64_t, uint64_t> mib;
  for (const auto& [pid, used] : bytes) mib[pid] = used / kMiB + (used % kMiB != 0 ? 1 : 0);
  return mib;
}

}  // namespace gpool::worker
