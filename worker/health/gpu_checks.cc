#include "worker/health/gpu_checks.h"

#include <algorithm>
#include <map>

#include "protocol/base/text.h"
#include "protocol/health.h"
#include "worker/log.h"

namespace gpool::worker {
namespace {

std::string GpuDevice(uint32_t index) { return "gpu/" + std::to_string(index); }

class XidCheck final : public HealthCheck {
 public:
  XidCheck(std::shared_ptr<NvmlLibrary> nvml, GpuCheckOptions options, std::shared_ptr<spdlog::logger> log)
      : nvml_(std::move(nvml)), options_(std::move(options)), log_(OrDefault(std::move(log))) {
    auto create = nvml_->Symbol<nvml::EventSetCreateFn>("nvmlEventSetCreate");
    auto reg = nvml_->Symbol<nvml::RegisterEventsFn>("nvmlDeviceRegisterEvents");
    wait_ = nvml_->Symbol<nvml::EventSetWaitFn>("nvmlEventSetWait_v2");
    free_ = nvml_->Symbol<nvml::EventSetFreeFn>("nvmlEventSetFree");
    if (create == nullptr || reg == nullptr || wait_ == nullptr || create(&set_) != nvml::kSuccess) {
      log_->warn("XID events unavailable from this driver; XIDs are not watched library={}", nvml_->path());
      set_ = nullptr;
      return;
    }
    for (uint32_t i = 0; i < options_.gpu_indices.size(); ++i) {
      nvml::Device device = nullptr;
      if (nvml_->get_handle()(i, &device) != nvml::kSuccess) continue;  // the state check reports it
      const nvml::Return rc = reg(device, nvml::kEventTypeXidCriticalError, set_);
      if (rc != nvml::kSuccess) {
        log_->warn("XID events not registered gpu={} error={}", options_.gpu_indices[i], Q(nvml_->Describe(rc)));
        continue;
      }
      index_of_[device] = options_.gpu_indices[i];
    }
  }
  ~XidCheck() override {
    if (set_ != nullptr && free_ != nullptr) free_(set_);
  }

  std::string_view name() const override { return "gpu-xid"; }
  int64_t interval_ms() const override { return options_.xid_interval_ms; }
  std::vector<HealthKind> kinds() const override { return {HealthKind::kXid}; }

  std::vector<HealthFinding> Run(int64_t wall_ms) override {
    std::map<uint32_t, uint64_t> fresh;
    if (set_ != nullptr) {
      // Bounded: a storm of events is read over several runs.
      for (int n = 0; n < 256; ++n) {
        nvml::EventData data{};
        if (wait_(set_, &data, 0) != nvml::kSuccess) break;
        if (data.eventType != nvml::kEventTypeXidCriticalError) continue;
        auto it = index_of_.find(data.device);
        if (it == index_of_.end()) continue;
        const auto code = static_cast<int32_t>(data.eventData);
        Active& a = active_[it->second];
        // A fatal code is not hidden by a later application one.
        if (a.code == 0 || !Application(code) || Application(a.code)) a.code = code;
        a.last_ms = wall_ms;
        ++fresh[it->second];
        log_->warn("XID event gpu={} xid={}", it->second, code);
      }
    }
    std::vector<HealthFinding> out;
    for (auto it = active_.begin(); it != active_.end();) {
      if (wall_ms - it->second.last_ms >= options_.xid_hold_ms) {
        it = active_.erase(it);
        continue;
      }
      HealthFinding f;
      f.kind = HealthKind::kXid;
      f.device = GpuDevice(it->first);
      f.severity = Application(it->second.code) ? HealthSeverity::kWarning : HealthSeverity::kFatal;
      f.xid = it->second.code;
      f.message = "Xid " + std::to_string(it->second.code);
      f.new_events = fresh.count(it->first) ? fresh[it->first] : 0;
      out.push_back(std::move(f));
      ++it;
    }
    return out;
  }

 private:
  struct Active {
    int32_t code = 0;
    int64_t last_ms = 0;
  };
  bool Application(int32_t code) const {
    return std::find(options_.application_xids.begin(), options_.application_xids.end(), code) !=
           options_.application_xids.end();
  }

  std::shared_ptr<NvmlLibrary> nvml_;
  GpuCheckOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  nvml::EventSet set_ = nullptr;
  nvml::EventSetWaitFn wait_ = nullptr;
  nvml::EventSetFreeFn free_ = nullptr;
  std::map<nvml::Device, uint32_t> index_of_;
  std::map<uint32_t, Active> active_;
};

class GpuStateCheck final : public HealthCheck {
 public:
  GpuStateCheck(std::shared_ptr<NvmlLibrary> nvml, GpuCheckOptions options, std::shared_ptr<spdlog::logger> log)
      : nvml_(std::move(nvml)), options_(std::move(options)), log_(OrDefault(std::move(log))) {
    ecc_ = nvml_->Symbol<nvml::GetTotalEccFn>("nvmlDeviceGetTotalEccErrors");
    retired_ = nvml_->Symbol<nvml::GetRetiredPendingFn>("nvmlDeviceGetRetiredPagesPendingStatus");
    remap_ = nvml_->Symbol<nvml::GetRemappedRowsFn>("nvmlDeviceGetRemappedRows");
    link_ = nvml_->Symbol<nvml::GetLinkStateFn>("nvmlDeviceGetNvLinkState");
    temp_ = nvml_->Symbol<nvml::GetTemperatureFn>("nvmlDeviceGetTemperature");
    baseline_.resize(options_.gpu_indices.size());
    for (uint32_t i = 0; i < options_.gpu_indices.size(); ++i) {
      nvml::Device device = nullptr;
      if (nvml_->get_handle()(i, &device) != nvml::kSuccess) continue;
      Baseline& b = baseline_[i];
      unsigned long long count = 0;
      if (ecc_ != nullptr && ecc_(device, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &count) == nvml::kSuccess) {
        b.ecc = count;
      }
      for (unsigned link = 0; link_ != nullptr && link < nvml::kMaxLinks; ++link) {
        int active = 0;
        if (link_(device, link, &active) == nvml::kSuccess && active == nvml::kFeatureEnabled) b.links.push_back(link);
      }
    }
  }

  std::string_view name() const override { return "gpu-state"; }
  int64_t interval_ms() const override { return options_.state_interval_ms; }
  std::vector<HealthKind> kinds() const override {
    return {HealthKind::kGpuLost,         HealthKind::kEccUncorrectable, HealthKind::kRetiredPagesPending,
            HealthKind::kRowRemapPending, HealthKind::kRowRemapFailure,  HealthKind::kNvlinkDown,
            HealthKind::kThermal};
  }

  std::vector<HealthFinding> Run(int64_t) override {
    std::vector<HealthFinding> out;
    unsigned int count = 0;
    const bool counted = nvml_->get_count()(&count) == nvml::kSuccess;
    for (uint32_t i = 0; i < options_.gpu_indices.size(); ++i) {
      const std::string device_name = GpuDevice(options_.gpu_indices[i]);
      auto add = [&](HealthKind kind, HealthSeverity severity, std::string message) {
        out.push_back(HealthFinding{kind, device_name, severity, std::move(message)});
      };
      if (counted && i >= count) {
        add(HealthKind::kGpuLost, HealthSeverity::kFatal,
            "the driver sees " + std::to_string(count) + " GPUs; this one is gone");
        continue;
      }
      nvml::Device device = nullptr;
      const nvml::Return handle = nvml_->get_handle()(i, &device);
      if (handle != nvml::kSuccess) {
        add(HealthKind::kGpuLost, HealthSeverity::kFatal, "no handle: " + nvml_->Describe(handle));
        continue;
      }
      bool lost = false;
      auto check = [&](nvml::Return rc) {
        lost |= rc == nvml::kErrorGpuIsLost;
        return rc == nvml::kSuccess;
      };
      unsigned long long ecc = 0;
      if (ecc_ != nullptr && check(ecc_(device, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &ecc)) &&
          ecc > baseline_[i].ecc) {
        add(HealthKind::kEccUncorrectable, HealthSeverity::kFatal,
            std::to_string(ecc - baseline_[i].ecc) + " volatile uncorrectable ECC errors since start");
      }
      int retired = 0;
      if (retired_ != nullptr && check(retired_(device, &retired)) && retired != 0) {
        add(HealthKind::kRetiredPagesPending, HealthSeverity::kDegraded, "retired pages pending a reset");
      }
      unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
      if (remap_ != nullptr && check(remap_(device, &corrected, &uncorrected, &pending, &failure))) {
        if (pending != 0) add(HealthKind::kRowRemapPending, HealthSeverity::kDegraded, "row remapping pending a reset");
        if (failure != 0) add(HealthKind::kRowRemapFailure, HealthSeverity::kFatal, "row remapping failed");
      }
      std::string down;
      for (unsigned link : baseline_[i].links) {
        int active = 0;
        if (check(link_(device, link, &active)) && active != nvml::kFeatureEnabled) {
          down += (down.empty() ? "" : ",") + std::to_string(link);
        }
      }
      if (!down.empty()) {
        add(HealthKind::kNvlinkDown, HealthSeverity::kDegraded, "NVLink " + down + " down (active at start)");
      }
      unsigned temp = 0;
      if (options_.max_temp_c > 0 && temp_ != nullptr && check(temp_(device, nvml::kTemperatureGpu, &temp)) &&
          temp >= options_.max_temp_c) {
        add(HealthKind::kThermal, HealthSeverity::kDegraded,
            std::to_string(temp) + " C, limit " + std::to_string(options_.max_temp_c) + " C");
      }
      if (lost) {
        std::erase_if(out, [&](const HealthFinding& f) { return f.device == device_name; });
        add(HealthKind::kGpuLost, HealthSeverity::kFatal, "GPU is lost (fallen off the bus)");
      }
    }
    return out;
  }

 private:
  struct Baseline {
    unsigned long long ecc = 0;
    std::vector<unsigned> links;
  };
  std::shared_ptr<NvmlLibrary> nvml_;
  GpuCheckOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  nvml::GetTotalEccFn ecc_ = nullptr;
  nvml::GetRetiredPendingFn retired_ = nullptr;
  nvml::GetRemappedRowsFn remap_ = nullptr;
  nvml::GetLinkStateFn link_ = nullptr;
  nvml::GetTemperatureFn temp_ = nullptr;
  std::vector<Baseline> baseline_;
};

}  // namespace

std::vector<std::unique_ptr<HealthCheck>> MakeGpuChecks(std::shared_ptr<NvmlLibrary> nvml, GpuCheckOptions options,
                                                        std::shared_ptr<spdlog::logger> logger) {
  std::vector<std::unique_ptr<HealthCheck>> checks;
  checks.push_back(std::make_unique<XidCheck>(nvml, options, logger));
  checks.push_back(std::make_unique<GpuStateCheck>(nvml, options, logger));
  return checks;
}

}  // namespace gpool::worker
