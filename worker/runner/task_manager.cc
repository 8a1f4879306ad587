#include "worker/runner/task_manager.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <utility>

#include "protocol/base/text.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/log.h"
#include "worker/runner/atomic_file.h"
#include "worker/runner/job_hosts.h"
#include "worker/runner/supervisor_state.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_records.h"

namespace gpool::worker {
namespace {

constexpr int64_t kExpireEveryMs = 10'000;
// MakeRoom never forgets an acknowledged record younger than this.
constexpr int64_t kMinFinishedRetentionMs = 60'000;

}  // namespace

std::string TaskManager::JoinIndices(const std::vector<uint32_t>& indices) {
  std::string out;
  for (uint32_t i : indices) {
    if (!out.empty()) out += ',';
    out += std::to_string(i);
  }
  return out.empty() ? "none" : out;
}

Result<std::unique_ptr<TaskManager>> TaskManager::Open(TaskManagerOptions options) {
  if (options.launcher == nullptr) return Status::InvalidArgument("TaskManager: launcher is required");
  if (options.clock == nullptr) return Status::InvalidArgument("TaskManager: clock is required");
  if (options.log_dir.empty()) return Status::InvalidArgument("TaskManager: log_dir is required");
  std::error_code ec;
  std::filesystem::create_directories(options.log_dir, ec);
  if (ec) return Status::IoError("cannot create task log directory " + options.log_dir + ": " + ec.message());
  if (!options.state_dir.empty()) {
    std::filesystem::create_directories(options.state_dir, ec);
    if (ec) return Status::IoError("cannot create task state directory " + options.state_dir + ": " + ec.message());
    // Tasks reach their own hosts files in it and list nothing (as log_dir).
    if (options.isolation.enabled && chmod(options.state_dir.c_str(), 0711) != 0) {
      return Status::IoError("cannot make " + options.state_dir + " 0711: " + std::strerror(errno));
    }
  }
  if (options.names_wait_ms < 0) return Status::InvalidArgument("TaskManager: names_wait_ms must be >= 0");
  auto manager = std::unique_ptr<TaskManager>(new TaskManager(std::move(options)));
  manager->resolver_ = manager->options_.resolver;
  if (manager->resolver_ == nullptr) {
    HostResolverOptions resolver;
    resolver.clock = manager->options_.clock;
    resolver.resolve = manager->options_.resolve ? manager->options_.resolve : ResolveHost;
    resolver.threads = manager->options_.resolve ? 0 : 2;
    manager->own_resolver_ = std::make_unique<HostResolver>(std::move(resolver));
    manager->resolver_ = manager->own_resolver_.get();
  }
  manager->BuildSetupChain();
  if (manager->options_.log_retention.Enabled()) {
    manager->log_janitor_ = std::make_unique<TaskLogJanitor>(
        manager->options_.log_dir, manager->options_.log_retention, manager->options_.clock, manager->log_);
  }
  if (manager->options_.adopt_tasks) manager->AdoptLeftTasks();
  return manager;
}

std::string TaskManager::StateDirOf(const TaskId& id, const Task& task) const {
  return task.setup.state_dir.empty() ? TaskStateDir(state_root(), id) : task.setup.state_dir;
}

TaskManager::TaskManager(TaskManagerOptions options)
    : options_(std::move(options)), log_(OrDefault(options_.logger)) {}

Status TaskManager::Bind(const BindTask& bind) {
  const TaskId& id = bind.task;
  if (auto it = tasks_.find(id); it != tasks_.end()) {
    log_->info("bind for a known task accepted, not started again task={} bound={}", id.ToString(),
               it->second.bound);
    return Status::Ok();
  }
  if (stopping_) return Status::Unavailable("node " + options_.node.name + " is shutting down");
  GPOOL_RETURN_IF_ERROR(CheckDisk(id));
  if (tasks_.size() >= options_.max_tasks) MakeRoom();
  if (tasks_.size() >= options_.max_tasks) {
    return Status::ResourceExhausted("node " + options_.node.name + " already tracks " +
                                     std::to_string(tasks_.size()) + " tasks");
  }
  GPOOL_RETURN_IF_ERROR(ValidateBind(bind, options_.node));
  Task task;
  task.bind = bind;
  task.bound = true;
  task.names_deadline_ms = options_.clock->MonoMs() + options_.names_wait_ms;
  NamesReady(task);  // the lookups start now, so the next Poll likely finds them done
  tasks_.emplace(id, std::move(task));
  to_start_.push_back(id);
  log_->info("task accepted task={} job_name={} gpus={} cpu_milli={} memory_mib={} command={}", id.ToString(),
             Q(bind.job_name), JoinIndices(bind.gpu_indices), bind.cpu_milli, bind.memory_mib,
             Q(JoinWords(bind.command)));
  return Status::Ok();
}

Status TaskManager::CheckDisk(const TaskId& id) {
  DiskGuard* disk = options_.disk;
  if (disk == nullptr) return Status::Ok();
  // Binds keep coming (the coordinator resends them every few seconds), so
  // looking again here is enough to resume by itself.
  if (disk->full() && disk->ResumeDue()) {
    disk->Resumed();
    log_->info("data dir takes writes again: binds accepted path={}", Q(disk->path()));
  }
  Status refused = disk->CheckWrite();
  if (!refused.ok() && disk->ShouldLog()) {
    log_->warn("bind refused, data dir full; running tasks keep running task={} error={}", id.ToString(),
               Q(refused.ToString()));
  }
  return refused;
}

void TaskManager::Preempt(const PreemptTask& preempt) {
  auto it = tasks_.find(preempt.task);
  if (it == tasks_.end()) {
    // Tombstone: the Bind may still be on its way; it must never run.
    Task tomb;
    tomb.phase = Phase::kCancelled;
    tomb.preempted = true;
    tomb.signal = SIGTERM;
    tomb.exit_code = 128 + SIGTERM;
    tomb.finished_mono_ms = options_.clock->MonoMs();
    auto& placed = tasks_.emplace(preempt.task, std::move(tomb)).first->second;
    placed.exit_seq = Emit(preempt.task, TaskEventKind::kExited, 0, 128 + SIGTERM, SIGTERM,
                           "preempted before it was bound on this node: " + preempt.reason);
    log_->info("preempt for an unknown task, tombstone recorded task={} reason={}", preempt.task.ToString(),
               Q(preempt.reason));
    return;
  }
  Terminate(it->first, it->second, preempt.grace_ms, preempt.reason);
}

void TaskManager::StopAll(int64_t grace_ms) {
  stopping_ = true;
  for (auto& [id, task] : tasks_) {
    if (task.phase == Phase::kPending || task.phase == Phase::kRunning) {
      Terminate(id, task, grace_ms, "worker shutting down");
    }
  }
}

void TaskManager::EnforceTimeLimits(int64_t now_ms) {
  for (const auto& [pid, id] : by_pid_) {
    Task& task = tasks_.at(id);
    const uint64_t limit = task.bind.max_runtime_ms;
    if (limit == 0 || task.preempted || now_ms - task.started_mono_ms < static_cast<int64_t>(limit)) continue;
    log_->info("task reached its max_runtime task={} pid={} max_runtime_ms={}", id.ToString(), pid, limit);
    Terminate(id, task, task.bind.time_limit_grace_ms, std::string(kTimeLimitReason));
  }
}

void TaskManager::Terminate(const TaskId& id, Task& task, int64_t grace_ms, const std::string& reason) {
  const int64_t now = options_.clock->MonoMs();
  switch (task.phase) {
    case Phase::kPending:
      task.phase = Phase::kCancelled;
      task.preempted = true;
      task.signal = SIGTERM;
      task.exit_code = 128 + SIGTERM;
      task.finished_mono_ms = now;
      task.exit_seq = Emit(id, TaskEventKind::kExited, 0, task.exit_code, task.signal, "cancelled before start: " + reason);
      log_->info("task cancelled before start task={} reason={}", id.ToString(), Q(reason));
      return;
    case Phase::kRunning: {
      const int64_t kill_at = now + std::max<int64_t>(grace_ms, 0);
      if (task.kill_at_ms == 0 || kill_at < task.kill_at_ms) task.kill_at_ms = kill_at;
      const bool first = !task.preempted;
      task.preempted = true;
      if (first) task.stop_reason = reason;
      if (first && options_.adopt_tasks) {
        // A restarted worker reports its end as a stop, not a failure.
        Status kept = WriteFileAtomic(StopPath(StateDirOf(id, task)), reason, kWithinBoot);
        if (!kept.ok()) log_->warn("task stop not recorded task={} error={}", id.ToString(), Q(kept.ToString()));
      }
      if (first) {
        Status s = options_.launcher->Signal(task.pid, SIGTERM);
        log_->info("task terminating task={} pid={} signal=SIGTERM grace_ms={} reason={}{}", id.ToString(), task.pid,
                   grace_ms, Q(reason), s.ok() ? "" : " error=" + Q(s.ToString()));
      }
      return;
    }
    case Phase::kExited:
    case Phase::kFailed:
    case Phase::kCancelled:
      log_->debug("preempt for a finished task ignored task={}", id.ToString());
      return;
  }
}

bool TaskManager::NamesReady(const Task& task) {
  bool ready = true;
  for (const TaskHost& t : task.bind.task_hosts) {
    if (t.address.empty() && !resolver_->Lookup(t.host)) ready = false;
  }
  return ready;
}

const TaskId* TaskManager::WholeGpuHolder(const TaskId& id, const Task& task,
                                          const std::vector<Launching>& launching) const {
  const bool whole = !IsGpuShare(task.bind) && task.bind.mig_profiles.empty() && task.bind.cores.empty();
  auto holds = [&](const TaskId& other_id) {
    if (other_id == id) return false;
    const BindTask& other = tasks_.at(other_id).bind;
    const bool other_whole = !IsGpuShare(other) && other.mig_profiles.empty() && other.cores.empty();
    if (!whole && !other_whole) return false;  // tenants of a shared GPU may run side by side
    for (uint32_t gpu : task.bind.gpu_indices) {
      if (std::find(other.gpu_indices.begin(), other.gpu_indices.end(), gpu) != other.gpu_indices.end()) return true;
    }
    return false;
  };
  for (const auto& [pid, other_id] : by_pid_) {
    if (holds(other_id)) return &other_id;
  }
  // Starts begun in this turn hold their GPUs too, though not yet by pid.
  for (const Launching& other : launching) {
    if (holds(other.id)) return &other.id;
  }
  return nullptr;
}

void TaskManager::Poll() {
  SweepCudaActivity();
  std::vector<TaskId> waiting;
  // A start execs a supervisor and waits for it to exec the task: under a
  // flood of binds, starting them all in one turn kept the agent's loop from
  // heartbeats (and from renewing the node lease) for seconds. The rest wait
  // for the next turns.
  std::vector<TaskId> due = std::exchange(to_start_, {});
  std::vector<Launching> launching;
  if (due.size() > kMaxStartsPerPoll) {
    to_start_.assign(due.begin() + kMaxStartsPerPoll, due.end());
    due.resize(kMaxStartsPerPoll);
  }
  for (const TaskId& id : due) {
    auto it = tasks_.find(id);
    if (it == tasks_.end() || it->second.phase != Phase::kPending) continue;
    // A gang task's hosts file needs its nodes' addresses: it waits (never
    // the loop) while they are looked up, at most names_wait_ms.
    if (!NamesReady(it->second) && options_.clock->MonoMs() < it->second.names_deadline_ms) {
      waiting.push_back(id);
      continue;
    }
    // The node's own guard against two jobs on one GPU: a task whose GPUs a
    // process of another task still holds (one the coordinator has moved on
    // from: lost, requeued, cancelled while the node was away, being
    // stopped), or a start begun this turn, starts only once that task is
    // gone, whatever the coordinator's view.
    if (const TaskId* holder = WholeGpuHolder(id, it->second, launching)) {
      if (!it->second.waiting_logged) {
        it->second.waiting_logged = true;
        log_->warn("task waits for its GPUs: another task's processes still hold them task={} holder={}",
                   id.ToString(), holder->ToString());
      }
      waiting.push_back(id);
      continue;
    }
    Launching launch;
    if (BeginStart(id, it->second, launch)) launching.push_back(std::move(launch));
  }
  // Begun together, finished together: the supervisors of this turn's
  // starts exec their tasks side by side rather than one after another.
  for (Launching& launch : launching) FinishStart(launch);
  to_start_.insert(to_start_.end(), waiting.begin(), waiting.end());
  // Before the reaping: a server that reported and then exited is started
  // before it is exited.
  PollRgpuEndpoints();
  for (const ExitInfo& exit : options_.launcher->Reap()) OnExit(exit);
  const int64_t now = options_.clock->MonoMs();
  // A stat per running task, four times a second, for tasks that write.
  if (now >= next_log_cap_ms_ && options_.launcher->TasksWriteLogs()) {
    next_log_cap_ms_ = now + kLogCapIntervalMs;
    for (const auto& [pid, id] : by_pid_) log_step_->Cap(id);
  }
  EnforceTimeLimits(now);
  for (const auto& [pid, id] : by_pid_) {
    Task& task = tasks_.at(id);
    if (task.kill_at_ms != 0 && now >= task.kill_at_ms) {
      task.kill_at_ms = 0;
      Status s = options_.launcher->Signal(pid, SIGKILL);
      log_->warn("task did not stop within its grace period task={} pid={} signal=SIGKILL{}", id.ToString(), pid,
                 s.ok() ? "" : " error=" + Q(s.ToString()));
    }
  }
  if (now >= next_expire_ms_) {
    next_expire_ms_ = now + kExpireEveryMs;
    Expire();
  }
  if (log_janitor_ != nullptr) {
    // A log is wanted while its task may still run or its end is not yet
    // acknowledged; after that the retention decides.
    log_janitor_->Step([this](const TaskId& id) {
      auto it = tasks_.find(id);
      return it != tasks_.end() && !Forgettable(it->second);
    });
  }
}

int64_t TaskManager::NextDueMs() const {
  const int64_t now = options_.clock->MonoMs();
  if (!to_start_.empty() || !rgpu_waiting_.empty()) return now;
  int64_t due = std::min(next_expire_ms_, options_.launcher->NextExitMs(now));
  if (!options_.share.interposer.empty() && !options_.share.activity_dir.empty()) {
    due = std::min(due, next_activity_sweep_ms_);
  }
  if (!by_pid_.empty() && options_.launcher->TasksWriteLogs()) due = std::min(due, next_log_cap_ms_);
  // EnforceTimeLimits' and the SIGKILL escalation's deadlines, as Poll reads them.
  for (const auto& [pid, id] : by_pid_) {
    const Task& task = tasks_.at(id);
    if (task.kill_at_ms != 0) due = std::min(due, task.kill_at_ms);
    if (task.bind.max_runtime_ms != 0 && !task.preempted) {
      due = std::min(due, task.started_mono_ms + static_cast<int64_t>(task.bind.max_runtime_ms));
    }
  }
  if (log_janitor_ != nullptr) due = std::min(due, log_janitor_->NextStepMs());
  return std::max(due, now);
}

void TaskManager::OnExit(const ExitInfo& exit) {
  auto at = by_pid_.find(exit.pid);
  if (at == by_pid_.end()) {
    log_->warn("reaped a process that is not a known task pid={} exit_code={}", exit.pid, exit.exit_code);
    return;
  }
  const TaskId id = at->second;
  by_pid_.erase(at);
  Finish(id, tasks_.at(id), exit, /*acked=*/false);
}

void TaskManager::Finish(const TaskId& id, Task& task, const ExitInfo& exit, bool acked) {
  task.phase = Phase::kExited;
  task.exit_code = exit.exit_code;
  task.signal = exit.signal;
  task.lost = exit.LostByNode() && !task.preempted;
  task.kill_at_ms = 0;
  task.finished_mono_ms = options_.clock->MonoMs();
  std::string message = exit.reason;
  // Before the release: a server that reported its endpoint and then exited
  // between two turns is started first, from its endpoint file.
  if (!task.bind.rgpu.owner_key.empty()) EndRgpuWait(id, task, message);
  // Its log capped a last time, its MIG instances, share files and server
  // key released (the setup steps').
  ReleaseSetup(id, task);
  if (task.preempted) message += (message.empty() ? "" : "; ") + std::string("stopped by the worker: ") + task.stop_reason;
  if (acked) {
    task.exit_acked = true;
  } else {
    task.exit_seq = Emit(id, task.lost ? TaskEventKind::kLost : TaskEventKind::kExited, exit.pid, exit.exit_code,
                         exit.signal, message);
  }
  log_->info("task exited task={} pid={} exit_code={} signal={} state={}{}", id.ToString(), exit.pid, exit.exit_code,
             exit.signal, ToString(TerminalState(task)), exit.reason.empty() ? "" : " reason=" + Q(exit.reason));
}

void TaskManager::Expire() {
  const int64_t now = options_.clock->MonoMs();
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    if (Forgettable(it->second) && now - it->second.finished_mono_ms >= options_.finished_retention_ms) {
      it = Forget(it);
    } else {
      ++it;
    }
  }
}

bool TaskManager::Forgettable(const Task& task) {
  return task.phase != Phase::kPending && task.phase != Phase::kRunning && task.exit_acked;
}

void TaskManager::MakeRoom() {
  // A node that runs short tasks faster than max_tasks a retention would
  // otherwise refuse every bind until the oldest records expired (the
  // coordinator resending them all the while): 100,000 records were reached
  // in 5 minutes by one simulated node of gpool-bench-scale. The records are
  // kept only so that a duplicate bind is recognised, and after the exit is
  // acknowledged none is sent, so the oldest acknowledged ones go first,
  // down to 90% of the cap (a walk every tenth of the cap, not every bind),
  // but none younger than kMinFinishedRetentionMs.
  const int64_t now = options_.clock->MonoMs();
  if (now < make_room_after_ms_) return;
  std::vector<std::pair<int64_t, TaskId>> old;
  for (const auto& [id, task] : tasks_) {
    if (Forgettable(task) && now - task.finished_mono_ms >= kMinFinishedRetentionMs) {
      old.emplace_back(task.finished_mono_ms, id);
    }
  }
  // Bind calls it at the cap, so the table holds at least `target`.
  const size_t target = options_.max_tasks - options_.max_tasks / 10;
  const size_t count = std::min(old.size(), tasks_.size() - target + 1);
  if (count == 0) {
    // Nothing may go yet: binds are refused for a second without a walk of
    // the whole table each.
    make_room_after_ms_ = now + 1'000;
    return;
  }
  std::nth_element(old.begin(), old.begin() + static_cast<std::ptrdiff_t>(count - 1), old.end());
  old.resize(count);
  int64_t oldest_ms = now;
  for (const auto& [finished_ms, id] : old) {
    oldest_ms = std::min(oldest_ms, finished_ms);
    Forget(tasks_.find(id));
  }
  log_->info("finished task records forgotten before their retention to make room count={} tracked={} max_tasks={} "
             "oldest_age_ms={}",
             count, tasks_.size(), options_.max_tasks, now - oldest_ms);
}

std::map<TaskId, TaskManager::Task>::iterator TaskManager::Forget(std::map<TaskId, Task>::iterator it) {
  if (options_.adopt_tasks && it->second.bound) {
    std::error_code ec;
    std::filesystem::remove_all(StateDirOf(it->first, it->second), ec);
  }
  if (options_.isolation.enabled) {
    // Its scratch directory goes with its record; the log stays. Links a
    // task left in it are removed, not followed.
    std::error_code ec;
    std::filesystem::remove_all(TaskWorkDir(options_.log_dir, it->first), ec);
  }
  const TaskId gone = it->first;
  it = tasks_.erase(it);
  RemoveHostsFiles(gone);
  return it;
}

uint64_t TaskManager::Emit(const TaskId& id, TaskEventKind kind, int64_t pid, int32_t exit_code, int32_t signal,
                           std::string message) {
  TaskEvent event;
  event.node = options_.node.name;
  event.seq = next_seq_++;
  event.task = id;
  event.kind = kind;
  event.pid = pid;
  event.exit_code = exit_code;
  event.signal = signal;
  event.time_ms = options_.clock->WallMs();
  event.message = std::move(message);
  const uint64_t seq = event.seq;
  outbox_.emplace(seq, std::move(event));
  return seq;
}

void TaskManager::ReleaseAcknowledged(const TaskId& id, const Task& task) {
  // Nothing reads an ended task's MPI hostfile, nor its job's hosts file once
  // no task of the job here may still run, so they go now rather than with
  // the record: a node running short tasks otherwise held one of each per
  // task for the retention (a tmpfs page each under --run-dir; ~90,000 files
  // on a simulated node of gpool-bench-scale in 90 s).
  bool job_live = false;
  for (auto it = tasks_.lower_bound(TaskId{id.job, 0, 0}); !job_live && it != tasks_.end() && it->first.job == id.job;
       ++it) {
    job_live = !Forgettable(it->second);
  }
  hosts_step_->Remove(id, /*job_gone=*/!job_live);
  if (!options_.adopt_tasks) return;
  // A worker restarted within the retention must not report it again.
  const std::string dir = StateDirOf(id, task);
  if (std::filesystem::is_directory(dir)) (void)WriteFileAtomic(AckedPath(dir), "", kWithinBoot);
  // Only what a restarted worker reads of an ended task stays until the
  // record goes (bind, started, exit, stop, acked): the launch spec (the
  // job's env) and the supervisor's messages go now. Under --run-dir each is
  // a page of tmpfs, and a node running short tasks keeps up to max_tasks
  // records (36 KB a one-task job before this, 20 KB after).
  std::error_code ec;
  std::filesystem::remove(SupervisorSpecPath(dir), ec);
  std::filesystem::remove(SupervisorLogPath(dir), ec);
}

void TaskManager::AckEvent(uint64_t seq) {
  auto it = outbox_.find(seq);
  if (it == outbox_.end()) return;
  if (auto task = tasks_.find(it->second.task); task != tasks_.end() && task->second.exit_seq == seq) {
    task->second.exit_acked = true;
    if (task->second.bound) ReleaseAcknowledged(task->first, task->second);
  }
  outbox_.erase(it);
}

}  // namespace gpool::worker
