// ScriptedCheck: a HealthCheck (health_check.h) that reports whatever its
// test put in the vector it watches. The fake beside the real checks, so the
// monitor's merging and the link's reporting are tested without NVML, sysfs
// or /proc. Tests only.
//
// Thread-safety: one thread; the watched vector must outlive the check.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/health.h"
#include "worker/health/health_check.h"

namespace gpool::worker::testing {

class ScriptedCheck final : public HealthCheck {
 public:
  ScriptedCheck(std::string name, int64_t interval_ms, std::vector<HealthKind> kinds,
                const std::vector<HealthFinding>* findings)
      : name_(std::move(name)), interval_ms_(interval_ms), kinds_(std::move(kinds)), findings_(findings) {}

  std::string_view name() const override { return name_; }
  int64_t interval_ms() const override { return interval_ms_; }
  std::vector<HealthKind> kinds() const override { return kinds_; }
  std::vector<HealthFinding> Run(int64_t) override {
    ++runs_;
    return *findings_;
  }
  int runs() const { return runs_; }

 private:
  std::string name_;
  int64_t interval_ms_;
  std::vector<HealthKind> kinds_;
  const std::vector<HealthFinding>* findings_;
  int runs_ = 0;
};

}  // namespace gpool::worker::testing
