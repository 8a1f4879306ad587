#include "worker/runner/task_manager.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>

#include "protocol/base/text.h"
#include "protocol/wire.h"
#include "topology/cpulist.h"
#include "worker/log.h"
#include "worker/runner/atomic_file.h"
#include "worker/runner/job_hosts.h"
#include "worker/runner/log_tail.h"
#include "worker/runner/numa_pinning.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_exec.h"
#include "worker/runner/task_records.h"

namespace gpool::worker {
namespace {

constexpr int64_t kExpireEveryMs = 10'000;

std::string JoinIndices(const std::vector<uint32_t>& indices) {
  std::string out;
  for (uint32_t i : indices) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out.empty() ? "none" : out;
}

}  // namespace

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
  if (manager->options_.adopt_tasks) manager->AdoptLeftTasks();
  return manager;
}

std::vector<TaskManager::MigInstance> TaskManager::DynamicMigInstances(const BindTask& bind) const {
  std::vector<MigInstance> out;
  if (options_.mig == nullptr) return out;
  for (size_t i = 0; i < bind.gpu_indices.size() && i < bind.mig_profiles.size(); ++i) {
    const uint32_t index = bind.gpu_indices[i];
    bool dynamic = false;
    for (const auto& gpu : options_.node.gpus) dynamic = dynamic || (gpu.index == index && gpu.mig_mode == "dynamic");
    if (bind.mig_profiles[i].empty() || !dynamic) continue;
    out.push_back({index, bind.mig_profiles[i], i < bind.mig_starts.size() ? bind.mig_starts[i] : 0});
  }
  return out;
}

std::string TaskManager::StateDirOf(const TaskId& id, const Task& task) const {
  return task.state_dir.empty() ? TaskStateDir(state_root(), id) : task.state_dir;
}

Result<std::string> TaskManager::PersistBind(const TaskId& id, const BindTask& bind) {
  const std::string dir = TaskStateDir(state_root(), id);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create task state directory " + dir + ": " + ec.message());
  GPOOL_RETURN_IF_ERROR(WriteFileAtomic(BindPath(dir), wire::PackToString(bind), kWithinBoot));
  return dir;
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
  if (now >= next_log_cap_ms_) {  // a stat per running task, four times a second
    next_log_cap_ms_ = now + kLogCapIntervalMs;
    for (const auto& [pid, id] : by_pid_) CapLog(id);
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
}

Result<int64_t> TaskManager::RunningPid(const TaskId& task) const {
  auto it = tasks_.find(task);
  if (it == tasks_.end() || !it->second.bound) {
    return Status::NotFound("task " + task.ToString() + " is not on node " + options_.node.name);
  }
  if (it->second.phase != Phase::kRunning || it->second.pid <= 0 || !by_pid_.count(it->second.pid)) {
    return Status::FailedPrecondition("task " + task.ToString() + " is not running on node " + options_.node.name);
  }
  return it->second.pid;
}

void TaskManager::FailStart(const TaskId& id, Task& task, const Status& status) {
  ReleaseMigInstances(id, task);
  ReleaseShareFiles(id, task);
  task.phase = Phase::kFailed;
  task.exit_code = 127;
  task.finished_mono_ms = options_.clock->MonoMs();
  task.exit_seq = Emit(id, TaskEventKind::kFailed, 0, 127, 0, status.message());
  log_->warn("task failed to start task={} exit_code=127 error={}", id.ToString(), Q(status.ToString()));
}

bool TaskManager::BeginStart(const TaskId& id, Task& task, Launching& launching) {
  TaskEnvOptions env_options;
  env_options.cuda_intercept_lib = options_.cuda_intercept_lib;
  if (IsGpuShare(task.bind)) env_options.share_cache_path = TaskShareCachePath(options_.log_dir, id);
  if (Status cuda = PrepareInterposer(id, task, env_options); !cuda.ok()) {
    AppendLine(TaskLogPath(options_.log_dir, id), "gpool-worker: task not started: " + cuda.message() + "\n");
    FailStart(id, task, cuda);
    return false;
  }
  Status mig = CreateMigInstances(id, task, env_options.mig_uuids);
  auto env = mig.ok() ? BuildTaskEnv(task.bind, options_.node, options_.base_env, env_options)
                      : Result<std::vector<std::string>>(mig);
  if (!env.ok()) {
    // The log is where users look first (FetchLog); say there why it never ran.
    // 0600: a log is its task's owner's, not every local user's.
    AppendLine(TaskLogPath(options_.log_dir, id), "gpool-worker: task not started: " + env.status().message() + "\n");
    FailStart(id, task, env.status());
    return false;
  }

  LaunchRequest request;
  request.argv = task.bind.command;
  std::vector<std::string> owned;
  if (!task.bind.rgpu.owner_key.empty()) {
    // An rGPU session: its server, with the key it gets here (in the bind,
    // so an adopting worker and the started event know it); the server
    // reports its endpoint once it has bound a port (task_manager_rgpu.cc).
    const std::string key_file = TaskRgpuKeyPath(options_.log_dir, id);
    // A share's server finds its interposer (or HAMi-core) through its
    // environment by opening libcuda.so.1 by name; any other opens the real
    // driver by path (--cuda-real-driver may name one off the search path).
    const bool driver_by_name =
        !env_options.cuda_lib_dir.empty() || (IsGpuShare(task.bind) && !options_.cuda_intercept_lib.empty());
    auto server = PrepareRgpuServer(options_.rgpu, key_file, RgpuEndpointFile(id),
                                    driver_by_name ? "" : options_.share.real_driver, task.bind);
    if (!server.ok()) {
      AppendLine(TaskLogPath(options_.log_dir, id), "gpool-worker: session not started: " + server.status().message() + "\n");
      FailStart(id, task, server.status());
      return false;
    }
    request.argv = std::move(server).value();
    owned.push_back(key_file);
  }
  request.env = std::move(env.value());
  request.log_path = TaskLogPath(options_.log_dir, id);
  request.numa = PlanNumaPinning(task.bind, options_.node);
  request.cgroup = TaskCgroupName(id);
  request.limits = CgroupLimits{.cpu_milli = task.bind.cpu_milli, .memory_mib = task.bind.memory_mib};
  if (!task.bind.task_hosts.empty()) {
    WriteJobNames(id, task.bind, request);
  } else if (!task.bind.hosts.empty()) {
    WriteHostfile(id, task.bind.hosts, request.env);
  }
  if (options_.adopt_tasks) {
    // Before the launch: a task nothing on disk names could not be adopted.
    auto dir = PersistBind(id, task.bind);
    if (!dir.ok()) {
      FailStart(id, task, dir.status());
      return false;
    }
    request.state_dir = *dir;
    task.state_dir = *dir;
  }
  owned.push_back(request.log_path);
  if (!env_options.share_cache_path.empty()) owned.push_back(env_options.share_cache_path);
  if (!env_options.cuda_ledger.empty()) owned.push_back(env_options.cuda_ledger);
  if (Status isolated = ApplyTaskIsolation(options_.isolation, options_.log_dir, id, task.bind, options_.node, owned,
                                           request);
      !isolated.ok()) {
    AppendLine(request.log_path, "gpool-worker: task not started: " + isolated.message() + "\n");
    FailStart(id, task, isolated);
    return false;
  }
  launching.id = id;
  launching.ticket = options_.launcher->BeginLaunch(request);
  launching.request = std::move(request);
  return true;
}

void TaskManager::FinishStart(Launching& launching) {
  const TaskId& id = launching.id;
  Task& task = tasks_.at(id);
  const LaunchRequest& request = launching.request;
  auto pid = options_.launcher->FinishLaunch(launching.ticket);
  if (!pid.ok()) return FailStart(id, task, pid.status());
  task.phase = Phase::kRunning;
  task.pid = *pid;
  task.started_mono_ms = options_.clock->MonoMs();
  by_pid_[*pid] = id;
  if (task.bind.rgpu.owner_key.empty()) {
    EmitStarted(id, task);
  } else {
    AwaitRgpuEndpoint(id, task, options_.clock->WallMs());  // "started" once it says where it listens
  }
  log_->info("task started task={} pid={} gpus={} numa_cpus={} log={} uid={} gid={} user={} pid_ns={} denied_devices={}",
             id.ToString(), *pid, JoinIndices(task.bind.gpu_indices),
             request.numa.empty() ? "none" : topology::FormatCpuList(request.numa.cpus), Q(request.log_path),
             request.identity.set ? std::to_string(request.identity.uid) : "worker",
             request.identity.set ? std::to_string(request.identity.gid) : "worker", Q(request.identity.user),
             request.own_pid_namespace, request.limits.deny_devices.size());
}

Status TaskManager::CreateMigInstances(const TaskId& id, Task& task, std::map<uint32_t, std::string>& uuids) {
  if (options_.mig == nullptr) return Status::Ok();
  const BindTask& bind = task.bind;
  for (size_t i = 0; i < bind.gpu_indices.size() && i < bind.mig_profiles.size(); ++i) {
    const uint32_t index = bind.gpu_indices[i];
    const std::string& profile = bind.mig_profiles[i];
    const uint32_t start = i < bind.mig_starts.size() ? bind.mig_starts[i] : 0;
    bool dynamic = false;
    for (const auto& gpu : options_.node.gpus) dynamic = dynamic || (gpu.index == index && gpu.mig_mode == "dynamic");
    if (profile.empty() || !dynamic) continue;
    auto uuid = options_.mig->Create(index, profile, start);
    if (!uuid.ok()) return uuid.status();
    task.mig_created.push_back({index, profile, start});
    uuids[index] = *uuid;
    log_->info("mig instance ready task={} gpu={} profile={} start={} uuid={}", id.ToString(), index, Q(profile),
               start, Q(*uuid));
  }
  return Status::Ok();
}

void TaskManager::ReleaseMigInstances(const TaskId& id, Task& task) {
  for (const MigInstance& m : std::exchange(task.mig_created, {})) {
    Status s = options_.mig->Destroy(m.gpu_index, m.profile, m.start);
    if (s.ok()) {
      log_->info("mig instance destroyed task={} gpu={} profile={} start={}", id.ToString(), m.gpu_index,
                 Q(m.profile), m.start);
    } else {
      log_->warn("mig instance not destroyed; it keeps its placement until removed task={} gpu={} profile={} "
                 "start={} error={}",
                 id.ToString(), m.gpu_index, Q(m.profile), m.start, Q(s.ToString()));
    }
  }
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
  CapLog(id, /*finished=*/true);  // what it wrote since the last turn
  task.phase = Phase::kExited;
  task.exit_code = exit.exit_code;
  task.signal = exit.signal;
  task.lost = exit.LostByNode() && !task.preempted;
  task.kill_at_ms = 0;
  task.finished_mono_ms = options_.clock->MonoMs();
  ReleaseShareFiles(id, task);
  ReleaseMigInstances(id, task);
  std::string message = exit.reason;
  if (!task.bind.rgpu.owner_key.empty()) {
    EndRgpuWait(id, task, message);
    std::error_code ec;
    std::filesystem::remove(TaskRgpuKeyPath(options_.log_dir, id), ec);
    std::filesystem::remove(RgpuEndpointFile(id), ec);
  }
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
    const Task& task = it->second;
    const bool finished = task.phase != Phase::kPending && task.phase != Phase::kRunning;
    if (finished && task.exit_acked && now - task.finished_mono_ms >= options_.finished_retention_ms) {
      if (options_.adopt_tasks && task.bound) {
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
    } else {
      ++it;
    }
  }
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

void TaskManager::AckEvent(uint64_t seq) {
  auto it = outbox_.find(seq);
  if (it == outbox_.end()) return;
  if (auto task = tasks_.find(it->second.task); task != tasks_.end() && task->second.exit_seq == seq) {
    task->second.exit_acked = true;
    if (options_.adopt_tasks && task->second.bound) {
      // A worker restarted within the retention must not report it again.
      const std::string dir = StateDirOf(task->first, task->second);
      if (std::filesystem::is_directory(dir)) (void)WriteFileAtomic(AckedPath(dir), "", kWithinBoot);
    }
  }
  outbox_.erase(it);
}

TaskState TaskManager::TerminalState(const Task& task) const {
  switch (task.phase) {
    case Phase::kPending:
    case Phase::kRunning:
      return TaskState::kRunning;
    case Phase::kExited:
      if (task.preempted) return TaskState::kCancelled;
      if (task.lost) return TaskState::kLost;
      return task.exit_code == 0 && task.signal == 0 ? TaskState::kSucceeded : TaskState::kFailed;
    case Phase::kFailed:
      return TaskState::kFailed;
    case Phase::kCancelled:
      return TaskState::kCancelled;
  }
  return TaskState::kFailed;
}

bool TaskManager::Idle() const {
  if (!by_pid_.empty()) return false;
  for (const TaskId& id : to_start_) {
    auto it = tasks_.find(id);
    if (it != tasks_.end() && it->second.phase == Phase::kPending) return false;
  }
  return true;
}

std::vector<TaskId> TaskManager::Running() const {
  std::vector<TaskId> out;
  for (const auto& [id, task] : tasks_) {
    if (task.phase == Phase::kPending || task.phase == Phase::kRunning) out.push_back(id);
  }
  return out;
}

std::vector<TaskReport> TaskManager::Reports() const {
  std::vector<TaskReport> out;
  for (const auto& [id, task] : tasks_) {
    const bool live = task.phase == Phase::kPending || task.phase == Phase::kRunning;
    if (!live && task.exit_acked) continue;
    TaskReport report;
    report.task = id;
    report.state = TerminalState(task);
    report.pid = task.pid;
    report.exit_code = live ? 0 : task.exit_code;
    report.signal = live ? 0 : task.signal;
    // Times from the events still unacknowledged (what the coordinator may
    // not have heard), for its usage accounting.
    for (const auto& [seq, event] : outbox_) {
      if (event.task != id) continue;
      if (event.kind == TaskEventKind::kStarted) report.start_ms = event.time_ms;
      if (!live && seq == task.exit_seq) report.finish_ms = event.time_ms;
    }
    out.push_back(std::move(report));
  }
  return out;
}

Result<FetchLogReply> TaskManager::TailLog(const TaskId& task, uint64_t max_bytes) const {
  auto tail = ReadLogTail(TaskLogPath(options_.log_dir, task), max_bytes);
  if (!tail.ok()) {
    if (tail.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("task " + task.ToString() + " has no log on node " + options_.node.name);
    }
    return tail.status();
  }
  FetchLogReply reply;
  reply.data = std::move(tail->data);
  reply.size = tail->size;
  reply.truncated = tail->truncated;
  reply.dropped = tail->dropped;
  return reply;
}

void TaskManager::CapLog(const TaskId& id, bool finished) {
  auto capped = CapTaskLog(TaskLogPath(options_.log_dir, id), options_.log_max_bytes, finished);
  if (!capped.ok() && capped.status().code() != StatusCode::kNotFound) {
    log_->warn("task log not capped task={} error={}", id.ToString(), Q(capped.status().ToString()));
  } else if (capped.ok() && *capped) {
    log_->info("task log capped task={} max_bytes={}", id.ToString(), options_.log_max_bytes);
  }
}

}  // namespace gpool::worker
