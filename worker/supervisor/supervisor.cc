#include "worker/supervisor/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include "protocol/base/clock.h"
#include "protocol/wire.h"
#include "worker/runner/lease_file.h"
#include "worker/runner/supervisor_state.h"
#include "worker/runner/task_cgroup.h"
#include "worker/runner/task_exec.h"
#include "protocol/base/write_all.h"

namespace gpool::worker {
namespace {

// One line on stderr (the supervisor's log), with the wall-clock time.
template <typename... Args>
void Say(const char* format, Args... args) {
  std::fprintf(stderr, "%lld gpool-task-supervisor[%d]: ", static_cast<long long>(SystemClock::Get().WallMs()),
               static_cast<int>(getpid()));
  std::fprintf(stderr, format, args...);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void SendHello(int fd, const SupervisorHello& hello) {
  if (fd < 0) return;
  const std::string bytes = wire::PackToString(hello);
  // A failure means the launcher is gone (EPIPE): the start record tells a
  // restarted worker.
  (void)WriteAll(fd, bytes);
  close(fd);
}

int FailStart(int status_fd, const Status& status) {
  Say("task not started: %s", status.ToString().c_str());
  SendHello(status_fd, SupervisorHello{.ok = false, .code = static_cast<uint32_t>(status.code()),
                                       .message = status.message()});
  return 1;
}

// Waits until nothing runs in the task's cgroup, killing what is there (a
// process in uninterruptible sleep can take a while to die; the exit record
// must not come before), then removes it.
void Empty(TaskCgroup& cgroup) {
  int64_t next_note = MonotonicNowMs() + 5'000;
  while (!cgroup.Empty()) {
    cgroup.KillAll();
    poll(nullptr, 0, 5);
    if (MonotonicNowMs() >= next_note) {
      next_note += 5'000;
      Say("the task's cgroup %s is not empty yet: %zu processes", cgroup.name().c_str(), cgroup.Pids().size());
    }
  }
  if (Status removed = cgroup.Remove(); !removed.ok()) Say("%s", removed.ToString().c_str());
}

}  // namespace

Result<SupervisorOptions> ParseSupervisorArgs(int argc, const char* const* argv) {
  SupervisorOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--detach") {
      options.detach = true;
      continue;
    }
    if (i + 1 >= argc) return Status::InvalidArgument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--state-dir") {
      options.state_dir = value;
    } else if (flag == "--lease") {
      options.lease_path = value;
    } else if (flag == "--status-fd") {
      int fd = -1;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), fd);
      if (ec != std::errc() || end != value.data() + value.size() || fd < 0) {
        return Status::InvalidArgument("--status-fd: '" + value + "' is not a descriptor");
      }
      options.status_fd = fd;
    } else {
      return Status::InvalidArgument("unknown flag " + flag);
    }
  }
  if (options.state_dir.empty()) return Status::InvalidArgument("--state-dir is required");
  return options;
}

int RunSupervisor(const SupervisorOptions& options) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
  // SIGCHLD is waited for with sigtimedwait; the task's child resets its mask.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  if (options.status_fd >= 0) fcntl(options.status_fd, F_SETFD, FD_CLOEXEC);

  const std::string& dir = options.state_dir;
  // Held until exit: it is how the worker knows this supervisor lives.
  const int lock_fd = open(SupervisorLockPath(dir).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    return FailStart(options.status_fd, Status::IoError("cannot open " + SupervisorLockPath(dir) + ": " +
                                                            std::strerror(errno)));
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    return FailStart(options.status_fd, Status::AlreadyExists("another supervisor holds " + dir));
  }
  auto spec = ReadSupervisorSpec(dir);
  if (!spec.ok()) return FailStart(options.status_fd, spec.status());
  const LaunchRequest& request = spec->request;
  // The lease deadline last read; a read that fails later (the worker
  // replacing the file, a disk error) falls back on it rather than killing a
  // task whose node still holds its lease.
  int64_t lease_deadline = 0;
  if (!options.lease_path.empty()) {
    if (Status lease = CheckLease(options.lease_path, MonotonicNowMs()); !lease.ok()) {
      return FailStart(options.status_fd,
                       Status::FailedPrecondition(std::string(kNoLeaseStart) + ": " + lease.message()));
    }
    (void)CheckLeaseKeepingLast(options.lease_path, MonotonicNowMs(), &lease_deadline);
  }

  std::unique_ptr<CgroupTree> tree;
  std::unique_ptr<TaskCgroup> cgroup;
  if (!spec->cgroup_root.empty() && !request.cgroup.empty()) {
    auto opened = CgroupTree::Open(spec->cgroup_root, spec->cgroup_scope);
    if (!opened.ok()) return FailStart(options.status_fd, opened.status().WithContext("task cgroup"));
    tree = std::move(opened).value();
    tree->KeepSubtree();  // the worker's, shared with every other task
    size_t killed = 0;
    auto made = tree->CreateReplacing(request.cgroup, request.limits, &killed);
    if (!made.ok()) return FailStart(options.status_fd, made.status().WithContext("task cgroup"));
    if (killed > 0) Say("emptied a cgroup of the same name left behind: %zu processes killed", killed);
    cgroup = std::move(made).value();
  }

  std::vector<std::string> notes;
  const PreparedPinning pinning = PreparedPinning::Prepare(request.numa, &notes);
  for (const auto& note : notes) Say("numa pinning adjusted: %s", note.c_str());
  static const std::vector<int> kNoCgroup;
  auto forked = ForkTask(request, pinning, cgroup ? cgroup->JoinFds() : kNoCgroup, request.own_pid_namespace);
  if (cgroup) cgroup->CloseJoinFds();
  if (!forked.ok()) {
    if (cgroup) (void)cgroup->Remove();  // empty: its only process was reaped
    return FailStart(options.status_fd, forked.status());
  }
  const pid_t pid = forked->pid;
  SupervisorHello hello{.ok = true, .pid = pid};
  for (const PinningFailure& failure : forked->pinning_failures) {
    AppendLine(request.log_path, PinningFailureLogLine(pinning, failure));
    hello.warnings.push_back(PinningFailureWhat(pinning, failure) + ": " + std::strerror(failure.err));
  }
  if (Status recorded = WriteStartRecord(dir, StartRecord{.pid = pid,
                                                          .supervisor_pid = getpid(),
                                                          .start_time_ms = SystemClock::Get().WallMs()});
      !recorded.ok()) {
    // Unrecorded, a restarted worker could not find it: not started.
    kill(-pid, SIGKILL);
    if (cgroup) Empty(*cgroup);
    waitpid(pid, nullptr, 0);
    if (forked->status_fd >= 0) close(forked->status_fd);
    return FailStart(options.status_fd, recorded);
  }
  Say("task started pid=%d", static_cast<int>(pid));
  SendHello(options.status_fd, hello);

  // Waits for the first process, checking the lease between.
  int wstatus = 0;
  std::string reason = kExitReasonExited;
  int64_t next_lease_check = MonotonicNowMs() + options.lease_check_ms;
  for (;;) {
    const pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    int64_t wait_ms = 1'000;
    if (!options.lease_path.empty()) {
      const int64_t now = MonotonicNowMs();
      if (now >= next_lease_check) {
        next_lease_check = now + options.lease_check_ms;
        Status lease = CheckLeaseKeepingLast(options.lease_path, now, &lease_deadline);
        if (!lease.ok()) {
          Say("killing the task: %s", lease.ToString().c_str());
          reason = std::string(kExitReasonLeaseExpired) + ": " + lease.message();
          if (cgroup) cgroup->KillAll();  // frozen first: nothing forks past the kill
          kill(-pid, SIGKILL);
          while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
          }
          break;
        }
      }
      wait_ms = std::max<int64_t>(1, next_lease_check - now);
    }
    const struct timespec timeout {
      .tv_sec = static_cast<time_t>(wait_ms / 1000), .tv_nsec = static_cast<long>(wait_ms % 1000) * 1'000'000
    };
    sigtimedwait(&chld, nullptr, &timeout);
  }

  // In its own PID namespace the first process is the task's init; what
  // the program itself ended with comes through the status pipe.
  wstatus = ReadTaskWaitStatus(forked->status_fd, wstatus);
  ExitRecord record;
  record.pid = pid;
  record.reason = reason;
  if (WIFEXITED(wstatus)) {
    record.exit_code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    record.signal = WTERMSIG(wstatus);
    record.exit_code = 128 + record.signal;
  }
  // A task ends with its first process: what it left is killed, and the
  // record is written only once nothing of it runs.
  kill(-pid, SIGKILL);
  if (cgroup) Empty(*cgroup);
  record.end_time_ms = SystemClock::Get().WallMs();
  Status written = WriteExitRecord(dir, record);
  for (int retry = 0; !written.ok() && retry < 50; ++retry) {  // a full disk may free up
    Say("cannot write the exit record: %s", written.ToString().c_str());
    poll(nullptr, 0, 100);
    written = WriteExitRecord(dir, record);
  }
  Say("task ended pid=%d exit_code=%d signal=%d reason=%s", static_cast<int>(pid), record.exit_code, record.signal,
      record.reason.c_str());
  return written.ok() ? 0 : 1;
}

}  // namespace gpool::worker
