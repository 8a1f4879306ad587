#include "worker/runner/posix_process_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "protocol/base/clock.h"
#include "protocol/base/text.h"
#include "protocol/wire.h"
#include "topology/cpulist.h"
#include "worker/log.h"
#include "worker/runner/atomic_file.h"
#include "worker/runner/lease_file.h"
#include "worker/runner/task_exec.h"

namespace gpool::worker {
namespace {

constexpr char kLostReason[] = "lost with its supervisor: gpool-task-supervisor died without recording the task's exit";

std::vector<char*> ArgvOf(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Starts the supervisor with posix_spawn (a vfork-like clone: the worker's
// page tables are not copied, which a fork did twice per task start) in a
// session of its own, with the status pipe as fd 3, stdin /dev/null,
// stdout+stderr onto its log, nothing else open, default signal handling
// and no signal blocked. `--detach` makes it fork once more and its first
// process exit, so that init (not the worker) is its parent; the caller
// waits for that first process. The descriptors are moved to 10 and up
// first, so that the dup2s onto 0..3 cannot clobber each other.
Result<pid_t> SpawnSupervisor(char* const* argv, int status_fd, int null_fd, int log_fd) {
  int moved[3] = {-1, -1, -1};
  const int sources[3] = {status_fd, null_fd, log_fd};
  for (int i = 0; i < 3; ++i) {
    moved[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, 10);
    if (moved[i] < 0) {
      const int err = errno;
      for (int j = 0; j < i; ++j) close(moved[j]);
      return Status::ResourceExhausted(std::string("cannot prepare the supervisor's descriptors: ") + std::strerror(err));
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&actions, moved[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, moved[2], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, moved[2], STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, moved[0], 3);
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  for (int fd : moved) close(fd);
  if (error != 0) return Status::ResourceExhausted(std::string("cannot start the task supervisor: ") + std::strerror(error));
  return pid;
}

// The last lines of the supervisor's log, for an error that says why it
// did not start the task.
std::string StartupLogTail(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok() || text->empty()) return "";
  std::string tail = text->size() > 512 ? text->substr(text->size() - 512) : *text;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return tail;
}

}  // namespace

PosixProcessLauncher::PosixProcessLauncher(PosixProcessLauncherOptions options)
    : options_(std::move(options)), log_(OrDefault(options_.logger)), cgroups_(options_.cgroups) {
  if (cgroups_ != nullptr && cgroups_->cpuset_available()) pool_ = std::make_unique<SharedCpuPool>(cgroups_, log_);
}

PosixProcessLauncher::PosixProcessLauncher(std::shared_ptr<spdlog::logger> logger, CgroupTree* cgroups)
    : PosixProcessLauncher(PosixProcessLauncherOptions{.logger = std::move(logger), .cgroups = cgroups}) {}


// Exclusive cores need a cpuset, so a launcher without cgroups cannot give
// them unless the operator allowed the affinity fallback.
Status PosixProcessLauncher::CheckCpusetPossible(const LaunchRequest& request) const {
  if (request.limits.cpuset_cpus.empty() || !request.limits.cpuset_required) return Status::Ok();
  if (cgroups_ != nullptr && !request.cgroup.empty()) return Status::Ok();  // the tree decides (CgroupTree::Create)
  return Status::FailedPrecondition("exclusive cores " + topology::FormatCpuList(request.limits.cpuset_cpus) +
                                    " cannot be enforced: task cgroups are off on this node");
}

uint64_t PosixProcessLauncher::EnterPool(const std::string& cgroup, CgroupLimits& limits,
                                         const std::vector<uint32_t>& numa_cpus) {
  if (pool_ == nullptr || cgroup.empty()) return 0;
  if (!limits.cpuset_cpus.empty()) {
    pool_->Hold(cgroup, limits.cpuset_cpus);  // before the task runs: no shared task is on its cores then
  } else {
    limits.shared_cpus = pool_->CpusWithin(numa_cpus);
  }
  return pool_->generation();
}

void PosixProcessLauncher::AfterLaunch(const std::string& cgroup, bool exclusive, bool ok, uint64_t generation,
                                       const std::vector<uint32_t>& numa_cpus) {
  if (pool_ == nullptr || cgroup.empty()) return;
  if (!ok) {
    pool_->Forget(cgroup);
  } else if (!exclusive) {
    pool_->Join(cgroup, generation, numa_cpus);
  }
}

Result<int64_t> PosixProcessLauncher::LaunchDirect(const LaunchRequest& request) {
  GPOOL_RETURN_IF_ERROR(ValidateLaunch(request));
  GPOOL_RETURN_IF_ERROR(CheckCpusetPossible(request));
  CgroupLimits limits = request.limits;
  const uint64_t generation = cgroups_ != nullptr ? EnterPool(request.cgroup, limits, request.numa.cpus) : 0;
  Result<int64_t> pid = ForkDirect(request, limits);
  AfterLaunch(request.cgroup, !request.limits.cpuset_cpus.empty(), pid.ok(), generation, request.numa.cpus);
  return pid;
}

Result<int64_t> PosixProcessLauncher::ForkDirect(const LaunchRequest& request, const CgroupLimits& limits) {
  std::vector<std::string> notes;
  const PreparedPinning pinning = PreparedPinning::Prepare(request.numa, &notes);
  std::unique_ptr<TaskCgroup> cgroup;
  if (cgroups_ != nullptr && !request.cgroup.empty()) {
    size_t killed = 0;
    auto made = cgroups_->CreateReplacing(request.cgroup, limits, &killed);
    if (!made.ok()) return made.status().WithContext("task cgroup");
    if (killed > 0) {
      log_->warn("task cgroup left by a previous worker emptied cgroup={} processes_killed={}", request.cgroup,
                 killed);
    }
    cgroup = std::move(made).value();
  }
  static const std::vector<int> kNoCgroup;
  for (const auto& note : notes) log_->info("numa pinning adjusted log={} note={}", Q(request.log_path), Q(note));
  auto forked = ForkTask(request, pinning, cgroup ? cgroup->JoinFds() : kNoCgroup);
  if (cgroup) cgroup->CloseJoinFds();
  if (!forked.ok()) {
    if (cgroup) (void)cgroup->Remove();  // empty: its only process was reaped
    return forked.status();
  }
  const int64_t pid = forked->pid;
  children_.insert(pid);
  if (cgroup) task_cgroups_[pid] = std::move(cgroup);
  for (const PinningFailure& failure : forked->pinning_failures) {
    log_->warn("task numa pinning failed, running without it pid={} what={} error={} log={}", pid,
               Q(PinningFailureWhat(pinning, failure)), Q(std::strerror(failure.err)), Q(request.log_path));
    AppendLine(request.log_path, PinningFailureLogLine(pinning, failure));
  }
  return pid;
}

Result<int64_t> PosixProcessLauncher::Launch(const LaunchRequest& request) {
  if (options_.supervisor.empty() || request.state_dir.empty()) return LaunchDirect(request);
  return FinishLaunch(BeginLaunch(request));
}

uint64_t PosixProcessLauncher::BeginLaunch(const LaunchRequest& request) {
  if (options_.supervisor.empty() || request.state_dir.empty()) return ProcessLauncher::BeginLaunch(request);
  const uint64_t ticket = next_ticket_++;
  Starting& starting = starting_[ticket];
  starting.log_path = request.log_path;
  starting.status = BeginSupervised(request, starting);
  return ticket;
}

Result<int64_t> PosixProcessLauncher::FinishLaunch(uint64_t ticket) {
  auto it = starting_.find(ticket);
  if (it == starting_.end()) return ProcessLauncher::FinishLaunch(ticket);
  Starting starting = std::move(it->second);
  starting_.erase(it);
  Result<int64_t> pid = starting.status.ok() ? FinishSupervised(starting) : Result<int64_t>(starting.status);
  AfterLaunch(starting.pool_cgroup, starting.exclusive, pid.ok(), starting.pool_generation, starting.numa_cpus);
  return pid;
}

Status PosixProcessLauncher::BeginSupervised(const LaunchRequest& request, Starting& starting) {
  GPOOL_RETURN_IF_ERROR(ValidateLaunch(request));
  GPOOL_RETURN_IF_ERROR(CheckCpusetPossible(request));
  if (!options_.lease_path.empty()) {
    Status lease = CheckLease(options_.lease_path, MonotonicNowMs());
    if (!lease.ok()) return Status::FailedPrecondition(std::string(kNoLeaseStart) + ": " + lease.message());
  }
  const std::string& dir = request.state_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create task state directory " + dir + ": " + ec.message());
  if (SupervisorAlive(dir)) return Status::AlreadyExists("a supervisor already runs for " + dir);
  // Records of an earlier start of this directory would read as this one's.
  std::filesystem::remove(StartRecordPath(dir), ec);
  std::filesystem::remove(ExitRecordPath(dir), ec);
  SupervisorSpec spec;
  spec.request = request;
  if (cgroups_ != nullptr && !request.cgroup.empty()) {
    spec.cgroup_root = cgroups_->mount_root();
    spec.cgroup_scope = cgroups_->scope();
    starting.pool_generation = EnterPool(request.cgroup, spec.request.limits, request.numa.cpus);
    starting.pool_cgroup = request.cgroup;
    starting.exclusive = !request.limits.cpuset_cpus.empty();
    starting.numa_cpus = request.numa.cpus;
  } else {
    spec.request.cgroup.clear();
  }
  GPOOL_RETURN_IF_ERROR(WriteSupervisorSpec(dir, spec));
  if (access(options_.supervisor.c_str(), X_OK) != 0) {
    return Status::FailedPrecondition("cannot run the task supervisor " + options_.supervisor + ": " +
                                      std::strerror(errno));
  }

  // Everything the child needs is made before fork: no allocation after.
  std::vector<std::string> args = {options_.supervisor, "--state-dir", dir, "--status-fd", "3", "--detach"};
  if (!options_.lease_path.empty()) {
    args.push_back("--lease");
    args.push_back(options_.lease_path);
  }
  std::vector<char*> argv = ArgvOf(args);
  const std::string log_path = SupervisorLogPath(dir);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::IoError("cannot open " + log_path + ": " + std::strerror(errno));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int fds[2];
  if (null_fd < 0 || pipe2(fds, O_CLOEXEC) != 0) {
    const int err = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return Status::IoError(std::string("cannot prepare the supervisor's descriptors: ") + std::strerror(err));
  }
  const Result<pid_t> intermediate = SpawnSupervisor(argv.data(), fds[1], null_fd, log_fd);
  close(fds[1]);
  close(log_fd);
  close(null_fd);
  if (!intermediate.ok()) {
    close(fds[0]);
    return intermediate.status();
  }
  starting.intermediate = *intermediate;
  starting.status_fd = fds[0];
  starting.state_dir = dir;
  starting.supervisor_log = log_path;
  starting.cgroup = spec.request.cgroup;
  return Status::Ok();
}

Result<int64_t> PosixProcessLauncher::FinishSupervised(const Starting& starting) {
  int wstatus = 0;
  while (waitpid(starting.intermediate, &wstatus, 0) < 0 && errno == EINTR) {
  }
  // The supervisor answers once the task has exec'd or could not start.
  std::string reply;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(starting.status_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(starting.status_fd);
  auto hello = wire::UnpackFromString<SupervisorHello>(reply);
  if (!hello.ok()) {
    const std::string tail = StartupLogTail(starting.supervisor_log);
    return Status::Internal("gpool-task-supervisor did not start the task" +
                            (tail.empty() ? std::string(" (see ") + starting.supervisor_log + ")" : ": " + tail));
  }
  if (!hello->ok) return Status(static_cast<StatusCode>(hello->code), hello->message);
  const int64_t pid = hello->pid;
  supervised_[pid] = Supervised{.state_dir = starting.state_dir,
                                .cgroup = starting.cgroup,
                                .next_liveness_check_ms = MonotonicNowMs() + options_.liveness_check_ms};
  for (const std::string& warning : hello->warnings) {
    log_->warn("task numa pinning failed, running without it pid={} error={} log={}", pid, Q(warning),
               Q(starting.log_path));
  }
  return pid;
}

Status PosixProcessLauncher::Signal(int64_t pid, int signal) {
  const auto supervised = supervised_.find(pid);
  if (!children_.count(pid) && !draining_.count(pid) && supervised == supervised_.end()) {
    return Status::NotFound("pid " + std::to_string(pid) + " is not a running task");
  }
  // The task's process group first, then, through the cgroup, every process
  // that left it (setsid, setpgid, re-parented); each process is signalled
  // once, so a task that traps SIGTERM runs its handler once.
  const auto p = static_cast<pid_t>(pid);
  const bool draining = draining_.count(pid) > 0;  // its first process is gone
  const bool group_signalled = !draining && kill(-p, signal) == 0;
  const int group_errno = errno;
  const int64_t skip_group = group_signalled ? pid : 0;
  if (auto it = task_cgroups_.find(pid); it != task_cgroups_.end()) it->second->SignalAll(signal, skip_group);
  if (supervised != supervised_.end() && cgroups_ != nullptr && !supervised->second.cgroup.empty()) {
    if (auto cgroup = cgroups_->Adopt(supervised->second.cgroup)) cgroup->SignalAll(signal, skip_group);
  }
  if (draining || group_signalled) return Status::Ok();
  errno = group_errno;
  if (errno == ESRCH && kill(p, signal) == 0) return Status::Ok();
  // A supervised task whose first process just ended: its supervisor is
  // emptying the cgroup and Reap reports it soon.
  if (errno == ESRCH && supervised != supervised_.end()) return Status::Ok();
  return Status::Internal("kill(" + std::to_string(pid) + ", " + std::to_string(signal) + "): " + std::strerror(errno));
}

std::vector<ExitInfo> PosixProcessLauncher::Reap() {
  std::vector<ExitInfo> exited;
  ReapDirect(exited);
  ReapSupervised(exited);
  return exited;
}

void PosixProcessLauncher::ReapDirect(std::vector<ExitInfo>& exited) {
  for (auto it = children_.begin(); it != children_.end();) {
    const auto pid = static_cast<pid_t>(*it);
    int wstatus = 0;
    const pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) {
      ++it;
      continue;
    }
    ExitInfo info;
    info.pid = pid;
    if (r < 0) {
      info.exit_code = 255;  // ECHILD: someone else reaped it; the status is lost
    } else if (WIFEXITED(wstatus)) {
      info.exit_code = WEXITSTATUS(wstatus);
    } else if (WIFSIGNALED(wstatus)) {
      info.signal = WTERMSIG(wstatus);
      info.exit_code = 128 + info.signal;
    }
    // A task ends with its leader: stragglers left in its group (and, with a
    // cgroup, anywhere in its tree) are killed; it is reported once none runs.
    kill(-pid, SIGKILL);
    auto cgroup = task_cgroups_.find(pid);
    if (cgroup == task_cgroups_.end()) {
      exited.push_back(info);
    } else {
      cgroup->second->KillAll();
      draining_[pid] = info;
    }
    it = children_.erase(it);
  }
  for (auto it = draining_.begin(); it != draining_.end();) {
    auto cgroup = task_cgroups_.find(it->first);
    if (!cgroup->second->Empty()) {
      cgroup->second->KillAll();  // anything forked while the first kill was under way
      ++it;
      continue;
    }
    if (Status removed = cgroup->second->Remove(); !removed.ok()) {
      log_->warn("task cgroup not removed pid={} error={}", it->first, Q(removed.ToString()));
    }
    if (pool_ != nullptr) pool_->Forget(cgroup->second->name());  // nothing of it runs: its cores are free
    task_cgroups_.erase(cgroup);
    exited.push_back(it->second);
    it = draining_.erase(it);
  }
}

ExitInfo PosixProcessLauncher::FromRecord(const ExitRecord& record) {
  ExitInfo info;
  info.pid = record.pid;
  info.exit_code = record.exit_code;
  info.signal = record.signal;
  if (record.reason != kExitReasonExited) info.reason = record.reason;
  return info;
}

void PosixProcessLauncher::ReapSupervised(std::vector<ExitInfo>& exited) {
  const int64_t now = MonotonicNowMs();
  // An exit record is looked for every kReapScanMs, not every loop turn: a
  // node with hundreds of tasks would otherwise open hundreds of files 50
  // times a second.
  if (now < next_supervised_scan_ms_) return;
  next_supervised_scan_ms_ = now + kReapScanMs;
  for (auto it = supervised_.begin(); it != supervised_.end();) {
    Supervised& task = it->second;
    auto record = ReadExitRecord(task.state_dir);
    if (!record.ok() && now >= task.next_liveness_check_ms) {
      task.next_liveness_check_ms = now + options_.liveness_check_ms;
      // Read again after the check: it may have written the record and exited in between.
      if (!SupervisorAlive(task.state_dir)) {
        record = ReadExitRecord(task.state_dir);
        if (!record.ok()) {
          exited.push_back(Lost(it->first, task.state_dir, task.cgroup));
          if (pool_ != nullptr && !task.cgroup.empty()) pool_->Forget(task.cgroup);
          it = supervised_.erase(it);
          continue;
        }
      }
    }
    if (!record.ok()) {
      ++it;
      continue;
    }
    ExitInfo info = FromRecord(*record);
    info.pid = it->first;
    exited.push_back(std::move(info));
    // The supervisor records the exit once the cgroup is empty: the cores are free.
    if (pool_ != nullptr && !task.cgroup.empty()) pool_->Forget(task.cgroup);
    it = supervised_.erase(it);
  }
}

ExitInfo PosixProcessLauncher::Lost(int64_t pid, const std::string& state_dir, const std::string& cgroup) {
  // Its first process died with the supervisor (parent-death signal). Only
  // the cgroup says reliably what else is left: the process group id may by
  // now belong to someone else.
  size_t killed = 0;
  if (cgroups_ != nullptr && !cgroup.empty()) {
    if (auto left = cgroups_->Adopt(cgroup)) {
      killed = left->Pids().size();
      if (Status drained = left->Drain(); !drained.ok()) {
        log_->error("cannot empty the cgroup of a task lost with its supervisor cgroup={} error={}", cgroup,
                    Q(drained.ToString()));
      }
    }
  }
  ExitRecord record;
  record.pid = pid;
  record.exit_code = 255;
  record.end_time_ms = SystemClock::Get().WallMs();
  record.reason = kLostReason;
  if (Status written = WriteExitRecord(state_dir, record); !written.ok()) {
    log_->warn("cannot record a lost task's end state_dir={} error={}", Q(state_dir), Q(written.ToString()));
  }
  log_->warn("task lost with its supervisor pid={} state_dir={} processes_killed={}", pid, Q(state_dir), killed);
  return FromRecord(record);
}

Result<AdoptedProcess> PosixProcessLauncher::Adopt(const std::string& state_dir) {
  AdoptedProcess adopted;
  auto started = ReadStartRecord(state_dir);
  // A supervisor still starting its task (the worker died during Launch)
  // records the pid within moments.
  const int64_t deadline = MonotonicNowMs() + 2'000;
  while (!started.ok() && SupervisorAlive(state_dir) && MonotonicNowMs() < deadline) {
    poll(nullptr, 0, 10);
    started = ReadStartRecord(state_dir);
  }
  if (started.ok()) {
    adopted.pid = started->pid;
    adopted.start_wall_ms = started->start_time_ms;
  }
  auto spec = ReadSupervisorSpec(state_dir);
  const std::string cgroup = spec.ok() ? spec->request.cgroup : "";
  // The record first: a supervisor holds its lock for a moment after writing it.
  if (auto record = ReadExitRecord(state_dir); record.ok()) {
    adopted.exit = FromRecord(*record);
    if (adopted.pid == 0) adopted.pid = record->pid;
    adopted.exit.pid = adopted.pid;
    return adopted;
  }
  if (started.ok() && SupervisorAlive(state_dir)) {
    if (supervised_.count(adopted.pid)) {
      return Status::AlreadyExists("pid " + std::to_string(adopted.pid) + " is already tracked");
    }
    supervised_[adopted.pid] = Supervised{.state_dir = state_dir,
                                          .cgroup = cgroup,
                                          .next_liveness_check_ms = MonotonicNowMs() + options_.liveness_check_ms};
    if (pool_ != nullptr && !cgroup.empty()) {
      // Its cores stay out of the pool; a shared task keeps its cpuset until
      // the pool next changes (rewritten now, it could be widened onto an
      // exclusive task not adopted yet).
      if (!spec->request.limits.cpuset_cpus.empty()) {
        pool_->Hold(cgroup, spec->request.limits.cpuset_cpus);
      } else {
        pool_->Join(cgroup, pool_->generation(), spec->request.numa.cpus);
      }
    }
    adopted.running = true;
    return adopted;
  }
  // Dead without a record, unless it wrote one just before dying.
  if (auto record = ReadExitRecord(state_dir); record.ok()) {
    adopted.exit = FromRecord(*record);
    adopted.exit.pid = adopted.pid;
    return adopted;
  }
  adopted.exit = Lost(adopted.pid, state_dir, cgroup);
  return adopted;
}

}  // namespace gpool::worker
