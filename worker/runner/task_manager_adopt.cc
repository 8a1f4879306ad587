// TaskManager's adoption of the tasks a previous worker process left
// running (or ended) under its state directories: task_manager.h,
// "adopt_tasks". Apart from task_manager.cc to keep each file small.
#include <algorithm>
#include <filesystem>

#include "protocol/base/text.h"
#include "protocol/messages_worker.h"
#include "protocol/wire.h"
#include "worker/log.h"
#include "worker/runner/atomic_file.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_records.h"

namespace gpool::worker {

void TaskManager::AdoptLeftTasks() {
  std::vector<std::string> dirs;
  std::error_code ec;
  std::vector<std::string> roots = {state_root()};
  if (options_.log_dir != state_root()) roots.push_back(options_.log_dir);  // left by a worker without state_dir
  for (const std::string& root : roots) {
    for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
      if (entry.path().extension() == ".state" && entry.is_directory(ec)) dirs.push_back(entry.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& dir : dirs) AdoptTask(dir);
}

void TaskManager::AdoptTask(const std::string& state_dir) {
  auto bytes = ReadWholeFile(BindPath(state_dir));
  auto bind = bytes.ok() ? wire::UnpackFromString<BindTask>(*bytes) : Result<BindTask>(bytes.status());
  if (!bind.ok()) {
    // The bind is written before anything starts: without it nothing ran.
    log_->warn("task state without a readable bind removed dir={} error={}", Q(state_dir),
               Q(bind.status().ToString()));
    std::error_code ec;
    std::filesystem::remove_all(state_dir, ec);
    return;
  }
  const TaskId id = bind->task;
  if (tasks_.count(id) ||
      (state_dir != TaskStateDir(state_root(), id) && state_dir != TaskStateDir(options_.log_dir, id))) {
    log_->warn("task state ignored, it does not match its directory task={} dir={}", id.ToString(), Q(state_dir));
    return;
  }
  auto adopted = options_.launcher->Adopt(state_dir);
  if (!adopted.ok()) {
    log_->error("task left by a previous worker cannot be adopted task={} error={}", id.ToString(),
                Q(adopted.status().ToString()));
    return;
  }
  Task task;
  task.bind = std::move(bind).value();
  task.bound = true;
  task.phase = Phase::kRunning;
  task.pid = adopted->pid;
  task.setup.state_dir = state_dir;
  // Its time limit counts from its real start, across worker restarts; an
  // unknown start counts from now (the task gets more time, never less).
  const int64_t ran_ms = adopted->start_wall_ms > 0 ? options_.clock->WallMs() - adopted->start_wall_ms : 0;
  task.started_mono_ms = options_.clock->MonoMs() - std::max<int64_t>(ran_ms, 0);
  if (auto stop = ReadWholeFile(StopPath(state_dir)); stop.ok()) {
    task.preempted = true;
    task.stop_reason = *stop;
  }
  task.setup.mig_created = mig_step_->DynamicInstances(task.bind);
  Task& placed = tasks_.emplace(id, std::move(task)).first->second;
  if (adopted->running) {
    by_pid_[placed.pid] = id;
    log_->info("task adopted from a previous worker process, still running task={} pid={}", id.ToString(),
               placed.pid);
    // The previous process may have died before it told the coordinator
    // where the session's server listens: say it again (its file is still
    // there, or comes); a repeated "started" changes nothing there.
    if (!placed.bind.rgpu.owner_key.empty()) AwaitRgpuEndpoint(id, placed, adopted->start_wall_ms);
    return;
  }
  const bool acked = std::filesystem::exists(AckedPath(state_dir));
  log_->info("task of a previous worker process found ended task={} pid={} exit_code={} signal={} reason={} "
             "acknowledged={}",
             id.ToString(), placed.pid, adopted->exit.exit_code, adopted->exit.signal, Q(adopted->exit.reason), acked);
  Finish(id, placed, adopted->exit, acked);
}

}  // namespace gpool::worker
