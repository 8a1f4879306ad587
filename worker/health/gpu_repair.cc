#include "worker/health/gpu_repair.h"

#include <algorithm>

#include "worker/log.h"

namespace gpool::worker {
namespace {

// The conditions a reset repairs: the volatile ECC count and the pending
// remap both clear with a reset (the remap is applied by it).
bool RepairTrigger(const std::string& kind) {
  return kind == ToString(HealthKind::kEccUncorrectable) || kind == ToString(HealthKind::kRowRemapPending);
}

std::vector<std::string> RepairArgv(const std::vector<std::string>& command, uint32_t index) {
  std::vector<std::string> argv = command;
  for (std::string& arg : argv) {
    for (size_t at = arg.find("{index}"); at != std::string::npos; at = arg.find("{index}", at)) {
      arg.replace(at, 7, std::to_string(index));
    }
  }
  return argv;
}

std::string RepairCommandText(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace

GpuRepair::GpuRepair(GpuRepairOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &SystemClock::Get()),
      log_(OrDefault(options_.logger)) {
  for (uint32_t index : options_.gpu_indices) gpus_[index];
}

GpuRepair::State GpuRepair::state(uint32_t index) const {
  auto it = gpus_.find(index);
  return it == gpus_.end() ? State::kWatching : it->second.state;
}

std::string GpuRepair::TriggerOf(const std::vector<HealthCondition>& conditions, uint32_t index) const {
  const std::string device = "gpu/" + std::to_string(index);
  for (const HealthCondition& c : conditions) {
    if (c.device == device && RepairTrigger(c.kind)) return c.kind;
  }
  return {};
}

std::vector<HealthFinding> GpuRepair::Run(int64_t /*wall_ms*/) {
  const std::vector<HealthCondition> conditions = options_.conditions ? options_.conditions()
                                                                      : std::vector<HealthCondition>{};
  const bool off = options_.off && options_.off();
  if (off != off_) {
    off_ = off;
    log_->info("gpu self-repair {} by node label label={}", off ? "off" : "on again", kGpuResetLabel);
  }
  std::vector<HealthFinding> findings;
  for (auto& [index, gpu] : gpus_) {
    if (off_ && gpu.state == State::kDraining) {
      log_->warn("gpu repair called off by node label gpu={} trigger={}: left to an operator", index, gpu.trigger);
      gpu = Gpu{};
    }
    if (off_ && gpu.state == State::kWatching) continue;  // nothing new starts
    Step(index, gpu, conditions);
    if (gpu.state != State::kWatching) findings.push_back(FindingOf(index, gpu));
  }
  return findings;
}

void GpuRepair::Step(uint32_t index, Gpu& gpu, const std::vector<HealthCondition>& conditions) {
  const std::string trigger = TriggerOf(conditions, index);
  switch (gpu.state) {
    case State::kWatching:
      if (trigger.empty()) return;
      gpu.trigger = trigger;
      gpu.state = State::kDraining;
      log_->warn("gpu repair draining gpu={} trigger={}", index, trigger);
      [[fallthrough]];
    case State::kDraining:
      if (options_.gpu_held && options_.gpu_held(index)) return;
      StartReset(index, gpu);
      return;
    case State::kResetting:
      if (gpu.child != nullptr) {
        if (std::optional<Status> outcome = gpu.child->Poll(clock_->MonoMs()); outcome.has_value()) {
          gpu.child.reset();
          Finish(index, gpu, *outcome);
        }
      }
      return;
    case State::kVerifying: {
      // A whole round must have run after the reset: the round in progress
      // when it ended may have checked the GPU before it.
      const uint64_t rounds = options_.rounds ? options_.rounds() : 0;
      if (rounds < gpu.done_round + 2) return;
      if (!trigger.empty()) {
        gpu.state = State::kFailed;
        gpu.failure = "the reset did not clear " + trigger;
        log_->error("gpu repair failed gpu={} trigger={} error={}", index, gpu.trigger, Q(gpu.failure));
        return;
      }
      ++returned_;
      log_->info("gpu repair returned gpu={} trigger={}", index, gpu.trigger);
      gpu = Gpu{};
      return;
    }
    case State::kFailed:
      // No second reset: an operator repairs it; once the trigger is gone
      // (or cleared by hand), the GPU is watched again.
      if (trigger.empty()) gpu = Gpu{};
      return;
  }
}

void GpuRepair::StartReset(uint32_t index, Gpu& gpu) {
  const std::vector<std::string> argv = RepairArgv(options_.reset_command, index);
  gpu.state = State::kResetting;
  ++resets_started_;
  log_->warn("gpu repair resetting gpu={} trigger={} command={}", index, gpu.trigger, Q(RepairCommandText(argv)));
  if (options_.reset_run) {
    Finish(index, gpu, options_.reset_run(argv));
    return;
  }
  auto child = ChildCommand::Start(argv, clock_->MonoMs(), options_.reset_timeout_ms);
  if (!child.ok()) {
    Finish(index, gpu, child.status());
    return;
  }
  gpu.child = std::move(child).value();
}

void GpuRepair::Finish(uint32_t index, Gpu& gpu, const Status& outcome) {
  if (!outcome.ok()) {
    gpu.state = State::kFailed;
    gpu.failure = "the reset failed: " + outcome.ToString();
    log_->error("gpu repair failed gpu={} trigger={} error={}", index, gpu.trigger, Q(outcome.ToString()));
    return;
  }
  gpu.state = State::kVerifying;
  gpu.done_round = options_.rounds ? options_.rounds() : 0;
  log_->info("gpu repair reset done gpu={} trigger={} verifying_after_round={}", index, gpu.trigger,
             gpu.done_round + 1);
}

HealthFinding GpuRepair::FindingOf(uint32_t index, const Gpu& gpu) const {
  HealthFinding finding;
  finding.kind = HealthKind::kGpuReset;
  finding.device = "gpu/" + std::to_string(index);
  finding.severity = HealthSeverity::kFatal;
  switch (gpu.state) {
    case State::kDraining:
      finding.message = gpu.trigger + ": draining for a GPU reset (waiting for its tasks to end)";
      break;
    case State::kResetting:
      finding.message = gpu.trigger + ": resetting the GPU";
      break;
    case State::kVerifying:
      finding.message = gpu.trigger + ": GPU reset; checking it before it is returned";
      break;
    default:
      finding.message = gpu.trigger + ": GPU reset failed (" + gpu.failure + "); left out of service";
      break;
  }
  return finding;
}

}  // namespace gpool::worker
