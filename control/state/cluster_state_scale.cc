// ClusterState: ApplyScaleJob, a scale rule's committed decision
// (control/scale_driver.h). The target bounds what build_view offers the
// scheduler for the group; shrinking asks the highest-numbered running
// replicas to stop, and they come back as pending replicas (as an evicted
// task does), so a later growth starts them again. Only the job's own
// replicas stop: scaling never takes anything from another job.
#include "control/state/cluster_state.h"
#include "protocol/event.h"

namespace gpool::state {

ApplyResult ClusterState::ApplyScaleJob(int64_t now, const ScaleJobCmd& cmd) {
  ApplyResult result;
  JobRecord* job = MutableJob(cmd.job);
  if (job == nullptr) {
    result.status = Status::NotFound("job " + std::to_string(cmd.job) + " does not exist");
    return result;
  }
  if (IsTerminal(job->state) || job->cancel_requested) {
    result.status = Status::FailedPrecondition("job " + std::to_string(cmd.job) + " has ended");
    return result;
  }
  if (cmd.group >= job->spec.tasks.size() || !job->spec.tasks[cmd.group].scale.Enabled()) {
    result.status = Status::FailedPrecondition("job " + std::to_string(cmd.job) + " group " +
                                               std::to_string(cmd.group) + " has no scale rules");
    return result;
  }
  const TaskGroupSpec& group = job->spec.tasks[cmd.group];
  if (cmd.replicas < group.MinReplicas() || cmd.replicas > group.replicas) {
    result.status = Status::InvalidArgument("scale target " + std::to_string(cmd.replicas) + " is outside " +
                                            std::to_string(group.MinReplicas()) + ".." +
                                            std::to_string(group.replicas));
    return result;
  }
  const uint32_t was = job->ReplicaTarget(cmd.group);
  if (was == cmd.replicas) return result;  // a repeat (a new leader's first decision) changes nothing
  const size_t groups = job->spec.tasks.size();
  job->UpdateExtras([&](JobRecord::Extras& e) {
    if (e.scale_target.size() < groups) e.scale_target.resize(groups, 0);
    e.scale_target[cmd.group] = cmd.replicas;
    e.scaled_ms = now;
    // What `gpool job` shows as the last decision.
    if (e.scale_last.size() < groups) e.scale_last.resize(groups);
    e.scale_last[cmd.group] = ScaleChange{now, was, cmd.replicas, cmd.trigger, cmd.message.substr(0, 256)};
  });
  uint32_t active = 0;
  for (const auto& task : job->tasks) {
    if (task.group == cmd.group && HoldsResources(task.state) && !task.stop_requested) ++active;
  }
  for (auto it = job->tasks.rbegin(); it != job->tasks.rend() && active > cmd.replicas; ++it) {
    TaskRecord& task = *it;
    if (task.group != cmd.group || !HoldsResources(task.state) || task.stop_requested) continue;
    task.stop_requested = true;
    task.evicted = true;  // requeued as pending when it stops (RequeueIfEvicted), not failed
    task.stop_grace_ms = job->spec.grace_period_ms;
    task.set_message("scaled down (" + cmd.trigger + ")");
    TrackCommand(task);
    --active;
  }
  ClusterEvent event;
  event.job = cmd.job;
  event.reason = cmd.trigger;
  event.actor = "scale-rules";
  event.message = "group " + group.name + ": " + std::to_string(was) + " -> " + std::to_string(cmd.replicas) +
                  " replicas" + (cmd.message.empty() ? "" : " (" + cmd.message.substr(0, 256) + ")");
  event.dedupe_key = "job-scaled:" + std::to_string(cmd.job) + ":" + std::to_string(cmd.group) + ":" +
                     std::to_string(now);
  Emit(now, EventKind::kJobScaled, std::move(event));
  return result;
}

}  // namespace gpool::state
