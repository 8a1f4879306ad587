// TaskManager's part in holding GPU shares (share_enforcement.h) while
// tasks run: the bypass catch and the activity files' sweep. Each attempt's
// share files are a setup step's (setup/share_files_step.h).
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "protocol/base/text.h"
#include "protocol/messages_worker.h"
#include "worker/log.h"
#include "worker/runner/cuda_shared_files.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {

void TaskManager::EnforceShareMemory(const std::vector<TaskUsage>& usage) {
  std::map<TaskId, const BindTask*> shares;
  for (const auto& [pid, id] : by_pid_) {
    const Task& task = tasks_.at(id);
    // One being stopped already ends on its own schedule.
    if (IsGpuShare(task.bind) && !task.preempted) shares.emplace(id, &task.bind);
  }
  for (const ShareMemoryGuard::Overrun& over : share_guard_.Observe(shares, usage)) {
    const std::string why = !options_.cuda_intercept_lib.empty() ? "the CUDA intercept library was bypassed"
                            : !options_.share.interposer.empty() ? "the interposer was bypassed"
                                                                 : "no interposer holds shares on this node";
    const std::string reason = OverShareReason(over.used_mib, over.limit_mib, why);
    Task& task = tasks_.at(over.task);
    log_->warn("gpu share overrun, task stopped task={} pid={} used_mib={} share_mib={} tolerance_mib={} "
               "samples={} reason={}",
               over.task.ToString(), task.pid, over.used_mib, over.limit_mib,
               ShareMemoryToleranceMib(over.limit_mib, options_.share.memory_tolerance_mib),
               ShareMemoryGuard::kSamplesToStop, Q(reason));
    // No grace: every second it runs on, its neighbours run short.
    Terminate(over.task, task, 0, reason);
  }
}

void TaskManager::SweepCudaActivity() {
  // A live process rewrites its file every few ms while it launches, and
  // after a pause checks it was not swept (device_activity.h): ten minutes
  // without a write is a process that is gone.
  constexpr int64_t kSweepEveryMs = 60'000;
  constexpr int64_t kStaleAfterMs = 600'000;
  const ShareEnforcementOptions& share = options_.share;
  if (share.interposer.empty() || share.activity_dir.empty()) return;
  const int64_t now = options_.clock->MonoMs();
  if (now < next_activity_sweep_ms_) return;
  next_activity_sweep_ms_ = now + kSweepEveryMs;
  // Files' times are the host's, whatever clock drives this manager.
  const int64_t wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  SweepActivityDir(share.activity_dir, wall_ms, kStaleAfterMs);
}

}  // namespace gpool::worker
