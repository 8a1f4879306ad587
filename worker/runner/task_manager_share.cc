// TaskManager's part in holding GPU shares (share_enforcement.h): the
// interposer's files for each interposed attempt, and the bypass catch.
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "protocol/base/text.h"
#include "worker/log.h"
#include "worker/runner/cuda_shared_files.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {

Status TaskManager::PrepareInterposer(const TaskId& id, const Task& task, TaskEnvOptions& env) {
  const ShareEnforcementOptions& share = options_.share;
  if (!InterposedShare(task.bind, share, options_.cuda_intercept_lib)) return Status::Ok();
  const std::string dir = TaskCudaDir(options_.log_dir, id);
  // A share that starts without its limits would take memory its
  // neighbours were promised: no start rather than an unenforced one.
  if (Status made = PrepareCudaDir(dir, share.interposer); !made.ok()) {
    return Status::IoError("cannot prepare the GPU share's CUDA interposer: " + made.message());
  }
  env.cuda_lib_dir = dir;
  env.cuda_real_driver = share.real_driver;
  env.cuda_ledger = TaskCudaLedgerPath(share.ledger_dir, id);
  env.cuda_activity_dir = share.activity_dir;
  // Made here, fresh, so no other task can have planted it; Start gives it
  // to the task's uid with the task's other files (task_isolation.h).
  if (Status ledger = CreateTaskLedger(env.cuda_ledger, geteuid(), getegid()); !ledger.ok()) {
    return Status::IoError("cannot prepare the GPU share's ledger: " + ledger.message());
  }
  log_->info("gpu share interposed task={} dir={} ledger={} real_driver={}", id.ToString(), Q(dir),
             Q(env.cuda_ledger), Q(share.real_driver.empty() ? "unset" : share.real_driver));
  return Status::Ok();
}

void TaskManager::ReleaseShareFiles(const TaskId& id, const Task& task) {
  if (!IsGpuShare(task.bind)) return;
  std::error_code ec;
  // HAMi-core's accounting file is the task's own and dies with it.
  std::filesystem::remove(TaskShareCachePath(options_.log_dir, id), ec);
  // Whatever the flags now (a restarted worker may have others): an
  // attempt's directory and ledger never outlive it.
  const std::string error =
      RemoveShareFiles(TaskCudaDir(options_.log_dir, id), TaskCudaLedgerPath(options_.share.ledger_dir, id));
  if (!error.empty()) log_->warn("gpu share files not removed task={} error={}", id.ToString(), Q(error));
}

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
