#include "worker/runner/posix_process_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "protocol/base/text.h"
#include "worker/log.h"
#include "worker/runner/numa_apply.h"

namespace gpool::worker {
namespace {

// What the child reports through the pipe: why it cannot exec (fatal,
// the child exits), or a pinning call that failed (it goes on to exec).
enum class Stage : int32_t { kOpenLog = 1, kRedirect = 2, kExec = 3, kPinCpus = 4, kPinMemory = 5, kCgroup = 6 };
struct ChildError {
  Stage stage;
  int32_t err;
};
bool IsWarning(Stage stage) { return stage == Stage::kPinCpus || stage == Stage::kPinMemory; }

// Only async-signal-safe calls from here on: the worker has other threads
// (ZeroMQ's) whose locks may be held at fork time.
void ChildReport(int fd, Stage stage, int err) {
  ChildError e{stage, err};
  ssize_t ignored = write(fd, &e, sizeof(e));
  (void)ignored;
}

[[noreturn]] void ChildFail(int fd, Stage stage, int err) {
  ChildReport(fd, stage, err);
  _exit(127);
}

void CloseFdsFrom(unsigned first, unsigned last) {
  if (first > last) return;
  if (close_range(first, last, 0) == 0) return;
  // Kernels before 5.9: close one by one up to the descriptor limit.
  struct rlimit limit {};
  unsigned max = 65536;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < max) {
    max = static_cast<unsigned>(limit.rlim_cur);
  }
  for (unsigned fd = first; fd <= last && fd < max; ++fd) close(static_cast<int>(fd));
}

[[noreturn]] void RunChild(int err_fd, pid_t parent, char* const* argv, char* const* envp, const char* log_path,
                           const PreparedPinning& pinning, const std::vector<int>& cgroup_fds) {
  // Into the task's cgroup before anything else, so nothing it starts escapes.
  for (int fd : cgroup_fds) {
    if (write(fd, "0", 1) != 1) ChildFail(err_fd, Stage::kCgroup, errno);
  }
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the worker died before prctl took effect

  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  // /dev/null first, so that if fd 0 is free it goes there and not to the log.
  int null_fd = open("/dev/null", O_RDONLY);
  int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log_fd < 0) ChildFail(err_fd, Stage::kOpenLog, errno);
  if ((null_fd >= 0 && dup2(null_fd, STDIN_FILENO) < 0) || dup2(log_fd, STDOUT_FILENO) < 0 ||
      dup2(log_fd, STDERR_FILENO) < 0) {
    ChildFail(err_fd, Stage::kRedirect, errno);
  }
  if (int err = pinning.ApplyCpus(); err != 0) ChildReport(err_fd, Stage::kPinCpus, err);
  if (int err = pinning.ApplyMemory(); err != 0) ChildReport(err_fd, Stage::kPinMemory, err);
  const unsigned keep = static_cast<unsigned>(err_fd);
  CloseFdsFrom(3, keep - 1);
  CloseFdsFrom(keep + 1, UINT_MAX);

  ::environ = const_cast<char**>(envp);  // execvp searches the task's PATH
  execvp(argv[0], argv);
  ChildFail(err_fd, Stage::kExec, errno);
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void AppendLine(const std::string& path, const std::string& line) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t ignored = write(fd, line.data(), line.size());
  (void)ignored;
  close(fd);
}

}  // namespace

PosixProcessLauncher::PosixProcessLauncher(std::shared_ptr<spdlog::logger> logger, CgroupTree* cgroups)
    : log_(OrDefault(std::move(logger))), cgroups_(cgroups) {}

Result<std::unique_ptr<TaskCgroup>> PosixProcessLauncher::NewCgroup(const LaunchRequest& request) {
  auto cgroup = cgroups_->Create(request.cgroup, request.limits);
  if (cgroup.ok() || cgroup.status().code() != StatusCode::kAlreadyExists) return cgroup;
  // Left by a worker process that died: whatever still runs there is an
  // old copy of this task and must not run beside the new one.
  auto old = cgroups_->Adopt(request.cgroup);
  const size_t left = old->Pids().size();
  GPOOL_RETURN_IF_ERROR(old->Drain());
  log_->warn("task cgroup left by a previous worker emptied cgroup={} processes_killed={}", request.cgroup, left);
  return cgroups_->Create(request.cgroup, request.limits);
}

Result<int64_t> PosixProcessLauncher::Launch(const LaunchRequest& request) {
  if (request.argv.empty() || request.argv[0].empty()) return Status::InvalidArgument("command: empty");
  for (const auto& s : request.argv) {
    if (HasNul(s)) return Status::InvalidArgument("command: an argument holds a NUL byte");
  }
  for (const auto& s : request.env) {
    if (HasNul(s) || s.find('=') == std::string::npos) {
      return Status::InvalidArgument("env: entries must be KEY=value without NUL bytes");
    }
  }
  // Everything the child needs is built before fork: no allocation after.
  std::vector<char*> argv = CStrings(request.argv);
  std::vector<char*> envp = CStrings(request.env);
  std::vector<std::string> notes;
  const PreparedPinning pinning = PreparedPinning::Prepare(request.numa, &notes);
  std::unique_ptr<TaskCgroup> cgroup;
  if (cgroups_ != nullptr && !request.cgroup.empty()) {
    auto made = NewCgroup(request);
    if (!made.ok()) return made.status().WithContext("task cgroup");
    cgroup = std::move(made).value();
  }
  static const std::vector<int> kNoCgroup;
  const std::vector<int>& cgroup_fds = cgroup ? cgroup->JoinFds() : kNoCgroup;
  for (const auto& note : notes) log_->info("numa pinning adjusted log={} note={}", Q(request.log_path), Q(note));

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe2: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return Status::ResourceExhausted(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    close(fds[0]);
    RunChild(fds[1], parent, argv.data(), envp.data(), request.log_path.c_str(), pinning, cgroup_fds);
  }

  close(fds[1]);
  if (cgroup) cgroup->CloseJoinFds();
  setpgid(pid, pid);  // also in the parent, so Signal cannot race the child's own setpgid
  // Records until EOF (the exec closed the pipe) or a fatal one.
  ChildError error{};
  std::vector<ChildError> warnings;
  bool failed = false;
  for (;;) {
    ssize_t n;
    do {
      n = read(fds[0], &error, sizeof(error));
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof(error))) break;
    if (!IsWarning(error.stage)) {
      failed = true;
      break;
    }
    warnings.push_back(error);
  }
  close(fds[0]);
  if (!failed) {
    children_.insert(pid);
    if (cgroup) task_cgroups_[pid] = std::move(cgroup);
    for (const ChildError& w : warnings) ReportPinningFailure(pid, request, pinning, w.stage == Stage::kPinCpus, w.err);
    return static_cast<int64_t>(pid);
  }

  // The child could not exec and has exited 127; collect it.
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (cgroup) (void)cgroup->Remove();  // empty: its only process was reaped above
  const std::string reason = std::strerror(error.err);
  switch (error.stage) {
    case Stage::kOpenLog:
      return Status::IoError("cannot open log file " + request.log_path + ": " + reason);
    case Stage::kRedirect:
      return Status::IoError("cannot redirect output to " + request.log_path + ": " + reason);
    case Stage::kCgroup:
      return Status::Unavailable("cannot join the task's cgroup " + request.cgroup + ": " + reason);
    case Stage::kExec:
    case Stage::kPinCpus:
    case Stage::kPinMemory:
      break;
  }
  const std::string message = "cannot run '" + request.argv[0] + "': " + reason;
  AppendLine(request.log_path, "gpool-worker: " + message + "\n");
  if (error.err == ENOENT) return Status::NotFound(message);
  if (error.err == EACCES || error.err == EPERM) return Status::FailedPrecondition(message);
  return Status::Internal(message);
}

void PosixProcessLauncher::ReportPinningFailure(int64_t pid, const LaunchRequest& request,
                                                const PreparedPinning& pinning, bool cpus, int err) {
  const std::string what = cpus ? "CPU affinity " + pinning.cpu_list()
                                : std::string("memory policy ") + pinning.mode_name() + " to NUMA nodes " +
                                      pinning.node_list();
  const std::string reason = std::strerror(err);
  log_->warn("task numa pinning failed, running without it pid={} what={} error={} log={}", pid, Q(what), Q(reason),
             Q(request.log_path));
  AppendLine(request.log_path, "gpool-worker: could not set " + what + ": " + reason + "; the task runs without it\n");
}

Status PosixProcessLauncher::Signal(int64_t pid, int signal) {
  if (!children_.count(pid) && !draining_.count(pid)) {
    return Status::NotFound("pid " + std::to_string(pid) + " is not a running task");
  }
  // Every process of the task, wherever it moved (setsid, setpgid, re-parented).
  if (auto it = task_cgroups_.find(pid); it != task_cgroups_.end()) it->second->SignalAll(signal);
  if (!children_.count(pid)) return Status::Ok();  // its first process is gone; the rest were signalled
  const auto p = static_cast<pid_t>(pid);
  if (kill(-p, signal) == 0) return Status::Ok();
  if (errno == ESRCH && kill(p, signal) == 0) return Status::Ok();
  return Status::Internal("kill(" + std::to_string(pid) + ", " + std::to_string(signal) + "): " + std::strerror(errno));
}

std::vector<ExitInfo> PosixProcessLauncher::Reap() {
  std::vector<ExitInfo> exited;
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
    task_cgroups_.erase(cgroup);
    exited.push_back(it->second);
    it = draining_.erase(it);
  }
  return exited;
}

}  // namespace gpool::worker
