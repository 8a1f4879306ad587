#include "worker/runner/task_exec.h"

#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "protocol/base/text.h"

namespace gpool::worker {
namespace {

// What the child reports through the pipe: why it cannot exec (fatal,
// the child exits), or a pinning call that failed (it goes on to exec).
enum class Stage : int32_t {
  kOpenLog = 1,
  kRedirect = 2,
  kExec = 3,
  kPinCpus = 4,
  kPinMemory = 5,
  kCgroup = 6,
  kNamespace = 7,
  kCwd = 8,
  kIdentity = 9,
  kFork = 10,
  kProc = 11,
};
struct ChildError {
  Stage stage;
  int32_t err;
};
// What isolation the child applies (LaunchRequest), in plain data made
// before fork.
struct ChildIdentity {
  bool set = false;
  uint32_t uid = 0;
  uint32_t gid = 0;
  bool no_new_privs = false;
};
struct ChildIsolation {
  ChildIdentity identity;
  bool pid_namespace = false;  // the task's own (the parent unshared CLONE_NEWPID)
  int status_fd = -1;          // pid_namespace: where the init writes the task's wait status
  const char* work_dir = nullptr;
};

bool IsWarning(Stage stage) { return stage == Stage::kPinCpus || stage == Stage::kPinMemory; }

// Only async-signal-safe calls from here on: the parent may have other
// threads whose locks are held at fork time.
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

// Writes `text` and a decimal `number` to fd 2 (the task's log), without
// allocating: the child may only make async-signal-safe calls.
void ChildSay(const char* text, int number) {
  char digits[16];
  int n = 0;
  unsigned value = number < 0 ? 0u : static_cast<unsigned>(number);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && n < 15);
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  char out[16];
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\n';
  ignored = write(STDERR_FILENO, out, static_cast<size_t>(n + 1));
  (void)ignored;
}

// A private mount namespace with `hosts_file` over /etc/hosts
// (task_exec.h); a failure is said in the log and the task runs without it.
void PrivateHosts(const char* hosts_file, bool own_mount_ns) {
  if (!own_mount_ns && unshare(CLONE_NEWNS) != 0) {
    return ChildSay("gpool-worker: no private /etc/hosts (unshare failed, errno ", errno);
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount(hosts_file, "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
    return ChildSay("gpool-worker: no private /etc/hosts (bind mount failed, errno ", errno);
  }
}

// The task's own mount namespace with a /proc of its own PID namespace
// (the caller unshared CLONE_NEWPID before fork, so this child is its pid
// 1): /proc then shows only the task's processes. Private first, so
// nothing mounted here propagates back to the host.
int OwnMountsAndProc() {
  if (unshare(CLONE_NEWNS) != 0) return errno;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) return errno;
  return 0;
}

// Drops to the task's identity: no supplementary groups, gid, uid (real,
// effective and saved, so it cannot be taken back), and no new privileges
// through set-uid files or file capabilities. Raw syscalls: glibc's
// wrappers coordinate every thread of the process, and after fork there is
// only this one. Going from uid 0 to another uid clears every capability.
int DropIdentity(const ChildIdentity& id) {
  if (id.set) {
    const gid_t groups[1] = {static_cast<gid_t>(id.gid)};
    if (syscall(SYS_setgroups, 1, groups) != 0) return errno;
    if (syscall(SYS_setresgid, id.gid, id.gid, id.gid) != 0) return errno;
    if (syscall(SYS_setresuid, id.uid, id.uid, id.uid) != 0) return errno;
  }
  if (id.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  return 0;
}

// The task's init: pid 1 of its PID namespace, it has forked the task
// (`child`) and reaps everything re-parented to it until the task's first
// process ends, then hands that wait status to the supervisor through
// `status_fd` (an exit code alone cannot say "killed by SIGTERM": pid 1
// cannot be killed by its own signal) and exits, which kills what is left
// in the namespace. It installs no handler: the supervisor's and worker's
// signals go to the task's process group, whose members get them; pid 1
// itself only dies of SIGKILL.
[[noreturn]] void RunInit(pid_t child, int status_fd) {
  int wstatus = 0;
  for (;;) {
    int st = 0;
    const pid_t r = wait(&st);
    if (r == child) {
      wstatus = st;
      break;
    }
    if (r < 0 && errno != EINTR) break;
  }
  ssize_t ignored = write(status_fd, &wstatus, sizeof(wstatus));
  (void)ignored;
  _exit(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
}

// A `gpool exec` command's first process when the task has its own PID
// namespace: it has setns'ed into it, so only its child (`child`) is inside.
// It waits for that child and ends the same way (the same exit code, or
// killed by the same signal), so ExecManager reports the command's status.
// Signals sent to the command's process group reach the child directly;
// this process ignores them so that a trapped SIGTERM does not end it first.
[[noreturn]] void RunExecRelay(pid_t child) {
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD) sigaction(sig, &ign, nullptr);
  }
  int wstatus = 0;
  while (waitpid(child, &wstatus, 0) < 0) {
    if (errno != EINTR) _exit(127);
  }
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    struct rlimit no_core {};
    setrlimit(RLIMIT_CORE, &no_core);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WEXITSTATUS(wstatus));
}

[[noreturn]] void RunChild(int err_fd, pid_t parent, char* const* argv, char* const* envp, const char* log_path,
                           const PreparedPinning& pinning, const std::vector<int>& cgroup_fds,
                           const ExecContext* exec, const char* hosts_file, const ChildIsolation& iso) {
  // Into the task's cgroup before anything else, so nothing it starts escapes.
  for (int fd : cgroup_fds) {
    if (write(fd, "0", 1) != 1) ChildFail(err_fd, Stage::kCgroup, errno);
  }
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent died before prctl took effect. As pid 1 of a new namespace
  // the parent is outside it and getppid() says 0: the supervisor forks
  // this child and nothing else, and its death kills us through the
  // signal above from here on.
  if (!iso.pid_namespace && getppid() != parent) _exit(127);

  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  if (exec != nullptr) {
    // Into the task's namespaces and directory before anything is opened by
    // path; the PID namespace holds only for this process's children.
    if (exec->pid_ns_fd >= 0 && setns(exec->pid_ns_fd, CLONE_NEWPID) != 0) {
      ChildFail(err_fd, Stage::kNamespace, errno);
    }
    if (exec->mnt_ns_fd >= 0 && setns(exec->mnt_ns_fd, CLONE_NEWNS) != 0) {
      ChildFail(err_fd, Stage::kNamespace, errno);
    }
    if (exec->cwd_fd >= 0 && fchdir(exec->cwd_fd) != 0) ChildFail(err_fd, Stage::kCwd, errno);
  }
  if (iso.pid_namespace) {
    // Isolation was asked for: the task does not run without it.
    if (int err = OwnMountsAndProc(); err != 0) ChildFail(err_fd, Stage::kProc, err);
  }
  // /dev/null first, so that if fd 0 is free it goes there and not to the log.
  int null_fd = open("/dev/null", O_RDONLY);
  const int out_fd = exec != nullptr ? exec->stdout_fd : open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
  const int errs_fd = exec != nullptr ? exec->stderr_fd : out_fd;
  if (out_fd < 0 || errs_fd < 0) ChildFail(err_fd, Stage::kOpenLog, errno);
  if ((null_fd >= 0 && dup2(null_fd, STDIN_FILENO) < 0) || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(errs_fd, STDERR_FILENO) < 0) {
    ChildFail(err_fd, Stage::kRedirect, errno);
  }
  if (hosts_file != nullptr) PrivateHosts(hosts_file, iso.pid_namespace);
  if (iso.work_dir != nullptr && chdir(iso.work_dir) != 0) ChildFail(err_fd, Stage::kCwd, errno);
  if (exec != nullptr && exec->has_affinity) (void)sched_setaffinity(0, sizeof(exec->affinity), &exec->affinity);
  if (int err = pinning.ApplyCpus(); err != 0) ChildReport(err_fd, Stage::kPinCpus, err);
  if (int err = pinning.ApplyMemory(); err != 0) ChildReport(err_fd, Stage::kPinMemory, err);
  // Last of what needs root: from here on the process is the task's user.
  if (int err = DropIdentity(iso.identity); err != 0) ChildFail(err_fd, Stage::kIdentity, err);
  if (iso.identity.set) {
    // A change of uid clears the parent-death signal: set it again, and
    // look once more whether the parent went meanwhile.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!iso.pid_namespace && getppid() != parent) _exit(127);
  }
  const unsigned keep = static_cast<unsigned>(err_fd);
  const unsigned keep2 = iso.status_fd >= 0 ? static_cast<unsigned>(iso.status_fd) : keep;
  const unsigned lo = keep < keep2 ? keep : keep2;
  const unsigned hi = keep < keep2 ? keep2 : keep;
  CloseFdsFrom(3, lo - 1);
  CloseFdsFrom(lo + 1, hi - 1);
  CloseFdsFrom(hi + 1, UINT_MAX);

  ::environ = const_cast<char**>(envp);  // execvp searches the task's PATH
  const bool relay = iso.pid_namespace || (exec != nullptr && exec->pid_ns_fd >= 0);
  if (relay) {
    // The program runs in a child: this process stays as the task's init
    // (RunInit) or the exec command's relay (RunExecRelay).
    const pid_t child = fork();
    if (child < 0) ChildFail(err_fd, Stage::kFork, errno);
    if (child == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (iso.status_fd >= 0) close(iso.status_fd);
      execvp(argv[0], argv);
      ChildFail(err_fd, Stage::kExec, errno);
    }
    close(err_fd);  // the launcher sees EOF once the child has exec'd
    if (iso.pid_namespace) RunInit(child, iso.status_fd);
    RunExecRelay(child);
  }
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

}  // namespace

Status ValidateLaunch(const LaunchRequest& request) {
  if (request.argv.empty() || request.argv[0].empty()) return Status::InvalidArgument("command: empty");
  for (const auto& s : request.argv) {
    if (HasNul(s)) return Status::InvalidArgument("command: an argument holds a NUL byte");
  }
  for (const auto& s : request.env) {
    if (HasNul(s) || s.find('=') == std::string::npos) {
      return Status::InvalidArgument("env: entries must be KEY=value without NUL bytes");
    }
  }
  return Status::Ok();
}

namespace {

Result<ForkedTask> Fork(const LaunchRequest& request, const PreparedPinning& pinning,
                        const std::vector<int>& cgroup_fds, const ExecContext* exec, bool own_pid_namespace) {
  GPOOL_RETURN_IF_ERROR(ValidateLaunch(request));
  const char* hosts_file = request.hosts_file.empty() || exec != nullptr ? nullptr : request.hosts_file.c_str();
  // Everything the child needs is built before fork: no allocation after.
  std::vector<char*> argv = CStrings(request.argv);
  std::vector<char*> envp = CStrings(request.env);
  ChildIsolation iso;
  const TaskIdentity& identity = exec != nullptr ? exec->identity : request.identity;
  iso.identity = ChildIdentity{.set = identity.set, .uid = identity.uid, .gid = identity.gid,
                               // Isolated tasks and commands get no new privileges, root or not.
                               .no_new_privs = identity.set || own_pid_namespace ||
                                               (exec != nullptr && exec->pid_ns_fd >= 0)};
  iso.pid_namespace = own_pid_namespace && exec == nullptr;
  iso.work_dir = exec == nullptr && !request.work_dir.empty() ? request.work_dir.c_str() : nullptr;

  int status_fds[2] = {-1, -1};
  if (iso.pid_namespace) {
    // This process's next child is pid 1 of a new namespace (ForkTask's
    // contract: a caller that forks nothing else after it).
    if (unshare(CLONE_NEWPID) != 0) {
      return Status::FailedPrecondition(std::string("cannot give the task its own PID namespace: ") +
                                        std::strerror(errno));
    }
    if (pipe2(status_fds, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe2: ") + std::strerror(errno));
    iso.status_fd = status_fds[1];
  }
  auto close_status = [&] {
    for (int& fd : status_fds) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  };
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    close_status();
    return Status::IoError(std::string("pipe2: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    close_status();
    return Status::ResourceExhausted(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    close(fds[0]);
    if (status_fds[0] >= 0) close(status_fds[0]);
    RunChild(fds[1], parent, argv.data(), envp.data(), request.log_path.c_str(), pinning, cgroup_fds, exec,
             hosts_file, iso);
  }

  close(fds[1]);
  if (status_fds[1] >= 0) {
    close(status_fds[1]);
    status_fds[1] = -1;
  }
  setpgid(pid, pid);  // also in the parent, so a signal cannot race the child's own setpgid
  // Records until EOF (the exec closed the pipe) or a fatal one.
  ChildError error{};
  ForkedTask forked;
  forked.pid = pid;
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
    forked.pinning_failures.push_back({.cpus = error.stage == Stage::kPinCpus, .err = error.err});
  }
  close(fds[0]);
  if (!failed) {
    forked.status_fd = status_fds[0];
    return forked;
  }

  // The child could not exec and has exited 127; collect it.
  close_status();
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  const std::string reason = std::strerror(error.err);
  switch (error.stage) {
    case Stage::kOpenLog:
      return Status::IoError("cannot open log file " + request.log_path + ": " + reason);
    case Stage::kRedirect:
      return Status::IoError("cannot redirect output to " + request.log_path + ": " + reason);
    case Stage::kCgroup:
      return Status::Unavailable("cannot join the task's cgroup " + request.cgroup + ": " + reason);
    case Stage::kNamespace:
      return Status::FailedPrecondition("cannot enter the task's namespaces: " + reason);
    case Stage::kProc:
      return Status::FailedPrecondition("cannot give the task its own mounts and /proc: " + reason);
    case Stage::kIdentity:
      return Status::FailedPrecondition("cannot run as uid " + std::to_string(identity.uid) + " gid " +
                                        std::to_string(identity.gid) + ": " + reason);
    case Stage::kFork:
      return Status::ResourceExhausted("fork in the task's namespace: " + reason);
    case Stage::kCwd:
      return Status::FailedPrecondition("cannot enter the task's working directory: " + reason);
    case Stage::kExec:
    case Stage::kPinCpus:
    case Stage::kPinMemory:
      break;
  }
  const std::string message = "cannot run '" + request.argv[0] + "': " + reason;
  if (exec == nullptr) AppendLine(request.log_path, "gpool-worker: " + message + "\n");
  if (error.err == ENOENT) return Status::NotFound(message);
  if (error.err == EACCES || error.err == EPERM) return Status::FailedPrecondition(message);
  return Status::Internal(message);
}

}  // namespace

Result<ForkedTask> ForkTask(const LaunchRequest& request, const PreparedPinning& pinning,
                            const std::vector<int>& cgroup_fds, bool own_pid_namespace) {
  return Fork(request, pinning, cgroup_fds, nullptr, own_pid_namespace);
}

Result<ForkedTask> ForkExec(const LaunchRequest& request, const ExecContext& context,
                            const std::vector<int>& cgroup_fds) {
  return Fork(request, PreparedPinning{}, cgroup_fds, &context, false);
}

int ReadTaskWaitStatus(int status_fd, int fallback) {
  if (status_fd < 0) return fallback;
  int wstatus = 0;
  ssize_t n;
  do {
    n = read(status_fd, &wstatus, sizeof(wstatus));
  } while (n < 0 && errno == EINTR);
  close(status_fd);
  return n == static_cast<ssize_t>(sizeof(wstatus)) ? wstatus : fallback;
}

std::string PinningFailureWhat(const PreparedPinning& pinning, const PinningFailure& failure) {
  return failure.cpus ? "CPU affinity " + pinning.cpu_list()
                      : std::string("memory policy ") + pinning.mode_name() + " to NUMA nodes " + pinning.node_list();
}

std::string PinningFailureLogLine(const PreparedPinning& pinning, const PinningFailure& failure) {
  return "gpool-worker: could not set " + PinningFailureWhat(pinning, failure) + ": " + std::strerror(failure.err) +
         "; the task runs without it\n";
}

void AppendLine(const std::string& path, const std::string& line) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t ignored = write(fd, line.data(), line.size());
  (void)ignored;
  close(fd);
}

}  // namespace gpool::worker
