#include "worker/health/service_check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "protocol/base/disk_guard.h"
#include "protocol/base/text.h"
#include "protocol/health.h"
#include "worker/log.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;

// The kernel keeps 15 bytes of a process's name (TASK_COMM_LEN 16 with NUL).
constexpr std::string_view kSvcFabricManagerComm = "nv-fabricmanager";
constexpr size_t kSvcCommLen = 15;

bool SvcIsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::optional<std::string> SvcReadFirstLine(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  return std::string(TrimSpace(line));
}

// Whether any entry of `dir` starts with `prefix`; nullopt when it cannot be
// listed.
std::optional<bool> SvcAnyEntryWithPrefix(const fs::path& dir, std::string_view prefix) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return std::nullopt;
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    if (it->path().filename().string().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Whether a process of that name runs; nullopt when proc cannot be listed.
std::optional<bool> SvcProcessRuns(const std::string& proc_root, std::string_view comm) {
  std::error_code ec;
  fs::directory_iterator it(proc_root, ec);
  if (ec) return std::nullopt;
  const std::string_view cut = comm.substr(0, kSvcCommLen);
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    const std::string pid = it->path().filename().string();
    if (!SvcIsDigits(pid)) continue;
    auto name = SvcReadFirstLine(it->path() / "comm");  // a process may exit meanwhile
    if (name && (*name == comm || *name == cut)) return true;
  }
  return false;
}

// Whether <proc_root>/modules lists `module`; nullopt when unreadable.
std::optional<bool> SvcModuleLoaded(const std::string& proc_root, std::string_view module) {
  std::ifstream in(fs::path(proc_root) / "modules");
  if (!in) return std::nullopt;
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (std::string_view(line).substr(0, space) == module) return true;
  }
  if (in.bad()) return std::nullopt;
  return false;
}

}  // namespace

std::optional<NvswitchMode> NvswitchModeFromString(std::string_view s) {
  if (s == "auto") return NvswitchMode::kAuto;
  if (s == "yes") return NvswitchMode::kYes;
  if (s == "no") return NvswitchMode::kNo;
  return std::nullopt;
}

std::optional<PeermemMode> PeermemModeFromString(std::string_view s) {
  if (s == "auto") return PeermemMode::kAuto;
  if (s == "required") return PeermemMode::kRequired;
  if (s == "off") return PeermemMode::kOff;
  return std::nullopt;
}

// --- ChildCommand ---

Result<std::unique_ptr<ChildCommand>> ChildCommand::Start(const std::vector<std::string>& argv, int64_t now_mono_ms,
                                                         int64_t timeout_ms) {
  if (argv.empty() || argv[0].empty()) return Status::InvalidArgument("empty command");
  for (const auto& word : argv) {
    if (HasNul(word)) return Status::InvalidArgument("command word holds a NUL byte");
  }
  // Everything the child needs is made before fork: no allocation after.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& word : argv) args.push_back(const_cast<char*>(word.c_str()));
  args.push_back(nullptr);
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  int fds[2] = {-1, -1};
  if (null_fd < 0 || pipe2(fds, O_CLOEXEC) != 0) {
    const int err = errno;
    if (null_fd >= 0) close(null_fd);
    return Status::IoError(std::string("command setup: ") + std::strerror(err));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    execvp(args[0], args.data());
    const int err = errno;
    ssize_t ignored = write(fds[1], &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  const int fork_err = errno;
  close(null_fd);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return Status::ResourceExhausted(std::string("fork: ") + std::strerror(fork_err));
  }
  // The pipe closes on a successful exec; an exec error arrives as its errno.
  int exec_err = 0;
  ssize_t got = 0;
  do {
    got = read(fds[0], &exec_err, sizeof(exec_err));
  } while (got < 0 && errno == EINTR);
  close(fds[0]);
  if (got == static_cast<ssize_t>(sizeof(exec_err))) {
    int ignored = 0;
    while (waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    return Status::NotFound("exec " + argv[0] + ": " + std::strerror(exec_err));
  }
  return std::unique_ptr<ChildCommand>(new ChildCommand(pid, now_mono_ms + timeout_ms));
}

ChildCommand::~ChildCommand() {
  if (reaped_) return;
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  int ignored = 0;
  while (waitpid(pid_, &ignored, 0) < 0 && errno == EINTR) {
  }
}

Status ChildCommand::StatusOfExit(int wait_status) {
  if (WIFEXITED(wait_status)) {
    const int code = WEXITSTATUS(wait_status);
    if (code == 0) return Status::Ok();
    return Status::Internal("exited with status " + std::to_string(code));
  }
  if (WIFSIGNALED(wait_status)) return Status::Internal("killed by signal " + std::to_string(WTERMSIG(wait_status)));
  return Status::Internal("ended with wait status " + std::to_string(wait_status));
}

std::optional<Status> ChildCommand::Poll(int64_t now_mono_ms) {
  if (reaped_) return Status::Internal("already collected");
  int wait_status = 0;
  pid_t got = 0;
  do {
    got = waitpid(pid_, &wait_status, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == pid_) {
    reaped_ = true;
    return StatusOfExit(wait_status);
  }
  if (got < 0) {
    reaped_ = true;  // not our child any more (reaped elsewhere)
    return Status::Internal(std::string("waitpid: ") + std::strerror(errno));
  }
  if (now_mono_ms < deadline_ms_) return std::nullopt;
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  while (waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return Status::DeadlineExceeded("killed at its timeout");
}

Status ChildCommand::Wait() {
  if (reaped_) return Status::Internal("already collected");
  int wait_status = 0;
  pid_t got = 0;
  do {
    got = waitpid(pid_, &wait_status, 0);
  } while (got < 0 && errno == EINTR);
  reaped_ = true;
  if (got < 0) return Status::Internal(std::string("waitpid: ") + std::strerror(errno));
  return StatusOfExit(wait_status);
}

// --- ServiceCheck ---

ServiceCheck::ServiceCheck(ServiceCheckOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &SystemClock::Get()),
      log_(OrDefault(options_.logger)) {
  if (!options_.free_bytes) options_.free_bytes = FreeBytes;
}

std::vector<HealthKind> ServiceCheck::kinds() const {
  return {HealthKind::kFabricmanagerDown, HealthKind::kPeermemMissing, HealthKind::kDiskLow,
          HealthKind::kCoordinatorUnreachable, HealthKind::kFabricmanagerRestart};
}

std::vector<HealthFinding> ServiceCheck::Run(int64_t /*wall_ms*/) {
  std::vector<HealthFinding> findings;
  CheckFabricManager(&findings);
  CheckPeermem(&findings);
  CheckDisk(&findings);
  CheckCoordinator(&findings);
  ReportRestart(&findings);
  return findings;
}

void ServiceCheck::CheckFabricManager(std::vector<HealthFinding>* findings) {
  bool nvswitch = false;
  switch (options_.nvswitch) {
    case NvswitchMode::kNo:
      return;
    case NvswitchMode::kYes:
      nvswitch = true;
      break;
    case NvswitchMode::kAuto:
      nvswitch = SvcAnyEntryWithPrefix(options_.dev_root, "nvidia-nvswitch").value_or(false);
      break;
  }
  if (restart_child_ != nullptr) PollRestart();
  if (!nvswitch) return;
  const std::optional<bool> runs = SvcProcessRuns(options_.proc_root, kSvcFabricManagerComm);
  if (!runs.has_value() || *runs) return;  // cannot look, or it runs
  std::string message = "NVSwitch system without a running nv-fabricmanager process";
  if (options_.fabricmanager_restart &&
      !(options_.fabricmanager_restart_off && options_.fabricmanager_restart_off())) {
    MaybeRestartFabricManager();
    // A restart run to completion is seen at once.
    if (SvcProcessRuns(options_.proc_root, kSvcFabricManagerComm).value_or(false)) return;
    message += "; restart attempts=" + std::to_string(restart_attempts_);
  }
  findings->push_back(HealthFinding{HealthKind::kFabricmanagerDown, "", HealthSeverity::kFatal, std::move(message)});
}

void ServiceCheck::MaybeRestartFabricManager() {
  if (restart_child_ != nullptr) return;  // one at a time
  const int64_t now = clock_->MonoMs();
  if (last_restart_mono_ms_.has_value() && now - *last_restart_mono_ms_ < options_.fabricmanager_restart_interval_ms) {
    return;
  }
  last_restart_mono_ms_ = now;
  ++restart_attempts_;
  const std::string command = JoinWords(options_.fabricmanager_restart_command);
  log_->warn("fabric manager stopped: restarting command={} attempt={}", Q(command), restart_attempts_);
  restart_outcome_ = "running";
  if (options_.fabricmanager_restart_run) {
    RecordRestartOutcome(options_.fabricmanager_restart_run(options_.fabricmanager_restart_command));
    return;
  }
  auto child =
      ChildCommand::Start(options_.fabricmanager_restart_command, now, options_.fabricmanager_restart_timeout_ms);
  if (!child.ok()) {
    RecordRestartOutcome(child.status());
    return;
  }
  restart_child_ = std::move(child).value();
  PollRestart();  // a fast command may be done already
}

void ServiceCheck::PollRestart() {
  std::optional<Status> outcome = restart_child_->Poll(clock_->MonoMs());
  if (!outcome.has_value()) return;
  restart_child_.reset();
  RecordRestartOutcome(*outcome);
}

void ServiceCheck::RecordRestartOutcome(const Status& outcome) {
  const std::string command = JoinWords(options_.fabricmanager_restart_command);
  if (outcome.ok()) {
    restart_outcome_ = "succeeded";
    log_->warn("fabric manager restart succeeded command={} attempt={}", Q(command), restart_attempts_);
  } else {
    restart_outcome_ = "failed: " + outcome.ToString();
    log_->error("fabric manager restart failed command={} attempt={} error={} next_try_ms={}", Q(command),
                restart_attempts_, Q(outcome.ToString()), options_.fabricmanager_restart_interval_ms);
  }
}

// The last attempt stays a condition for the interval after it: long enough
// for the coordinator to record it, and an operator to see it in `gpool
// nodes`; a node whose fabric manager keeps stopping keeps it raised.
void ServiceCheck::ReportRestart(std::vector<HealthFinding>* findings) const {
  if (!last_restart_mono_ms_.has_value()) return;
  if (clock_->MonoMs() - *last_restart_mono_ms_ >= options_.fabricmanager_restart_interval_ms) return;
  findings->push_back(HealthFinding{HealthKind::kFabricmanagerRestart, "", HealthSeverity::kWarning,
                                    "nv-fabricmanager was stopped: " +
                                        JoinWords(options_.fabricmanager_restart_command) + " (attempt " +
                                        std::to_string(restart_attempts_) + ") " + restart_outcome_});
}

void ServiceCheck::CheckPeermem(std::vector<HealthFinding>* findings) {
  if (reload_child_ != nullptr) PollReload();
  bool required = false;
  switch (options_.peermem) {
    case PeermemMode::kOff:
      return;
    case PeermemMode::kRequired:
      required = true;
      break;
    case PeermemMode::kAuto:
      required = options_.has_nvidia_gpus &&
                 SvcAnyEntryWithPrefix(fs::path(options_.sysfs_root) / "class" / "infiniband", "").value_or(false);
      break;
  }
  if (!required) return;
  const std::optional<bool> loaded = SvcModuleLoaded(options_.proc_root, "nvidia_peermem");
  if (!loaded.has_value() || *loaded) return;
  std::string message = "nvidia_peermem is not loaded (GPUDirect RDMA unavailable)";
  if (options_.peermem_reload) {
    MaybeReload();
    // A reload run to completion is seen at once.
    if (SvcModuleLoaded(options_.proc_root, "nvidia_peermem").value_or(false)) return;
    message += "; reload attempts=" + std::to_string(reload_attempts_);
  }
  findings->push_back(HealthFinding{HealthKind::kPeermemMissing, "", HealthSeverity::kDegraded, std::move(message)});
}

void ServiceCheck::MaybeReload() {
  if (reload_child_ != nullptr) return;  // one at a time
  const int64_t now = clock_->MonoMs();
  if (last_reload_mono_ms_.has_value() && now - *last_reload_mono_ms_ < options_.peermem_reload_interval_ms) return;
  last_reload_mono_ms_ = now;
  ++reload_attempts_;
  const std::string command = JoinWords(options_.peermem_reload_command);
  log_->info("peermem reload starting command={} attempt={}", Q(command), reload_attempts_);
  if (options_.peermem_reload_run) {
    LogReloadOutcome(options_.peermem_reload_run(options_.peermem_reload_command));
    return;
  }
  auto child = ChildCommand::Start(options_.peermem_reload_command, now, options_.peermem_reload_timeout_ms);
  if (!child.ok()) {
    LogReloadOutcome(child.status());
    return;
  }
  reload_child_ = std::move(child).value();
  PollReload();  // a fast command may be done already
}

void ServiceCheck::PollReload() {
  std::optional<Status> outcome = reload_child_->Poll(clock_->MonoMs());
  if (!outcome.has_value()) return;
  reload_child_.reset();
  LogReloadOutcome(*outcome);
}

void ServiceCheck::LogReloadOutcome(const Status& outcome) {
  const std::string command = JoinWords(options_.peermem_reload_command);
  if (outcome.ok()) {
    log_->info("peermem reload succeeded command={}", Q(command));
  } else {
    log_->warn("peermem reload failed command={} error={} next_try_ms={}", Q(command), Q(outcome.ToString()),
               options_.peermem_reload_interval_ms);
  }
}

void ServiceCheck::CheckDisk(std::vector<HealthFinding>* findings) {
  if (options_.data_dir.empty() || options_.disk_min_free_mib <= 0) return;
  Result<uint64_t> free = options_.free_bytes(options_.data_dir);
  if (!free.ok()) {
    if (!disk_error_logged_) {
      log_->warn("disk check cannot read free space path={} error={}", Q(options_.data_dir),
                 Q(free.status().ToString()));
      disk_error_logged_ = true;
    }
    return;
  }
  disk_error_logged_ = false;
  const uint64_t free_mib = *free / (1024 * 1024);
  const auto threshold = static_cast<uint64_t>(options_.disk_min_free_mib);
  if (free_mib >= threshold) return;
  findings->push_back(HealthFinding{HealthKind::kDiskLow, "disk", HealthSeverity::kDegraded,
                                    options_.data_dir + ": " + std::to_string(free_mib) + " MiB free, below " +
                                        std::to_string(threshold) + " MiB"});
}

void ServiceCheck::CheckCoordinator(std::vector<HealthFinding>* findings) {
  if (!options_.coordinator_silent_ms) return;
  const int64_t silent = options_.coordinator_silent_ms();
  if (silent < 0 || silent <= options_.coordinator_silent_threshold_ms) return;
  // The message names the threshold, not the silence so far: a message that
  // changed on every run would be a change to report on every run.
  findings->push_back(HealthFinding{HealthKind::kCoordinatorUnreachable, "", HealthSeverity::kWarning,
                                    "no answer from the coordinator for more than " +
                                        std::to_string(options_.coordinator_silent_threshold_ms) + " ms"});
}

}  // namespace gpool::worker
