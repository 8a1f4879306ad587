#include "worker/runner/task_exec.h"

#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
};
struct ChildError {
  Stage stage;
  int32_t err;
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
void PrivateHosts(const char* hosts_file) {
  if (unshare(CLONE_NEWNS) != 0) {
    return ChildSay("gpool-worker: no private /etc/hosts (unshare failed, errno ", errno);
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount(hosts_file, "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
    return ChildSay("gpool-worker: no private /etc/hosts (bind mount failed, errno ", errno);
  }
}

[[noreturn]] void RunChild(int err_fd, pid_t parent, char* const* argv, char* const* envp, const char* log_path,
                           const PreparedPinning& pinning, const std::vector<int>& cgroup_fds,
                           const ExecContext* exec, const char* hosts_file) {
  // Into the task's cgroup before anything else, so nothing it starts escapes.
  for (int fd : cgroup_fds) {
    if (write(fd, "0", 1) != 1) ChildFail(err_fd, Stage::kCgroup, errno);
  }
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect

  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  if (exec != nullptr) {
    // Into the task's mount namespace and directory before anything is opened by path.
    if (exec->mnt_ns_fd >= 0 && setns(exec->mnt_ns_fd, CLONE_NEWNS) != 0) {
      ChildFail(err_fd, Stage::kNamespace, errno);
    }
    if (exec->cwd_fd >= 0 && fchdir(exec->cwd_fd) != 0) ChildFail(err_fd, Stage::kCwd, errno);
  }
  // /dev/null first, so that if fd 0 is free it goes there and not to the log.
  int null_fd = open("/dev/null", O_RDONLY);
  const int out_fd = exec != nullptr ? exec->stdout_fd : open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int errs_fd = exec != nullptr ? exec->stderr_fd : out_fd;
  if (out_fd < 0 || errs_fd < 0) ChildFail(err_fd, Stage::kOpenLog, errno);
  if ((null_fd >= 0 && dup2(null_fd, STDIN_FILENO) < 0) || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(errs_fd, STDERR_FILENO) < 0) {
    ChildFail(err_fd, Stage::kRedirect, errno);
  }
  if (hosts_file != nullptr) PrivateHosts(hosts_file);
  if (exec != nullptr && exec->has_affinity) (void)sched_setaffinity(0, sizeof(exec->affinity), &exec->affinity);
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
                        const std::vector<int>& cgroup_fds, const ExecContext* exec) {
  GPOOL_RETURN_IF_ERROR(ValidateLaunch(request));
  const char* hosts_file = request.hosts_file.empty() || exec != nullptr ? nullptr : request.hosts_file.c_str();
  // Everything the child needs is built before fork: no allocation after.
  std::vector<char*> argv = CStrings(request.argv);
  std::vector<char*> envp = CStrings(request.env);

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
    RunChild(fds[1], parent, argv.data(), envp.data(), request.log_path.c_str(), pinning, cgroup_fds, exec,
             hosts_file);
  }

  close(fds[1]);
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
  if (!failed) return forked;

  // The child could not exec and has exited 127; collect it.
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
      return Status::FailedPrecondition("cannot enter the task's mount namespace: " + reason);
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
                            const std::vector<int>& cgroup_fds) {
  return Fork(request, pinning, cgroup_fds, nullptr);
}

Result<ForkedTask> ForkExec(const LaunchRequest& request, const ExecContext& context,
                            const std::vector<int>& cgroup_fds) {
  return Fork(request, PreparedPinning{}, cgroup_fds, &context);
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
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t ignored = write(fd, line.data(), line.size());
  (void)ignored;
  close(fd);
}

}  // namespace gpool::worker
