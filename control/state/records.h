// The records the coordinator's state machine owns: nodes, jobs and tasks.
//
// Owned by ClusterState and mutated only by its Apply(); everything else reads
// them. Each record lists its fields once (Fields) so snapshots pack and
// restore them with the same code that the wire protocol uses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "control/state/flat_set.h"
#include "protocol/base/ids.h"
#include "protocol/health.h"
#include "protocol/types.h"
#include "topology/pending_reason.h"

namespace gpool::state {

// A task in these states holds its node's resources (GPUs, CPU, memory).
inline bool HoldsResources(TaskState s) { return s == TaskState::kBound || s == TaskState::kRunning; }

// A value held out of line, for fields most records leave empty: null when
// absent, copied deeply.
template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(const Boxed& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  const T* get() const { return value_.get(); }
  void reset(std::unique_ptr<T> value) { value_ = std::move(value); }

 private:
  std::unique_ptr<T> value_;
};

inline const DeviceGrant kNoGrant{};

struct TaskRecord {
  // Fields are ordered to leave no padding, and what most tasks leave empty
  // is held out of line: a live task's record is a large part of what it
  // costs the coordinator (bench/memory_bench.cc).
  TaskId id;
  uint32_t group = 0;  // index into the job spec's task groups
  TaskState state = TaskState::kPending;
  std::string node;
  std::vector<uint32_t> gpu_indices;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  int64_t pid = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
  int64_t bind_ms = 0;
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  uint32_t stop_grace_ms = 0;   // 0: the coordinator's default grace
  int32_t numa_node = -1;  // the NUMA node its CPU and memory are charged to; -1: none
  bool stop_requested = false;  // cancel or job failure: the dispatcher preempts it
  // Stopped to make room for job `evicted_for` (preemption or reclaim): when
  // it exits it goes back to pending as the next attempt, not to Cancelled.
  bool evicted = false;
  // Not persisted: ClusterState's commands-due index (see commands_due_count).
  // Nonzero while a command to its worker is due: the sequence number of the
  // change that made it due, and whether it is a preempt (else a bind).
  bool command_stop = false;
  uint64_t command_seq = 0;

  // What only a stopped, evicted or failed task has, held out of line: a
  // running task has none of it.
  struct Extras {
    uint64_t evicted_for = 0;          // see `evicted`
    std::vector<uint64_t> evicted_by;  // every job that ever evicted this task; none may again
    std::string message;               // why it stopped or failed, for users
    bool Empty() const { return evicted_for == 0 && evicted_by.empty() && message.empty(); }
    bool operator==(const Extras&) const = default;
  };
  uint64_t evicted_for() const { return extras().evicted_for; }
  const std::vector<uint64_t>& evicted_by() const { return extras().evicted_by; }
  const std::string& message() const { return extras().message; }
  void set_message(std::string message) {
    if (message.empty() && this->message().empty()) return;
    UpdateExtras([&](Extras& e) { e.message = std::move(message); });
  }
  template <typename F>
  void UpdateExtras(F&& change) {
    Extras next = extras();
    change(next);
    extras_.reset(next.Empty() ? nullptr : std::make_unique<Extras>(std::move(next)));
  }

  // Its share of the GPUs, MIG instance or cores; empty for whole GPUs. Held
  // out of line: most tasks take whole GPUs, and an empty grant inline was
  // 120 bytes of every task record.
  const DeviceGrant& grant() const { return grant_.get() != nullptr ? *grant_.get() : kNoGrant; }
  void set_grant(const DeviceGrant& grant) {
    grant_.reset(grant.Empty() ? nullptr : std::make_unique<DeviceGrant>(grant));
  }

  // Exclusive whole cores it holds (CPU ids of its node), from its bind; out
  // of line like the grant: most tasks hold none.
  const std::vector<uint32_t>& cpu_ids() const {
    static const std::vector<uint32_t> none;
    return cpu_ids_.get() != nullptr ? *cpu_ids_.get() : none;
  }
  void set_cpu_ids(const std::vector<uint32_t>& ids) {
    cpu_ids_.reset(ids.empty() ? nullptr : std::make_unique<std::vector<uint32_t>>(ids));
  }

  template <typename V>
  void Fields(V& v) {
    uint32_t state_wire = static_cast<uint32_t>(state);
    v.Required("id", id);
    v.Required("group", group);
    v.Required("state", state_wire);
    v.Optional("node", node);
    v.Optional("gpus", gpu_indices);
    v.Optional("cpu", cpu_milli);
    v.Optional("mem", memory_mib);
    v.Optional("pid", pid);
    v.Optional("exit", exit_code);
    v.Optional("sig", signal);
    v.Optional("bind_ms", bind_ms);
    v.Optional("start_ms", start_ms);
    v.Optional("finish_ms", finish_ms);
    v.Optional("stop", stop_requested);
    v.Optional("grace_ms", stop_grace_ms);
    Extras extras_wire = extras();
    v.Optional("evicted", evicted);
    v.Optional("evicted_for", extras_wire.evicted_for);
    v.Optional("evicted_by", extras_wire.evicted_by);
    v.Optional("msg", extras_wire.message);
    DeviceGrant grant_wire = grant();
    v.Optional("grant", grant_wire);
    // Reading keeps what was read; packing changes nothing.
    if (!(grant_wire == grant())) set_grant(grant_wire);
    if (!(extras_wire == extras())) UpdateExtras([&](Extras& e) { e = std::move(extras_wire); });
    v.Optional("numa", numa_node);
    std::vector<uint32_t> cpu_ids_wire = cpu_ids();
    v.Optional("cpu_ids", cpu_ids_wire);
    if (cpu_ids_wire != cpu_ids()) set_cpu_ids(cpu_ids_wire);
    state = static_cast<TaskState>(state_wire <= static_cast<uint32_t>(TaskState::kLost) ? state_wire : 0);
  }

 private:
  const Extras& extras() const {
    static const Extras none;
    return extras_.get() != nullptr ? *extras_.get() : none;
  }
  Boxed<DeviceGrant> grant_;
  Boxed<Extras> extras_;
  Boxed<std::vector<uint32_t>> cpu_ids_;
};

// What the coordinator learns of an rGPU session while it lives (a job with
// spec.session.enabled; protocol/session_types.h).
struct SessionRuntime {
  std::string endpoint;    // where its server listens, from the worker's "started"
  std::string server_key;  // the server's CurveZMQ public key
  int64_t renew_ms = 0;    // its last renewal (the open request first)
  // Why it was closed when the coordinator closed it (an expired lease);
  // empty when its owner did or it ended by itself.
  std::string close_reason;
  bool operator==(const SessionRuntime&) const = default;
  template <typename V>
  void Fields(V& v) {
    v.Optional("endpoint", endpoint);
    v.Optional("server_key", server_key);
    v.Optional("renew_ms", renew_ms);
    v.Optional("close_reason", close_reason);
  }
};

struct JobRecord {
  JobId id;
  JobSpec spec;
  JobState state = JobState::kPending;
  bool cancel_requested = false;
  uint64_t arrival = 0;  // log index of the submission; orders FIFO
  int64_t submit_ms = 0;
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  std::string idempotency_key;
  // A random secret the gateway drew at submit; it never leaves the
  // coordinator and opens nothing itself (issue 48). Each bound task gets a
  // credential derived from it for that task attempt
  // (security/task_exec_key.h) as GPOOL_EXEC_TOKEN: it authorises `gpool
  // exec` into this job's tasks (so `mpirun` in one task can start ranks in
  // the others) while that task is bound or running, and with CurveZMQ it is
  // the CURVE secret key the task reaches the client port with (Principal
  // kTask). Never shown to clients. Empty for jobs submitted before it
  // existed. exec_key, its public half, is kept for old records and admits
  // nothing now.
  std::string exec_token;
  std::string exec_key;
  std::vector<TaskRecord> tasks;

  // What only a waiting, failed or preempting job has, held out of line: a
  // running job has none of it, and inline it was 96 bytes of every job.
  struct Extras {
    // Why it is pending, from the last scheduling cycle: codes (rendered to
    // text when a client asks), or text in state written before codes.
    std::vector<topology::PendingReason> pending;
    std::vector<std::string> legacy_reasons;
    std::string failure;               // why it failed, when it did
    // Nodes where tasks were evicted for this job; the scheduler keeps them
    // for it until it is placed, or until claim_ms (the last eviction for
    // it, or the last of its victims stopping) is long past.
    std::vector<std::string> claimed_nodes;
    int64_t claim_ms = 0;
    int64_t requeue_ms = 0;  // when an eviction last sent its tasks back to pending
    // Requeues under the job's restart policy (RestartSpec) so far, and why
    // the last one happened.
    uint32_t restarts = 0;
    std::string restart_reason;
    // Scale rules (protocol/scale_rule.h): each group's committed replica
    // target (empty, or 0 for a group: its minimum) and when a ScaleJobCmd
    // last changed one (the cool-down counts from it). Out of line: only
    // jobs with scale rules that have scaled have them.
    std::vector<uint32_t> scale_target;
    int64_t scaled_ms = 0;
    // Each group's last change (same indexing; time_ms 0: none), for
    // `gpool job`. Jobs that scaled before it was kept have none.
    std::vector<ScaleChange> scale_last;
    bool Empty() const {
      return pending.empty() && legacy_reasons.empty() && failure.empty() && claimed_nodes.empty() && claim_ms == 0 &&
             requeue_ms == 0 && restarts == 0 && restart_reason.empty() && scale_target.empty() && scaled_ms == 0 &&
             scale_last.empty();
    }
    bool operator==(const Extras&) const = default;
  };
  const std::vector<topology::PendingReason>& reasons() const { return extras().pending; }
  const std::vector<std::string>& legacy_reasons() const { return extras().legacy_reasons; }
  bool waiting_reasons() const { return !extras().pending.empty() || !extras().legacy_reasons.empty(); }
  const std::string& failure() const { return extras().failure; }
  const std::vector<std::string>& claimed_nodes() const { return extras().claimed_nodes; }
  int64_t claim_ms() const { return extras().claim_ms; }
  int64_t requeue_ms() const { return extras().requeue_ms; }
  uint32_t restarts() const { return extras().restarts; }
  const std::string& restart_reason() const { return extras().restart_reason; }
  int64_t scaled_ms() const { return extras().scaled_ms; }
  // Group `group`'s last committed scale change; time_ms 0 when none is kept.
  ScaleChange LastScale(uint32_t group) const {
    const auto& last = extras().scale_last;
    return group < last.size() ? last[group] : ScaleChange{};
  }
  // The replicas group `group` may run: its scale target when it has scale
  // rules (its minimum until a rule moved it), else all of them.
  uint32_t ReplicaTarget(uint32_t group) const {
    const TaskGroupSpec& spec_group = spec.tasks[group];
    if (!spec_group.scale.Enabled()) return spec_group.replicas;
    const auto& targets = extras().scale_target;
    const uint32_t target = group < targets.size() ? targets[group] : 0;
    return target == 0 ? spec_group.MinReplicas() : std::min(target, spec_group.replicas);
  }
  // Changes them; the box goes away again once they are all empty.
  template <typename F>
  void UpdateExtras(F&& change) {
    Extras next = extras();
    change(next);
    extras_.reset(next.Empty() ? nullptr : std::make_unique<Extras>(std::move(next)));
  }

  template <typename V>
  void Fields(V& v) {
    uint64_t id_value = id.value();
    uint32_t state_wire = static_cast<uint32_t>(state);
    Extras wire = extras();
    v.Required("id", id_value);
    v.Required("spec", spec);
    v.Required("state", state_wire);
    v.Optional("arrival", arrival);
    v.Optional("submit_ms", submit_ms);
    v.Optional("requeue_ms", wire.requeue_ms);
    v.Optional("start_ms", start_ms);
    v.Optional("finish_ms", finish_ms);
    v.Optional("key", idempotency_key);
    v.Optional("exec_token", exec_token);
    v.Optional("exec_key", exec_key);
    v.Optional("tasks", tasks);
    v.Optional("reasons", wire.legacy_reasons);
    v.Optional("why", wire.pending);
    v.Optional("failure", wire.failure);
    v.Optional("cancel", cancel_requested);
    v.Optional("claimed_nodes", wire.claimed_nodes);
    v.Optional("claim_ms", wire.claim_ms);
    v.Optional("restarts", wire.restarts);
    v.Optional("restart_reason", wire.restart_reason);
    v.Optional("scale_target", wire.scale_target);
    v.Optional("scaled_ms", wire.scaled_ms);
    v.Optional("scale_last", wire.scale_last);
    SessionRuntime session_wire = session_.get() != nullptr ? *session_.get() : SessionRuntime{};
    if (spec.session.enabled) {
      v.Optional("session", session_wire);
      if (session_.get() == nullptr || !(session_wire == *session_.get())) {
        UpdateSession([&](SessionRuntime& r) { r = session_wire; });
      }
    }
    id = JobId(id_value);
    state = static_cast<JobState>(state_wire <= static_cast<uint32_t>(JobState::kCancelled) ? state_wire : 0);
    if (!(wire == extras())) {  // reading: keep what was read; packing changes nothing
      UpdateExtras([&](Extras& e) { e = std::move(wire); });
    }
  }

 private:
  static const Extras& NoExtras() {
    static const Extras none;
    return none;
  }
  const Extras& extras() const { return extras_.get() != nullptr ? *extras_.get() : NoExtras(); }
  Boxed<Extras> extras_;
  Boxed<SessionRuntime> session_;

 public:
  // Null for every job that is not a session (held out of line: most are not).
  const SessionRuntime* session() const { return session_.get(); }
  template <typename F>
  void UpdateSession(F&& change) {
    SessionRuntime next = session_.get() != nullptr ? *session_.get() : SessionRuntime{};
    change(next);
    session_.reset(std::make_unique<SessionRuntime>(std::move(next)));
  }
};

struct QueueRecord {
  QueueSpec spec;
  // Issue 50: the classes above medium granted to this queue ("high",
  // "system"; sorted, no repeats), by UpdateQueue grant-class. Apart from
  // the spec, so a quota update (which replaces the spec) leaves them.
  std::vector<std::string> granted_classes;
  template <typename V>
  void Fields(V& v) {
    v.Required("spec", spec);
    v.Optional("granted_classes", granted_classes);
  }
};

struct NodeRecord {
  NodeSpec spec;
  NodeState state = NodeState::kReady;
  bool cordoned = false;
  std::string pool = "public";                      // public, pooled or exclusive
  std::string pool_queue;                           // the queue owning it (exclusive only; "" for none)
  std::map<std::string, std::string> admin_labels;  // the operator's; overlay spec.labels
  std::map<std::string, std::string> taints;
  int64_t registered_ms = 0;
  int64_t last_seen_ms = 0;  // wall time of the last state change committed for it
  int64_t down_since_ms = 0;  // when it last left Ready (NotReady); 0 while Ready
  // The CurveZMQ public key (Z85) of the worker bound to this name, set by
  // its first registration (or an admin's enrolment); a registration with
  // another key is refused (issue 31). Empty: unbound (an --insecure cluster).
  std::string worker_key;
  // A key rotated away with a grace (UpdateNode worker-key, grace_ms): still
  // admitted as this node until retired_key_until_ms (wall ms, the rotating
  // command's time plus the grace), refused from then on without another log
  // entry; the entry itself is dropped lazily by the next rotation or
  // registration. Empty: none.
  std::string retired_key;
  int64_t retired_key_until_ms = 0;
  // Whether `key` is admitted as this node at wall time now_ms.
  bool AdmitsKey(const std::string& key, int64_t now_ms) const {
    if (key.empty()) return false;
    return key == worker_key || (key == retired_key && now_ms < retired_key_until_ms);
  }
  // Health: the conditions its worker reported last (protocol/health.h),
  // GPUs the health policy fenced (overlaying spec.gpus[].healthy), and who
  // cordoned it: "operator" or "health" (only health cordons are lifted by
  // the policy), with when.
  std::vector<HealthCondition> health;
  // `slow` conditions from `gpool probe` runs (ProbeResultCmd), kept apart
  // from the worker's own list, which replaces `health` whole.
  std::vector<HealthCondition> probe_health;
  std::vector<uint32_t> unhealthy_gpus;  // sorted
  // A GPU takes work only when its worker reports it healthy and the health
  // policy has not fenced it.
  // Everything known to be wrong with it: its worker's conditions and the probes'.
  std::vector<HealthCondition> AllHealth() const {
    std::vector<HealthCondition> all = health;
    all.insert(all.end(), probe_health.begin(), probe_health.end());
    return all;
  }
  bool GpuUsable(const GpuInfo& gpu) const {
    return gpu.healthy && !std::binary_search(unhealthy_gpus.begin(), unhealthy_gpus.end(), gpu.index);
  }
  std::string cordon_reason;
  int64_t cordon_ms = 0;
  // When an operator last uncordoned it: conditions seen before then no
  // longer fence (the operator overrode them).
  int64_t operator_uncordon_ms = 0;
  // gpu index -> task holding it whole; absent means not held whole.
  FlatMap<uint32_t, TaskId> gpu_owner;
  // gpu index -> tasks holding a share, a MIG instance or cores of it.
  std::map<uint32_t, std::set<TaskId>> gpu_tenants;
  uint64_t cpu_milli_used = 0;
  uint64_t memory_mib_used = 0;
  FlatSet<TaskId> tasks;  // tasks bound or running here
  // Not persisted: ClusterState's change counter when anything the scheduler's
  // view of this node shows last changed, and when anything but its load
  // (tasks' holdings) last changed (ClusterState::RefreshView).
  uint64_t view_version = 0;
  uint64_t spec_version = 0;

  template <typename V>
  void Fields(V& v) {
    uint32_t state_wire = static_cast<uint32_t>(state);
    std::vector<uint32_t> owned_gpus;
    std::vector<TaskId> owners;
    for (const auto& [gpu, task] : gpu_owner) {
      owned_gpus.push_back(gpu);
      owners.push_back(task);
    }
    std::vector<TaskId> task_list(tasks.begin(), tasks.end());
    std::vector<uint32_t> tenant_gpus;
    std::vector<TaskId> tenants;
    for (const auto& [gpu, holders] : gpu_tenants) {
      for (const auto& task : holders) {
        tenant_gpus.push_back(gpu);
        tenants.push_back(task);
      }
    }
    v.Required("spec", spec);
    v.Required("state", state_wire);
    v.Optional("cordoned", cordoned);
    v.Optional("pool", pool);
    v.Optional("pool_queue", pool_queue);
    v.Optional("admin_labels", admin_labels);
    v.Optional("taints", taints);
    v.Optional("registered_ms", registered_ms);
    v.Optional("last_seen_ms", last_seen_ms);
    v.Optional("owned_gpus", owned_gpus);
    v.Optional("owners", owners);
    v.Optional("cpu_used", cpu_milli_used);
    v.Optional("mem_used", memory_mib_used);
    v.Optional("tasks", task_list);
    v.Optional("tenant_gpus", tenant_gpus);
    v.Optional("tenants", tenants);
    v.Optional("down_since_ms", down_since_ms);
    v.Optional("worker_key", worker_key);
    v.Optional("retired_key", retired_key);
    v.Optional("retired_key_until_ms", retired_key_until_ms);
    v.Optional("health", health);
    v.Optional("probe_health", probe_health);
    v.Optional("unhealthy_gpus", unhealthy_gpus);
    v.Optional("cordon_reason", cordon_reason);
    v.Optional("cordon_ms", cordon_ms);
    v.Optional("operator_uncordon_ms", operator_uncordon_ms);
    state = state_wire <= static_cast<uint32_t>(NodeState::kLost) ? static_cast<NodeState>(state_wire) : NodeState::kReady;
    gpu_owner.clear();
    for (size_t i = 0; i < owned_gpus.size() && i < owners.size(); ++i) gpu_owner[owned_gpus[i]] = owners[i];
    tasks = FlatSet<TaskId>(task_list.begin(), task_list.end());
    gpu_tenants.clear();
    for (size_t i = 0; i < tenant_gpus.size() && i < tenants.size(); ++i) gpu_tenants[tenant_gpus[i]].insert(tenants[i]);
  }
};

}  // namespace gpool::state
