// GpuRepair: the node's self-repair of a GPU (HBox; issue 50). A GPU that
// the GPU state check (gpu_checks.h) finds with uncorrectable ECC errors or
// a row remap pending is taken out of service, reset once no task holds it,
// checked, and returned:
//
//   watching   nothing to repair
//   draining   a trigger is raised and a task still holds the GPU: the
//              condition gpu-reset (fatal) is raised so the coordinator
//              fences the GPU (no new tasks; its health policy), and the
//              reset waits for the tasks to end
//   resetting  no task holds it: the reset command runs (default
//              `nvidia-smi --gpu-reset -i <index>`, the documented form of
//              `nvidia-smi -r`: NVML exports no reset of its own), in a
//              child polled on later runs and killed at its timeout
//   verifying  the reset succeeded: the GPU stays fenced until a whole
//              round of the node's checks has run after it
//   returned   that round found no trigger on the GPU: gpu-reset clears
//              (the coordinator records the clear and lifts its fence by
//              its clear-rounds rule), and the GPU is watched again
//   failed     the command failed, timed out, or the trigger is still
//              there after the reset: gpu-reset stays raised (fatal) with
//              the reason, and no second reset is tried; it clears when the
//              trigger does (an operator's repair)
//
// Each step is logged (key=value) and the condition's raise and clear are
// the cluster's events (health-raised, health-cleared). A worker with
// --health-gpu-reset off is not built one (build_monitor.cc). While the node
// is labelled repair.gpool.io/gpu-reset=off (in its spec, or by an operator:
// `gpool node label`, read at each run through `off`), nothing new starts:
// a GPU draining for a reset goes back to watching and its gpu-reset
// clears (the trigger itself still fences it, for an operator); a reset
// already running finishes and is verified.
//
// It is a HealthCheck that owns the kind gpu-reset, run by the monitor after
// the GPU checks; it reads their conditions through `conditions` and never
// touches NVML itself.
//
// Thread-safety: one thread (the agent's loop).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "protocol/base/clock.h"
#include "protocol/base/status.h"
#include "protocol/health.h"
#include "worker/health/health_check.h"
#include "worker/health/service_check.h"

namespace gpool::worker {

inline constexpr char kGpuResetLabel[] = "repair.gpool.io/gpu-reset";

struct GpuRepairOptions {
  std::vector<uint32_t> gpu_indices;  // the node's GPUs it may reset
  int64_t interval_ms = 2000;
  // The reset; "{index}" in an argument becomes the GPU's node index.
  std::vector<std::string> reset_command = {"nvidia-smi", "--gpu-reset", "-i", "{index}"};
  int64_t reset_timeout_ms = 120'000;
  // Runs the command to completion instead of a child (tests). OK: reset.
  std::function<Status(const std::vector<std::string>& argv)> reset_run;
  // The node's conditions as the monitor has them, and its completed rounds
  // (HealthMonitor::conditions, rounds).
  std::function<std::vector<HealthCondition>()> conditions;
  std::function<uint64_t()> rounds;
  // Whether a task holds GPU `index` (running, or about to start).
  std::function<bool(uint32_t index)> gpu_held;
  // Whether the node's labels turn the repair off now; nullptr: never.
  std::function<bool()> off;
  const Clock* clock = nullptr;  // nullptr: the system clock
  std::shared_ptr<spdlog::logger> logger;
};

class GpuRepair final : public HealthCheck {
 public:
  enum class State { kWatching, kDraining, kResetting, kVerifying, kFailed };

  explicit GpuRepair(GpuRepairOptions options);

  std::string_view name() const override { return "gpu-repair"; }
  int64_t interval_ms() const override { return options_.interval_ms; }
  std::vector<HealthKind> kinds() const override { return {HealthKind::kGpuReset}; }
  std::vector<HealthFinding> Run(int64_t wall_ms) override;

  State state(uint32_t index) const;
  uint64_t resets_started() const { return resets_started_; }
  uint64_t returned() const { return returned_; }

 private:
  struct Gpu {
    State state = State::kWatching;
    std::string trigger;  // the condition kind that started it
    std::string failure;  // kFailed: why
    uint64_t done_round = 0;
    std::unique_ptr<ChildCommand> child;
  };
  // The trigger on gpu/<index> now ("" when none).
  std::string TriggerOf(const std::vector<HealthCondition>& conditions, uint32_t index) const;
  void Step(uint32_t index, Gpu& gpu, const std::vector<HealthCondition>& conditions);
  void StartReset(uint32_t index, Gpu& gpu);
  void Finish(uint32_t index, Gpu& gpu, const Status& outcome);
  HealthFinding FindingOf(uint32_t index, const Gpu& gpu) const;

  GpuRepairOptions options_;
  const Clock* clock_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<uint32_t, Gpu> gpus_;
  uint64_t resets_started_ = 0;
  uint64_t returned_ = 0;
  bool off_ = false;  // as the last run read it (its changes are logged)
};

}  // namespace gpool::worker
