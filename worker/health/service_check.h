// ServiceCheck: the node services a GPU job depends on besides the GPUs and
// NICs themselves.
//
// - Fabric manager: on NVSwitch systems (any <dev_root>/nvidia-nvswitch*
//   device node, or `nvswitch` forced yes/no) a process named
//   nv-fabricmanager must run (<proc_root>/<pid>/comm; the kernel cuts comm
//   to 15 bytes, "nv-fabricmanage"); else kFabricmanagerDown, fatal, device "".
//   With `fabricmanager_restart` (the default; off by the worker's flag, and
//   while `fabricmanager_restart_off` says the node is labelled
//   repair.gpool.io/fabricmanager-restart=off, in its spec or by an operator) a stopped
//   fabric manager is restarted (`systemctl restart nvidia-fabricmanager`) at
//   most once per fabricmanager_restart_interval_ms, as peermem is reloaded
//   (a child polled on later runs); each attempt is alerted: the condition
//   kFabricmanagerRestart (warning, device "") says the command and its
//   outcome for the interval after the attempt, so the coordinator records it
//   as an event (health-raised) and its alert sinks see it.
// - nvidia_peermem (GPUDirect RDMA): `peermem` auto (required when the node
//   has NVIDIA GPUs and at least one InfiniBand device under
//   <sysfs_root>/class/infiniband/), required or off. Required and not listed
//   in <proc_root>/modules: kPeermemMissing, degraded. With `peermem_reload`
//   the check also runs a command (default `modprobe nvidia_peermem`) at most
//   once per peermem_reload_interval_ms, in a child it polls on later runs
//   and kills at its timeout (Run never waits for it), and logs the outcome.
// - Disk: free space of data_dir below disk_min_free_mib: kDiskLow, degraded,
//   device "disk".
// - Coordinator: silent (no answer) for longer than
//   coordinator_silent_threshold_ms: kCoordinatorUnreachable, warning.
//
// What the check cannot look at (an unreadable /proc, a failing statvfs, an
// unknown silence) reports nothing for it.
//
// Thread-safety: one thread (the agent's loop).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/logger.h>

#include "protocol/base/clock.h"
#include "protocol/base/status.h"
#include "protocol/health.h"
#include "worker/health/health_check.h"

namespace gpool::worker {

enum class NvswitchMode : uint8_t { kAuto, kYes, kNo };
enum class PeermemMode : uint8_t { kAuto, kRequired, kOff };
// "auto" | "yes" | "no"; nullopt otherwise.
std::optional<NvswitchMode> NvswitchModeFromString(std::string_view s);
// "auto" | "required" | "off"; nullopt otherwise.
std::optional<PeermemMode> PeermemModeFromString(std::string_view s);

struct ServiceCheckOptions {
  int64_t interval_ms = 10000;
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";

  NvswitchMode nvswitch = NvswitchMode::kAuto;

  PeermemMode peermem = PeermemMode::kAuto;
  bool has_nvidia_gpus = false;  // the caller's discovery: peermem auto needs GPUs
  bool peermem_reload = false;
  std::vector<std::string> peermem_reload_command = {"modprobe", "nvidia_peermem"};
  int64_t peermem_reload_interval_ms = 10 * 60 * 1000;
  int64_t peermem_reload_timeout_ms = 30000;
  // Runs the reload command to completion instead of the built-in child
  // (tests). OK when it succeeded.
  std::function<Status(const std::vector<std::string>& argv)> peermem_reload_run;

  bool fabricmanager_restart = false;
  // Asked before each restart: the node's label turns it off now; nullptr: never.
  std::function<bool()> fabricmanager_restart_off;
  std::vector<std::string> fabricmanager_restart_command = {"systemctl", "restart", "nvidia-fabricmanager"};
  int64_t fabricmanager_restart_interval_ms = 10 * 60 * 1000;
  int64_t fabricmanager_restart_timeout_ms = 60000;
  // Runs the restart to completion instead of the built-in child (tests).
  std::function<Status(const std::vector<std::string>& argv)> fabricmanager_restart_run;

  // Empty: no disk check.
  std::string data_dir;
  int64_t disk_min_free_mib = 1024;
  // Free bytes (for an unprivileged user) of the filesystem holding a path;
  // nullptr: statvfs.
  std::function<Result<uint64_t>(const std::string& path)> free_bytes;

  // Milliseconds since the coordinator last answered, -1 unknown; nullptr: no
  // coordinator check.
  std::function<int64_t()> coordinator_silent_ms;
  int64_t coordinator_silent_threshold_ms = 5000;

  // Monotonic time for the reload's rate limit and timeout; nullptr: the
  // system clock.
  const Clock* clock = nullptr;
  std::shared_ptr<spdlog::logger> logger;
};

// A command run in a child (fork/exec, stdin/stdout/stderr to /dev/null,
// its own process group), polled without blocking.
class ChildCommand {
 public:
  // Starts argv[0] (searched in PATH) with the deadline now_mono_ms +
  // timeout_ms. A program that cannot be executed fails here.
  static Result<std::unique_ptr<ChildCommand>> Start(const std::vector<std::string>& argv, int64_t now_mono_ms,
                                                     int64_t timeout_ms);
  ~ChildCommand();  // kills and reaps a child still running
  ChildCommand(const ChildCommand&) = delete;
  ChildCommand& operator=(const ChildCommand&) = delete;

  // nullopt while it runs; its outcome once it exited (OK on status 0), or
  // DeadlineExceeded once now_mono_ms is past the deadline (then it is
  // killed and reaped).
  std::optional<Status> Poll(int64_t now_mono_ms);
  // Blocks until it exits (tests).
  Status Wait();
  pid_t pid() const { return pid_; }

 private:
  ChildCommand(pid_t pid, int64_t deadline_ms) : pid_(pid), deadline_ms_(deadline_ms) {}
  static Status StatusOfExit(int wait_status);
  pid_t pid_;
  int64_t deadline_ms_;
  bool reaped_ = false;
};

class ServiceCheck final : public HealthCheck {
 public:
  explicit ServiceCheck(ServiceCheckOptions options);

  std::string_view name() const override { return "services"; }
  int64_t interval_ms() const override { return options_.interval_ms; }
  std::vector<HealthKind> kinds() const override;
  std::vector<HealthFinding> Run(int64_t wall_ms) override;

  // How many reloads were started (or run, with peermem_reload_run).
  uint64_t reload_attempts() const { return reload_attempts_; }
  // Whether a reload child is still running (built-in path only).
  bool reload_running() const { return reload_child_ != nullptr; }
  // Fabric manager restarts started, and whether one is still running.
  uint64_t restart_attempts() const { return restart_attempts_; }
  bool restart_running() const { return restart_child_ != nullptr; }

 private:
  void CheckFabricManager(std::vector<HealthFinding>* findings);
  void CheckPeermem(std::vector<HealthFinding>* findings);
  void CheckDisk(std::vector<HealthFinding>* findings);
  void CheckCoordinator(std::vector<HealthFinding>* findings);
  // Collects a running reload child's outcome; starts one when due.
  void PollReload();
  void MaybeReload();
  void LogReloadOutcome(const Status& outcome);
  // The fabric manager's restart: started when due, polled, recorded.
  void MaybeRestartFabricManager();
  void PollRestart();
  void RecordRestartOutcome(const Status& outcome);
  void ReportRestart(std::vector<HealthFinding>* findings) const;

  ServiceCheckOptions options_;
  const Clock* clock_;
  std::shared_ptr<spdlog::logger> log_;
  std::optional<int64_t> last_reload_mono_ms_;
  uint64_t reload_attempts_ = 0;
  std::unique_ptr<ChildCommand> reload_child_;
  bool disk_error_logged_ = false;
  std::optional<int64_t> last_restart_mono_ms_;
  uint64_t restart_attempts_ = 0;
  std::unique_ptr<ChildCommand> restart_child_;
  std::string restart_outcome_;  // the last attempt's, for its condition
};

inline constexpr char kFabricManagerRestartLabel[] = "repair.gpool.io/fabricmanager-restart";

}  // namespace gpool::worker
