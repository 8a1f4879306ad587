#include "control/scale_driver.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "control/state/scale_decision.h"

namespace gpool::control {

std::optional<uint32_t> ScaleDriver::GroupUtilisation(const state::JobRecord& job, uint32_t group) const {
  uint64_t sum = 0;
  uint32_t measured = 0;
  for (const auto& task : job.tasks) {
    if (task.group != group || task.state != TaskState::kRunning || task.stop_requested) continue;
    const WorkerConnection* worker = workers_.Find(task.node);
    if (worker == nullptr) continue;
    for (uint32_t index : task.gpu_indices) {
      auto sample = std::find_if(worker->gpus.begin(), worker->gpus.end(),
                                 [index](const GpuUtilization& g) { return g.index == index; });
      if (sample == worker->gpus.end()) continue;
      sum += sample->utilization_pct;
      ++measured;
    }
  }
  if (measured == 0) return std::nullopt;
  return static_cast<uint32_t>(sum / measured);
}

std::vector<state::ScaleJobCmd> ScaleDriver::Evaluate(int64_t now_wall_ms) const {
  std::vector<state::ScaleJobCmd> changes;
  const auto& pending_per_queue = state_.queue_jobs();
  // Jobs with scale rules only: not a walk of every retained job every few
  // seconds on the leader's loop (issue 49).
  for (const uint64_t id : state_.scale_jobs()) {
    const state::JobRecord* found = state_.FindJob(JobId(id));
    if (found == nullptr) continue;
    const state::JobRecord& job = *found;
    if (IsTerminal(job.state) || job.cancel_requested) continue;
    for (uint32_t g = 0; g < job.spec.tasks.size(); ++g) {
      const TaskGroupSpec& group = job.spec.tasks[g];
      if (!group.scale.Enabled()) continue;
      state::ScaleSignals signals;
      signals.min = group.MinReplicas();
      signals.max = group.replicas;
      signals.current = job.ReplicaTarget(g);
      signals.now_ms = now_wall_ms;
      signals.last_scaled_ms = job.scaled_ms();
      const bool self_waits = job.state == JobState::kPending;
      signals.queue_depth = [&, own = job.spec.queue, self_waits](const std::string& queue) -> uint64_t {
        auto it = pending_per_queue.find(queue);
        const uint64_t pending = it == pending_per_queue.end() ? 0 : it->second[0];
        // The job does not count toward its own queue's depth.
        return queue == own && self_waits && pending > 0 ? pending - 1 : pending;
      };
      signals.gpu_util_pct = GroupUtilisation(job, g);
      const state::ScaleDecision decision = state::DecideScale(group.scale, signals, job.spec.queue);
      if (decision.target == signals.current) continue;
      changes.push_back(state::ScaleJobCmd{id, g, decision.target, decision.trigger, decision.message});
    }
  }
  return changes;
}

void ScaleDriver::Tick(int64_t now_ms) {
  // One round at a time: a decision not yet applied would be decided again.
  if (in_flight_ > 0 || now_ms < next_check_ms_) return;
  next_check_ms_ = now_ms + options_.check_every_ms;
  std::vector<state::ScaleJobCmd> changes = Evaluate(clock_->WallMs());
  if (changes.size() > options_.max_changes_per_check) changes.resize(options_.max_changes_per_check);
  if (!changes.empty()) {
    // While a replica runs an older state version the proposals would all be
    // refused: said once, then held until the upgrade is finished.
    Status admissible = proposer_.Admissible(changes.front());
    if (!admissible.ok()) {
      if (!held_) spdlog::warn("scaling held reason=\"{}\"", admissible.ToString());
      held_ = true;
      return;
    }
    if (held_) spdlog::info("scaling resumed changes={}", changes.size());
    held_ = false;
  }
  for (auto& cmd : changes) {
    spdlog::info("scale job={} group={} replicas={} trigger={} signal=\"{}\"", cmd.job, cmd.group, cmd.replicas,
                 cmd.trigger, cmd.message);
    ++in_flight_;
    proposer_.Propose(std::move(cmd), [this, generation = generation_](const state::ApplyResult& result) {
      if (generation != generation_) return;
      --in_flight_;
      // A job that ended meanwhile refuses the change; that is not an error.
      if (!result.status.ok()) spdlog::info("scale not applied reason=\"{}\"", result.status.ToString());
    });
  }
}

void ScaleDriver::Reset() {
  ++generation_;
  in_flight_ = 0;
  held_ = false;
  next_check_ms_ = 0;
}

}  // namespace gpool::control
