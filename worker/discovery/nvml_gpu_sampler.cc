#include "worker/discovery/nvml_gpu_sampler.h"

namespace gpool::worker {

namespace {
// A bound on what a misbehaving driver can make us loop over.
constexpr unsigned int kMaxGpus = 1024;
}  // namespace

Result<std::unique_ptr<NvmlGpuSampler>> NvmlGpuSampler::Open(const std::string& library) {
  auto lib = NvmlLibrary::Open(library);
  if (!lib.ok()) return lib.status();
  return std::unique_ptr<NvmlGpuSampler>(new NvmlGpuSampler(std::move(lib).value()));
}

NvmlGpuSampler::NvmlGpuSampler(std::unique_ptr<NvmlLibrary> lib) : lib_(std::move(lib)) {
  utilization_ = lib_->Symbol<nvml::GetUtilizationFn>("nvmlDeviceGetUtilizationRates");
  memory_ = lib_->Symbol<nvml::GetMemoryFn>("nvmlDeviceGetMemoryInfo");
}

std::vector<GpuSample> NvmlGpuSampler::Sample() {
  std::vector<GpuSample> samples;
  unsigned int count = 0;
  if (lib_->get_count()(&count) != nvml::kSuccess) return samples;
  count = std::min(count, kMaxGpus);
  for (unsigned int i = 0; i < count; ++i) {
    GpuSample sample;
    sample.index = i;
    nvml::Device device = nullptr;
    if (lib_->get_handle()(i, &device) == nvml::kSuccess) {
      nvml::Utilization rates{};
      nvml::Memory memory{};
      const bool busy_known = utilization_ != nullptr && utilization_(device, &rates) == nvml::kSuccess;
      const bool memory_known = memory_ != nullptr && memory_(device, &memory) == nvml::kSuccess;
      sample.known = busy_known && memory_known;
      if (sample.known) {
        sample.utilization_pct = std::min(rates.gpu, 100u);
        sample.memory_used_bytes = memory.used;
        sample.memory_total_bytes = memory.total;
      }
    }
    samples.push_back(sample);
  }
  return samples;
}

}  // namespace gpool::worker
