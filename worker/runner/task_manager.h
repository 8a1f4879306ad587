// TaskManager: the tasks this node knows, and everything that happens to
// them. Pure logic: processes go through a ProcessLauncher, time through a
// Clock, so tests drive it with FakeProcessLauncher and FakeClock.
//
// Task lifecycle (one record per TaskId, attempt included):
//
//   Bind ──> pending ──Poll──> running ──exit──> exited
//              │                  │ Preempt: SIGTERM now, SIGKILL at now+grace
//              │                  └────────────────────────────────> exited
//              ├──Poll, cannot start──> failed (exit_code 127): launch error,
//              │                         its MIG instance is gone, or its
//              │                         dynamic MIG instance cannot be made
//              └──Preempt before start──> cancelled (never started)
//   Preempt of an unknown task ──> cancelled: a tombstone, so a late Bind
//   for it is accepted (Acked) but never run.
//
// Events: every transition the coordinator must hear about becomes a
// TaskEvent in the outbox with the next seq (1, 2, ...): "started" (pid),
// "exited" (exit_code, or signal with exit_code = 128+signal; a task
// cancelled before it started reports signal SIGTERM), "failed" (exit_code
// 127, message). Events stay in the outbox until AckEvent(seq); the Link
// resends them. Reports() is what RegisterNode carries: running tasks as
// "Running" and finished ones whose exit event is not yet acknowledged with
// their terminal state (Succeeded, Failed, Cancelled). An rGPU session's
// "started" waits until its server reports the port it bound (with the
// endpoint, dated at the launch); one that reports none within
// rgpu.ready_timeout_ms is stopped, saying why (task_manager_rgpu.cc).
//
// Starting a task is a chain of setup steps (setup/task_setup_chain.h, one
// file each under setup/: log, GPU share files, dynamic MIG instances,
// environment, rGPU server, NUMA, cgroup, hosts files, state directory,
// isolation), each with its own undo: a start that fails half way releases
// what was made before the failure, and the reap releases what the task
// held (its MIG instances, its share's files, its server's key). The
// TaskManager keeps the table and the life cycle; what a task's steps made
// is kept in its record (TaskSetupRecord), so adopted tasks release alike.
//
// Finished records are kept for `finished_retention_ms` after their exit is
// acknowledged (so a duplicate Bind is still recognised), then dropped; logs
// stay on disk, where FetchLog finds them by name, until the retention's
// limits remove them (task_log_janitor.h). A Bind that finds max_tasks
// records first forgets the oldest acknowledged ones that finished at least
// a minute before (MakeRoom), and is refused only when none can go.
//
// Tasks that outlive the worker (options.adopt_tasks, with a launcher that
// supervises): before a task starts, its BindTask is written to its state
// directory (TaskStateDir: <log_dir>/<job>.<index>.<attempt>.state/bind),
// which the launcher's supervisor then shares (supervisor_state.h); a
// preempt's reason goes to `stop`, and an acknowledged exit leaves `acked`.
// Open reads every such directory a previous worker process left and asks
// the launcher to Adopt its task:
//   - still running: tracked as running with the same pid (Reports() says
//     "Running"; Preempt, signals and the grace SIGKILL reach it; its exit
//     is reported when its supervisor records it);
//   - ended while no worker watched, exit not yet acknowledged: an "exited"
//     event whose message gives the supervisor's reason ("node lease
//     expired"), and its terminal state in Reports();
//   - lost (its supervisor died without recording an exit): what was left
//     of it is killed, and it is reported as exited with code 255 and a
//     message saying it was lost with its supervisor (state Failed);
//   - acknowledged before: kept as finished and acknowledged.
// The directory is removed with the record, after the retention.
// Event seqs start at 1 in every worker process. A previous process's
// unacknowledged events are not resent as such: what they said is in the
// tasks' Reports() and in the events this process emits for them. An ack
// meant for a previous process cannot reach this one: the coordinator
// answers on the connection the event came on, and every worker process
// (every reconnect, too) has a connection of its own (protocol.md).
//
// Ownership and threads: owned by the Agent, used by one thread (the
// agent's loop); not thread-safe. Launcher, clock and logger are not owned
// and must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "protocol/base/clock.h"
#include "protocol/base/disk_guard.h"
#include "protocol/base/status.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "protocol/types.h"
#include "worker/runner/device_env.h"
#include "worker/runner/host_resolver.h"
#include "worker/runner/log_cap.h"
#include "worker/runner/mig_manager.h"
#include "worker/runner/process_launcher.h"
#include "worker/runner/rgpu_server.h"
#include "worker/runner/setup/hosts_files_step.h"
#include "worker/runner/setup/log_cap_step.h"
#include "worker/runner/setup/mig_instance_step.h"
#include "worker/runner/setup/task_setup_chain.h"
#include "worker/runner/share_enforcement.h"
#include "worker/runner/task_isolation.h"
#include "worker/runner/task_log_janitor.h"

namespace gpool::worker {

struct TaskManagerOptions {
  NodeSpec node;                               // what this node has (GPU indices, vendors, name)
  std::string log_dir;                         // <data-dir>/tasks; created by Open
  // Where the tasks' within-boot records go: each attempt's state directory
  // (bind, launch, started, exit, acked, stop, the supervisor's lock and log)
  // and the job hosts files, ~10 small files per task. On a tmpfs (the
  // worker's default where /run is one: flags.h --run-dir) their creation
  // and removal cost no journal and no inode search on the data disk, which
  // was a third of the worker's CPU per short task (issue 46). Empty: log_dir.
  // Tasks a previous worker left under log_dir are adopted from there too.
  std::string state_dir;
  std::map<std::string, std::string> base_env;  // inherited by every task (the worker's environ)
  // LD_PRELOAD for GPU-share tasks (HAMi-core's libvgpu.so); when set it
  // replaces gpool's interposer (`share`) for them (device_env.h).
  std::string cuda_intercept_lib;
  // gpool's CUDA interposer for GPU shares, and the tolerance of the bypass
  // catch (share_enforcement.h); share.interposer empty: not interposed.
  ShareEnforcementOptions share;
  ProcessLauncher* launcher = nullptr;         // required
  // Creates dynamic MIG instances; not owned. nullptr: none are created and
  // tasks get the simulated id (device_env.h).
  MigManager* mig = nullptr;
  const Clock* clock = nullptr;                // required
  std::shared_ptr<spdlog::logger> logger;      // nullptr: spdlog's default
  // Keep acknowledged finished tasks this long. Only a margin: the
  // coordinator acknowledges an exit once the task's end is committed, and
  // no leader binds an ended task again. It was an hour, which on a node
  // running short tasks meant the record cap (max_tasks) and 3.6 GB of
  // state directories on its --run-dir tmpfs; ten minutes is a sixth.
  int64_t finished_retention_ms = 600'000;
  // Records of all kinds. At the cap a Bind first forgets acknowledged
  // finished records a minute old or more; when none is: ResourceExhausted.
  size_t max_tasks = 100'000;
  uint64_t log_max_bytes = kDefaultTaskLogMaxBytes;  // each task's log on disk (log_cap.h)
  // Which logs of tasks no longer live are kept (task_log_janitor.h); all
  // of them when no limit is set.
  TaskLogRetention log_retention;
  // Tasks outlive this process and a restarted one adopts them (above);
  // needs a launcher that can Adopt. false: nothing is kept on disk.
  bool adopt_tasks = false;
  // The data dir's guard; not owned. When its disk is full (at or below the
  // reserve, disk_guard.h) Bind refuses new tasks with Unavailable "disk
  // full (...)" (the coordinator resends the bind, so the task starts once
  // space returns); running tasks are not touched. nullptr: never refused.
  DiskGuard* disk = nullptr;
  // Gang tasks' names (job_hosts.h): the remote agent MPI is pointed at (a
  // gpool-rsh: the CLI in its exec-rsh mode); empty: MPI is not pointed at one.
  std::string rsh_agent;
  // Run gang tasks with the job's hosts file over /etc/hosts in a private
  // mount namespace (needs root); false: GPOOL_HOSTS_FILE only.
  bool private_hosts = false;
  // The node's hosts file, the start of every job's hosts file.
  std::string etc_hosts = "/etc/hosts";
  // Addresses of nodes that advertise none, for gang tasks' hosts files
  // (host_resolver.h); not owned, shared by a fleet's nodes. nullptr: the
  // TaskManager keeps its own, over `resolve`.
  HostResolver* resolver = nullptr;
  // The lookup of that own resolver; nullptr: ResolveHost on lookup threads.
  // Set (tests' fakes), it is called inline.
  std::function<std::string(const std::string&)> resolve;
  // How long a gang task waits at most for its nodes' names to resolve
  // before it starts with the lines it has (a name lookup that hangs must
  // not hold the task forever).
  int64_t names_wait_ms = 5'000;
  // Who tasks run as and what they may see (task_isolation.h); off by
  // default, on in the worker when it runs as root.
  TaskIsolationOptions isolation;
  // Exclusive whole cores where no cpuset can be made: true runs the task
  // pinned by affinity alone instead of refusing it (setup/cgroup_step.h).
  bool exclusive_cores_affinity_fallback = false;
  // rGPU sessions' servers (rgpu_server.h).
  RgpuOptions rgpu;
};

class TaskManager {
 public:
  // Checks the options and creates log_dir (with parents). With
  // adopt_tasks, adopts the tasks a previous worker process left (above)
  // before it returns, so the first RegisterNode reports them.
  static Result<std::unique_ptr<TaskManager>> Open(TaskManagerOptions options);

  // Accepts a task; the process starts on the next Poll. A TaskId already
  // known (in any state, tombstones included) is accepted again and changes
  // nothing. InvalidArgument when the bind does not fit this node.
  Status Bind(const BindTask& bind);

  // SIGTERM now and SIGKILL at now + grace_ms for a running task; cancels a
  // pending one; records a tombstone for an unknown one. Never fails.
  void Preempt(const PreemptTask& preempt);

  // SIGTERM to every live task and cancels pending ones, SIGKILL at
  // now + grace_ms (shutdown). Later Binds are refused with Unavailable.
  void StopAll(int64_t grace_ms);

  // Starts pending tasks, reaps exited processes, sends due SIGKILLs and
  // drops expired records. Call often (every loop turn).
  void Poll();

  // When Poll may next do something it would not do now (monotonic ms),
  // unless a Bind, Preempt, StopAll or exit acknowledgement comes first: a
  // caller that polls many managers (the fleet) polls each only then.
  // Conservative: now whenever a launcher cannot tell when its processes
  // exit, a start is waiting, or a pass over the logs is under way.
  int64_t NextDueMs() const;

  // True when no task process is alive or about to start.
  bool Idle() const;

  std::vector<TaskId> Running() const;
  // Whether a pending or running task's bind holds GPU `index` (the GPU
  // repair resets a GPU only once none does: health/gpu_repair.h).
  bool GpuHeld(uint32_t index) const;
  // The processes of started, not yet reaped tasks: pid (also their process
  // group id) -> task. What task_usage.h attributes GPU processes to.
  const std::map<int64_t, TaskId>& RunningPids() const { return by_pid_; }
  std::vector<TaskReport> Reports() const;

  // The bypass catch (share_enforcement.h): one NVML sample of the running
  // tasks' GPU memory (Link: every heartbeat). A share task over its share
  // beyond the tolerance on two samples in a row is stopped with no grace
  // (SIGTERM, SIGKILL on the next Poll) and its exit event says why
  // ("stopped by the worker: GPU memory ... over its share of ..."): the
  // coordinator fails it without a restart (StoppedOverShare).
  void EnforceShareMemory(const std::vector<TaskUsage>& usage);
  // Once a minute: removes the activity files of processes that are gone
  // (cuda_shared_files.h), so burst-share keeps seeing live neighbours.
  void SweepCudaActivity();

  // Unacknowledged events by seq.
  const std::map<uint64_t, TaskEvent>& Outbox() const { return outbox_; }
  // Drops the event from the outbox; unknown or repeated seqs are ignored.
  void AckEvent(uint64_t seq);

  // The tail of the task's log (FetchLog): at most max_bytes, capped at
  // 4 MiB. NotFound when it never ran here.
  Result<FetchLogReply> TailLog(const TaskId& task, uint64_t max_bytes) const;
  // What the log retention has done; null when it sets no limit.
  const TaskLogJanitor::Totals* log_retention_totals() const {
    return log_janitor_ != nullptr ? &log_janitor_->totals() : nullptr;
  }

  const NodeSpec& node() const { return options_.node; }

  // The pid of a running task's first process (`gpool exec` takes the
  // task's context from it): NotFound for a task this node does not have,
  // FailedPrecondition for one that is not running.
  Result<int64_t> RunningPid(const TaskId& task) const;

 private:
  // Ok, or the full data dir's refusal of a new task (options_.disk).
  Status CheckDisk(const TaskId& id);
  enum class Phase { kPending, kRunning, kExited, kFailed, kCancelled };

  struct Task {
    BindTask bind;          // empty for tombstones
    bool bound = false;     // false for tombstones
    Phase phase = Phase::kPending;
    int64_t pid = 0;
    bool preempted = false;
    std::string stop_reason;  // why it was preempted or stopped
    int64_t kill_at_ms = 0;  // monotonic; 0: no SIGKILL scheduled
    int64_t started_mono_ms = 0;  // when it started; what its bind's max_runtime_ms counts from
    int32_t exit_code = 0;
    int32_t signal = 0;
    uint64_t exit_seq = 0;   // seq of the terminal event; 0 before
    bool exit_acked = false;
    int64_t finished_mono_ms = 0;
    TaskSetupRecord setup;  // what its setup steps made: MIG instances, state directory
    bool lost = false;  // ended by the node (lease, supervisor), not by itself: reported "lost"
    bool waiting_logged = false;  // told once that it waits for its GPUs (WholeGpuHolder)
    int64_t names_deadline_ms = 0;  // monotonic: when it starts whether its names resolved or not
    // An rGPU session's server that has not reported its endpoint yet: when
    // it is stopped if it still has not (monotonic); 0 otherwise. Its
    // "started" event waits for the endpoint, dated started_wall_ms.
    int64_t rgpu_ready_by_ms = 0;
    int64_t started_wall_ms = 0;
  };

  explicit TaskManager(TaskManagerOptions options);

  // A start in two halves (ProcessLauncher::BeginLaunch): the setup chain
  // up to the launch, which it begins (false: the start failed and is
  // recorded), then the launch's answer and the "started" event
  // (task_manager_setup.cc). The context lives until the launch answers, so
  // a failed launch undoes the steps.
  struct Launching {
    TaskId id;
    uint64_t ticket = 0;
    std::unique_ptr<TaskSetupContext> setup;
  };
  bool BeginStart(const TaskId& id, Task& task, Launching& launching);
  void FinishStart(Launching& launching);
  // The setup steps, in order (Open, once the resolver is known).
  void BuildSetupChain();
  // What the task's steps hold, released once its process is reaped.
  void ReleaseSetup(const TaskId& id, Task& task);
  // Whether every node of a gang task's names has an address (advertised or
  // answered by the resolver); asks the resolver for those it lacks.
  bool NamesReady(const Task& task);
  // A running task (not yet reaped), or one of `launching` (begun this
  // turn), that holds one of `task`'s GPUs where either holds it whole;
  // nullptr when none.
  const TaskId* WholeGpuHolder(const TaskId& id, const Task& task, const std::vector<Launching>& launching) const;
  // Records a start that did not happen: "failed" event, exit_code 127.
  void FailStart(const TaskId& id, Task& task, const Status& status);
  // rGPU sessions (task_manager_rgpu.cc): where the server reports its
  // endpoint; the wait for it (armed at the launch or the adoption); the
  // reads of waiting servers' files each Poll; one read, true once the wait
  // is over (the "started" event emitted, or the server being stopped).
  std::string RgpuEndpointFile(const TaskId& id) const;
  void AwaitRgpuEndpoint(const TaskId& id, Task& task, int64_t started_wall_ms);
  void PollRgpuEndpoints();
  bool TakeRgpuEndpoint(const TaskId& id, Task& task);
  // At its server's exit: a last read (reported, then exited between two
  // turns: "started" first), else why it never served, added to `message`.
  void EndRgpuWait(const TaskId& id, Task& task, std::string& message);
  // The "started" event; an rGPU session's carries its endpoint and key.
  void EmitStarted(const TaskId& id, Task& task);
  void Terminate(const TaskId& id, Task& task, int64_t grace_ms, const std::string& reason);
  // Stops running tasks that reached their bind's max_runtime_ms.
  void EnforceTimeLimits(int64_t now_ms);
  void OnExit(const ExitInfo& exit);
  // Records the end of a started task (reaped, or found ended at adoption):
  // the terminal event unless `acked`, the cleanup its end calls for.
  void Finish(const TaskId& id, Task& task, const ExitInfo& exit, bool acked);
  // Open's adoption of what a previous worker process left in log_dir.
  void AdoptLeftTasks();
  void AdoptTask(const std::string& state_dir);
  void Expire();
  // At max_tasks: forgets the oldest acknowledged finished records early.
  void MakeRoom();
  static bool Forgettable(const Task& task);  // finished and its exit acknowledged
  // At its exit's acknowledgement: what nothing reads any more is removed
  // (hosts files; with adopt_tasks, the launch spec and supervisor log).
  void ReleaseAcknowledged(const TaskId& id, const Task& task);
  // Drops a record with its state and scratch directories and hosts files.
  std::map<TaskId, Task>::iterator Forget(std::map<TaskId, Task>::iterator it);
  uint64_t Emit(const TaskId& id, TaskEventKind kind, int64_t pid, int32_t exit_code, int32_t signal,
                std::string message);
  TaskState TerminalState(const Task& task) const;

  // "0,1" for GPU indices; "none" for none (logs).
  static std::string JoinIndices(const std::vector<uint32_t>& indices);
  // The directory of new attempts' state directories and hosts files.
  const std::string& state_root() const { return options_.state_dir.empty() ? options_.log_dir : options_.state_dir; }
  // A task's state directory: where it was persisted or adopted from.
  std::string StateDirOf(const TaskId& id, const Task& task) const;
  // A task's hosts files once its record is gone (the hosts step's).
  void RemoveHostsFiles(const TaskId& gone);

  TaskManagerOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<TaskId, Task> tasks_;
  int64_t make_room_after_ms_ = 0;  // MakeRoom found nothing to forget: not before then
  std::map<int64_t, TaskId> by_pid_;     // running processes
  std::vector<TaskId> to_start_;          // accepted since the last Poll
  std::set<TaskId> rgpu_waiting_;         // sessions whose servers have not reported their endpoint
  std::map<uint64_t, TaskEvent> outbox_;
  std::unique_ptr<HostResolver> own_resolver_;  // when options_.resolver is null
  HostResolver* resolver_ = nullptr;
  ShareMemoryGuard share_guard_{options_.share.memory_tolerance_mib};
  TaskSetupChain setup_{log_};
  // Steps the life cycle also reaches (owned by setup_): the running logs'
  // cap, adopted tasks' MIG instances, hosts files at expiry.
  LogCapStep* log_step_ = nullptr;
  MigInstanceStep* mig_step_ = nullptr;
  HostsFilesStep* hosts_step_ = nullptr;
  int64_t next_activity_sweep_ms_ = 0;
  uint64_t next_seq_ = 1;
  bool stopping_ = false;
  int64_t next_expire_ms_ = 0;
  // Logs of running tasks are checked against their cap this often.
  static constexpr int64_t kLogCapIntervalMs = 250;
  // Tasks started per Poll at most (Poll).
  static constexpr size_t kMaxStartsPerPoll = 8;
  int64_t next_log_cap_ms_ = 0;
  std::unique_ptr<TaskLogJanitor> log_janitor_;  // null when the retention sets no limit
};

}  // namespace gpool::worker
