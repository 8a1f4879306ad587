// ClusterState: the deterministic state machine of the coordinator.
//
// Owns every node, job and task record. The only way to change it is Apply()
// with a committed log command, in log order; the same log always produces
// the same state, which is what lets Raft replicate it later without change.
// Apply validates each command against the current state and, if it does not
// hold (a plan that would double-book a GPU, a cancel of a finished job),
// changes nothing and returns a typed error.
//
// Thread-safety: none. One owner thread applies and reads.
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "control/state/commands.h"
#include "control/state/records.h"
#include "control/state/retention.h"
#include "control/state/api_tokens.h"
#include "control/state/billing_ledger.h"
#include "control/state/usage_ledger.h"
#include "protocol/event.h"
#include "protocol/health.h"
#include "protocol/model/node_update.h"
#include "protocol/model/run_as.h"
#include "protocol/model/task_report.h"
#include "protocol/model/users.h"
#include "topology/cluster_view.h"
#include "topology/device_share.h"

namespace gpool::state {

struct ApplyResult {
  Status status;
  bool committed = true;   // false: the command never reached the log (status says why)
  uint64_t job_id = 0;     // SubmitJob, CancelJob
  bool duplicate = false;  // SubmitJob matched an idempotency key
  std::string job_state;   // CancelJob: the state after the cancel
  uint32_t binds_applied = 0;   // ApplyPlan
  uint32_t jobs_rejected = 0;   // ApplyPlan: jobs whose binds no longer fit
  uint64_t jobs_forgotten = 0;  // ForgetJobs
};

class ClusterState {
 public:
  ClusterState() : generation_(NextGeneration()) { EnsureBuiltinQueues(); }
  ApplyResult Apply(uint64_t index, const Command& command);

  // Whole-state snapshot; Restore replaces everything with it.
  std::string Snapshot() const;
  // The same bytes, handed to `sink` a few MB at a time in order, so that a
  // caller writing them to a file never holds the whole image.
  void SnapshotTo(const std::function<void(std::string_view)>& sink) const;
  Status Restore(std::string_view snapshot);

  uint64_t applied_index() const { return applied_index_; }
  // The id the next submitted job gets.
  uint64_t next_job_id() const { return next_job_id_; }
  // Job ids from now on are `floor` or above. A restore from a snapshot
  // calls it (outside the log): the ids the old cluster handed out after
  // its snapshot must not name new jobs, which workers that ran the old
  // ones would take for binds they already hold.
  void SkipJobIdsTo(uint64_t floor) { next_job_id_ = std::max(next_job_id_, floor); }
  const std::map<std::string, NodeRecord>& nodes() const { return nodes_; }
  // The nodes the health policy has something to look at: a condition (the
  // worker's or a probe's), a fenced GPU, or the policy's own cordon (a
  // healthy node can be neither fenced nor lifted). Kept as those change,
  // so a policy round (ten a second) walks these, not the whole cluster:
  // 12,500 nodes at 100,000 GPUs cost a few percent of a core to walk.
  const std::set<std::string>& nodes_needing_health() const { return nodes_needing_health_; }
  static bool NeedsHealthLook(const NodeRecord& node) {
    return !node.health.empty() || !node.probe_health.empty() || !node.unhealthy_gpus.empty() ||
           (node.cordoned && node.cordon_reason == "health");
  }
  // Worker keys an admin enrolled for nodes that have not registered yet
  // (`gpool admin node enrol`), by node name: a registration under that name
  // with another key is refused; the first with this key binds it.
  const std::map<std::string, std::string>& enrolled_nodes() const { return enrolled_nodes_; }
  // Admission enrolment (cluster_state_enrolment.cc): worker keys that
  // registered a node no admin has admitted yet, by key (at most
  // kMaxPendingEnrolments), and join tokens by id (at most kMaxJoinTokens).
  static constexpr size_t kMaxPendingEnrolments = 256;
  static constexpr size_t kMaxJoinTokens = 1024;
  const std::map<std::string, PendingEnrolment>& pending_enrolments() const { return pending_enrolments_; }
  const std::map<std::string, JoinTokenInfo>& join_tokens() const { return join_tokens_; }
  // Whether `key` may register `node` under admission enrolment without a
  // token: bound to it already (or rotated away with a grace that lasts past
  // wall time `now`), or approved (enrolled) for it.
  bool KeyAdmitted(const std::string& node, const std::string& key, int64_t now) const;
  // Why `hash` cannot admit a node at `now` (unknown, used, revoked,
  // expired), or Ok: a typed Unauthenticated error naming the reason.
  Status CheckJoinToken(const std::string& hash, int64_t now) const;
  const std::map<uint64_t, JobRecord>& jobs() const { return jobs_; }
  // Always holds "root" and "default" (a child of root).
  const std::map<std::string, QueueRecord>& queues() const { return queues_; }
  // Users (protocol/messages_users.h), by name; the admin check reads them.
  const std::map<std::string, UserSpec>& users() const { return users_; }
  const UserSpec* FindUser(std::string_view name) const;
  // The user record `update` would leave (the merged keys or grants of an
  // existing user); AlreadyExists or NotFound as apply would answer. The
  // gateway validates it against today's rules before proposing.
  // now: wall ms (the command's time on apply; the gateway's clock at the
  // edge): a rotate-key's deadline is counted from it, and keys past their
  // retirement are dropped from the record it returns.
  Result<UserSpec> UserAfterUpdate(const UpdateUser& update, int64_t now) const;
  bool HasAdmin() const;
  // `queue` is `root` or one of its descendants.
  bool QueueInSubtree(std::string_view queue, std::string_view root) const;
  // The audit stream, oldest first: entries carry seq from 1 without gaps.
  static constexpr size_t kMaxAudit = 10'000;
  const std::deque<AuditEntry>& audit() const { return audit_; }
  // A job's pool where it names none: pooled for one asking for GPU shares
  // or MIG instances when the cluster has pooled nodes (sharing belongs
  // there), else public. A sharing job naming public in such a cluster is
  // refused (FailedPrecondition): public nodes take whole devices.
  Status ResolveSubmitPool(JobSpec& spec) const;
  // The job's queue and every ancestor must allow its pool (QueueSpec.pools);
  // a job naming the exclusive pool also needs an exclusive node its queue
  // may use: one owned by the queue or an ancestor, or owned by nobody.
  Status CheckSubmitPool(const std::string& queue, const std::string& pool) const;
  const QueueRecord* FindQueue(std::string_view name) const;
  // Issue 50 (queue_grants.cc): whether jobs of `queue` may be of
  // `priority_class`: low and medium always; high and system when granted
  // to the queue or one of its ancestors.
  bool ClassGranted(const std::string& queue, std::string_view priority_class) const;
  // The queue or ancestor whose grant opens `priority_class` to `queue`; ""
  // when none does (or the class needs none).
  std::string ClassGrantedBy(const std::string& queue, std::string_view priority_class) const;
  // What bound and running tasks hold, per queue, including descendants'.
  std::map<std::string, Quota> QueueAllocations() const;
  const NodeRecord* FindNode(std::string_view name) const;
  const JobRecord* FindJob(JobId id) const;
  const TaskRecord* FindTask(const TaskId& id) const;
  // Issue 31: the Unix identity the job's tasks run as (its owner's uid/gid
  // mapping), put in every bind; nullopt: no mapping known, the worker runs
  // the task as its --task-user. In its own file, run_as.cc.
  std::optional<RunAs> RunAsFor(const JobRecord& job) const;
  // The UUIDs of the GPUs a task holds, in the order of its gpu_indices.
  // With `mig_instances`, a MIG task's instance UUIDs instead of its GPUs'
  // (the worker resolves instances itself, so binds carry the GPUs').
  std::vector<std::string> GpuUuids(const TaskRecord& task, bool mig_instances = true) const;
  // Tasks bound or running (holding resources), in id order. Built on each
  // call from the nodes' task sets: no cluster-wide index is kept for them,
  // at 64 bytes a task it would be a tenth of what a live task costs.
  std::vector<TaskId> ActiveTasks() const;
  size_t active_task_count() const { return active_count_; }
  const std::set<uint64_t>& pending_jobs() const { return pending_; }
  // Jobs currently in `state` (a counter kept on every change, for status pages).
  uint32_t jobs_in_state(JobState state) const { return job_states_[static_cast<size_t>(state)]; }
  // Pending ([0]) and running ([1]) jobs per queue (the job's own queue, not
  // its ancestors); queues with neither are absent. Kept like jobs_in_state.
  const std::unordered_map<std::string, std::array<uint32_t, 2>>& queue_jobs() const { return queue_jobs_; }
  // Every job that is an rGPU session (spec.session.enabled), finished ones
  // included until retention forgets them.
  const std::set<uint64_t>& session_jobs() const { return session_jobs_; }
  // Every job with a scale rule on some group (elastic scaling by signal),
  // finished ones included until retention forgets them: what the scale
  // driver looks at, instead of every retained job (issue 49).
  const std::set<uint64_t>& scale_jobs() const { return scale_jobs_; }

  // Tasks whose worker must still be told something: bound and not yet
  // running (a bind), or holding resources with a stop requested (a
  // preempt). Each such task carries a sequence number (TaskRecord::
  // command_seq), new whenever it enters the index or turns from bind to
  // preempt, and a log of (seq, task) in seq order lets the dispatcher read
  // only what changed since the last seq it saw. Nothing is allocated per
  // task: the log is one vector, compacted as tasks leave it, and empty
  // (released) once every task runs. Sequence numbers only grow, also
  // across Restore.
  struct CommandDue {
    uint64_t seq = 0;
    bool stop = false;  // a preempt; otherwise a bind
  };
  std::optional<CommandDue> command_due(const TaskId& id) const;
  size_t commands_due_count() const { return due_count_; }
  uint64_t command_seq() const { return due_seq_; }
  // Calls f(task, due) for each task whose current command became due after
  // `seq`, in seq order.
  template <typename F>
  void ForEachCommandDueAfter(uint64_t seq, F&& f) const {
    auto it = std::upper_bound(due_log_.begin(), due_log_.end(), seq,
                               [](uint64_t s, const std::pair<uint64_t, TaskId>& entry) { return s < entry.first; });
    for (; it != due_log_.end(); ++it) {
      const TaskRecord* task = FindTask(it->second);
      if (task != nullptr && task->command_seq == it->first) f(*task, CommandDue{task->command_seq, task->command_stop});
    }
  }

  // The committed event stream (protocol/event.h): the newest kMaxEvents,
  // seq from 1 without gaps. events_after(seq) is everything kept after seq.
  static constexpr size_t kMaxEvents = 10'000;
  const std::deque<ClusterEvent>& events() const { return events_; }
  std::vector<ClusterEvent> EventsAfter(uint64_t seq, size_t limit) const;
  uint64_t last_event_seq() const { return next_event_seq_ - 1; }
  // Webhook sinks' committed delivery cursors (SinkCursorCmd).
  const std::map<std::string, uint64_t>& sink_cursors() const { return sink_cursors_; }
  // Whether the fencing circuit breaker is open (HealthFenceCmd).
  bool health_breaker_open() const { return breaker_open_; }

  // Retention (retention.h). Whether a ForgetJobsCmd with these numbers
  // would forget any job now: the leader proposes one only then. Answered
  // from counts and a bound while no finished job can be past the policy
  // (fewer finished jobs than keep_newest, none finished before the
  // cutoff): a million retained jobs are walked only when one may be
  // forgettable, not on every check on the leader's loop (issue 49).
  bool AnyForgettable(int64_t finished_before_ms, uint64_t keep_newest) const;
  // Whether `id` was admitted and has been forgotten since (ids are handed
  // out in order and only retention removes a job).
  bool WasForgotten(JobId id) const;
  // The summary of a forgotten job while it is among the newest
  // kMaxSummaries forgotten; null otherwise.
  static constexpr size_t kMaxSummaries = 10'000;
  const ForgottenJob* FindForgotten(JobId id) const;
  const std::deque<ForgottenJob>& forgotten() const { return forgotten_; }
  uint64_t forgotten_count() const { return forgotten_count_; }
  // Every forgotten job summed per (queue, user).
  const std::map<std::pair<std::string, std::string>, UsageTotal>& usage_totals() const { return usage_; }
  // Alerts firing now, by key (control/alert_driver.h).
  const std::map<std::string, AlertCmd>& alerts() const { return alerts_; }

  // Usage accounting (usage_ledger.h; cluster_state_usage.cc): the records
  // of ended task attempts and their rollups, and what running tasks have
  // used from their start to `now_ms` (as records ending then).
  const UsageLedger& usage_ledger() const { return usage_ledger_; }
  // API tokens of the HTTP port (api_tokens.h): hashes, owners, scopes.
  const ApiTokenTable& api_tokens() const { return api_tokens_; }
  // Replica keys rotated by an admin (issue 48), by replica id; a replica
  // without one has its configuration's key (replica_keys.h).
  const std::map<uint64_t, ReplicaKeyRecord>& replica_keys() const { return replica_keys_; }
  std::vector<UsageRecord> RunningUsage(int64_t now_ms) const;
  // Billing (issue 50; billing_ledger.h, cluster_state_billing.cc): credit
  // accounts and monthly bills; the account that pays for `queue` (its own
  // or its nearest ancestor's; "" when none does), and whether that account
  // is used up, in which case the queue's jobs that have not started are
  // left out of the scheduler's view.
  const BillingLedger& billing() const { return billing_; }
  std::string CreditAccountOf(const std::string& queue) const;
  bool OutOfCredit(const std::string& queue) const;
  // "root/.../queue"; the name alone for a queue that no longer exists.
  std::string QueuePath(const std::string& queue) const;

  // The scheduler's input: free capacity per node, the queue tree, tasks
  // holding resources (eviction candidates) and jobs with tasks to place.
  // `now_ms` only dates how long jobs have waited.
  topology::ClusterView BuildView(int64_t now_ms = 0) const;
  // What a view was last refreshed from; starts empty (the first refresh
  // builds everything).
  struct ViewCursor {
    uint64_t generation = 0;  // ClusterState's generation; 0: never refreshed
    uint64_t version = 0;     // node changes up to this one are in the view
  };
  // Brings `view` up to date for a scheduling cycle, as BuildView would
  // build it: a node's view is rebuilt only if the node changed since
  // `cursor` (all of them the first time, after a Restore, or when nodes
  // were added); the queues, running tasks and pending jobs are rebuilt.
  // The node views are the bulk of a view (a thousand nodes of eight GPUs
  // each), while a cycle typically follows a change to a few nodes.
  void RefreshView(topology::ClusterView& view, ViewCursor& cursor, int64_t now_ms) const;

  // Static MIG layouts must be ones the hardware allows (for models with a
  // profile table), or the scheduler would hand out instances that overlap.
  // A rule of the edge: the node registry (and the simulator's node files)
  // check it before a registration reaches the log.
  static Status CheckMigLayouts(const NodeSpec& node);
  // What apply needs of a job or a node, whatever rules the edge that
  // admitted it had (ValidateJobSpec, ValidateNodeSpec): a job has tasks,
  // at most kMaxTasksPerJob of them (records are made per task); a node has
  // a name and GPU indices that name one GPU each.
  static constexpr uint64_t kMaxTasksPerJob = 1'000'000;
  static Status CheckJobShape(const JobSpec& spec);
  static Status CheckNodeShape(const NodeSpec& node);

 private:
  ApplyResult ApplyRegisterNode(int64_t now, const RegisterNodeCmd& cmd);
  ApplyResult ApplyNodeState(int64_t now, const NodeStateCmd& cmd);
  ApplyResult ApplySubmitJob(uint64_t index, int64_t now, const SubmitJobCmd& cmd);
  ApplyResult ApplyCancelJob(int64_t now, const CancelJobCmd& cmd);
  // rGPU sessions (cluster_state_sessions.cc).
  ApplyResult ApplyRenewSession(int64_t now, const RenewSessionCmd& cmd);
  ApplyResult ApplyAlert(int64_t now, const AlertCmd& cmd);
  void NoteSessionStarted(JobRecord& job, const TaskEvent& event);
  ApplyResult ApplyUpdateNode(int64_t now, const UpdateNodeCmd& cmd);
  void ApplyCordon(int64_t now, const UpdateNode& update, NodeRecord& node);
  ApplyResult ApplyPlan(int64_t now, const ApplyPlanCmd& cmd);
  ApplyResult ApplyTaskEvent(int64_t now, const TaskEventCmd& cmd);
  ApplyResult ApplyRefuseBind(int64_t now, const RefuseBindCmd& cmd);
  ApplyResult ApplyNodeLost(int64_t now, const NodeLostCmd& cmd);
  // Ready again (registered, or heard from): a node-ready event if it was not.
  void MarkReady(NodeRecord& node, const std::string& name, int64_t now);
  ApplyResult ApplyNodeHealth(int64_t now, const NodeHealthCmd& cmd);
  // Replaces a node's worker-reported conditions, emitting health-raised for
  // each new or worsened one and health-cleared for each gone, whether they
  // come with a heartbeat or with a (re-)registration.
  void SetNodeHealth(int64_t now, const std::string& name, NodeRecord& node,
                     const std::vector<HealthCondition>& health);
  ApplyResult ApplyHealthFence(int64_t now, const HealthFenceCmd& cmd);
  ApplyResult ApplySinkCursor(const SinkCursorCmd& cmd);
  ApplyResult ApplyProbeResult(int64_t now, const ProbeResultCmd& cmd);
  ApplyResult ApplyForgetJobs(const ForgetJobsCmd& cmd);
  ApplyResult ApplyUpdateUser(int64_t now, const UpdateUserCmd& cmd);
  ApplyResult ApplyBootstrap(const BootstrapCmd& cmd);
  ApplyResult ApplyAudit(int64_t now, const AuditCmd& cmd);
  ApplyResult ApplyUsageCheckpoint(int64_t now, const UsageCheckpointCmd& cmd);
  ApplyResult ApplyUpdatePrices(int64_t now, const UpdatePricesCmd& cmd);
  ApplyResult ApplyEnrolment(int64_t now, const EnrolmentCmd& cmd);
  // A registration under admission enrolment: Ok if its key may take the
  // name (consuming its join token, whose labels land in `labels`).
  Status AdmitRegistration(int64_t now, const RegisterNodeCmd& cmd, std::map<std::string, std::string>* labels);
  ApplyResult ApplyToken(int64_t now, const TokenCmd& cmd);
  ApplyResult ApplyReplicaKey(int64_t now, const ReplicaKeyCmd& cmd);
  ApplyResult ApplyCredit(const CreditCmd& cmd);
  // Bills [max(start, billed_to), end) of an attempt (and, when it ended,
  // its minimum-period top-up) to its queue's month and account.
  void BillUsage(const UsageRecord& record, int64_t end_ms, bool ended);
  // At a checkpoint: bills every running attempt up to `now`.
  void BillRunning(int64_t now);
  ApplyResult ApplyScaleJob(int64_t now, const ScaleJobCmd& cmd);
  // Records the usage of an attempt that is about to stop holding its
  // resources (called once per attempt, before ReleaseResources). An end
  // whose real time is unknown (lost with its node) is charged up to the
  // last usage checkpoint only.
  void ChargeUsage(const JobRecord& job, const TaskRecord& task, std::string_view outcome, int64_t end_ms);
  UsageRecord UsageRecordOf(const JobRecord& job, const TaskRecord& task, int64_t end_ms) const;
  // Every key names one user, and every queue a grant names exists.
  Status CheckUserAgainstState(const UserSpec& spec) const;
  // Issue 48, for a command carrying a uid range (last > 0; an older entry
  // is left as it is): a spec's uid another user holds is AlreadyExists; a
  // spec without one gets the lowest of [first, last] no other user holds
  // (gid: the same, unless given), ResourceExhausted when all are held.
  Status AssignUid(UserSpec& spec, uint32_t first, uint32_t last) const;
  // The ids ForgetJobsCmd would forget, oldest finished first.
  std::vector<uint64_t> Forgettable(int64_t finished_before_ms, uint64_t keep_newest) const;
  void Forget(const JobRecord& job);
  // Appends to the event stream, dropping the oldest past kMaxEvents.
  void Emit(int64_t now, EventKind kind, ClusterEvent event);
  void EmitTask(int64_t now, EventKind kind, const TaskRecord& task, std::string message);
  void EmitNodeEvent(int64_t now, EventKind kind, const std::string& node, std::string reason, std::string actor,
                     std::string message, std::string dedupe_key, std::string severity = {});
  // One key per occurrence of a condition, shared by its raise and its clear.
  static std::string HealthDedupeKey(const std::string& node, const HealthCondition& condition);
  // Requeues `lost` (ended by node loss or a failure) as its next attempt if
  // the job's restart policy allows it for `cause`; a gang left below its
  // minimum is requeued whole (its other tasks stopped as evicted). Counts
  // one restart per job per call of StartRestart. False: the policy does not
  // allow it (or no attempts are left) and nothing changed.
  bool RestartAllowed(const JobRecord& job, RestartPolicy cause) const;
  void CountRestart(JobRecord& job, const std::string& reason);
  void RequeueForRestart(JobRecord& job, TaskRecord& task, const std::string& reason, int64_t now);
  // Stops (as evicted, so they requeue when they end) the job's running tasks
  // when a group is below its minimum: a gang never runs partly.
  void RequeueGangIfBroken(JobRecord& job, const std::string& reason);
  // A task that holds resources is gone with its node (lost, or unknown to
  // its re-registered worker): requeued by the restart policy (once per job
  // per loss: `restarted` collects the jobs that counted one), else Lost.
  // The caller runs RequeueGangIfBroken for `restarted` and UpdateJobState.
  void LoseTask(JobRecord& job, TaskRecord& task, const std::string& why, int64_t now,
                std::set<uint64_t>& restarted);
  // The task ended (exited, failed, or refused): it is requeued if it was
  // evicted, else finished as `ended` (cancelled if a stop was asked for).
  // `timed_out`: the worker stopped it at its max_runtime, or over its GPU
  // share (StoppedOverShare); never restarted.
  void EndTask(JobRecord& job, TaskRecord& task, TaskState ended, int64_t when, bool timed_out = false);
  ApplyResult ApplyUpdateQueue(const UpdateQueueCmd& cmd);
  // UpdateQueue grant-class / revoke-class (queue_grants.cc).
  ApplyResult ApplyClassGrant(const UpdateQueue& update);
  Status CheckQueueAgainstTree(const QueueSpec& spec, bool creating) const;
  Status CheckSubmitQueue(const std::string& name) const;
  void EnsureBuiltinQueues();
  bool MeetsGangAfter(const JobRecord& job, const std::set<uint32_t>& binding) const;
  void ApplyEviction(int64_t now, const PlanEviction& eviction);
  // An evicted task that stopped goes back to pending as its next attempt.
  bool RequeueIfEvicted(JobRecord& job, TaskRecord& task, int64_t now);
  void FinishUnneededReplicas(JobRecord& job, int64_t now);

  // Device loads a plan's earlier binds add, per (node, GPU index).
  using PlanLoads = std::map<std::pair<std::string, uint32_t>, topology::DeviceLoad>;
  // CPU ids a plan's earlier binds of one job hold exclusively, per (node, id).
  using PlanCpus = std::set<std::pair<std::string, uint32_t>>;
  Status CheckBind(const JobRecord& job, const PlanBind& bind,
                   const std::set<std::pair<std::string_view, uint32_t>>& taken,
                   std::map<std::string, std::pair<uint64_t, uint64_t>>& extra, PlanLoads& loads,
                   PlanCpus& cpus) const;
  // Exclusive whole cores (exclusive_cpus.cc): a bind's CPU ids are as many
  // as the task asks for, its node's (the spec's NUMA cpulists), and held by
  // no task there nor by `cpus` (which then holds them too).
  Status CheckExclusiveCpus(const Resources& need, const PlanBind& bind, const NodeRecord& node,
                            PlanCpus& cpus) const;
  // The CPU ids the node's bound and running tasks hold as exclusive cores, sorted.
  std::vector<uint32_t> ExclusiveCpusHeld(const NodeRecord& node) const;
  // The free ids of each of the spec's NUMA nodes (parallel to spec.numa).
  void FillNumaCpuIds(topology::NodeView& view, const NodeRecord& node) const;
  Status CheckGrant(const Resources& need, const PlanBind& bind, const NodeRecord& node, PlanLoads& loads) const;
  // A bind of time-sliced replicas (DeviceGrant::time_slice): each GPU is
  // time-sliced and has a replica no task (nor the plan's earlier binds) holds.
  Status CheckTimeSlices(const PlanBind& bind, const NodeRecord& node, PlanLoads& loads) const;
  // A GPU as the scheduler sees it: its spec, who holds it whole, and what
  // its sharing tenants (shares, MIG instances, cores) hold.
  topology::GpuSlot GpuSlotOf(const NodeRecord& node, const GpuInfo& gpu) const;
  // The part of a GPU slot that tasks change (who holds it, tenants' loads).
  void FillGpuLoad(topology::GpuSlot& slot, const NodeRecord& node, const GpuInfo& gpu) const;
  topology::NodeView ToNodeView(const std::string& name, const NodeRecord& node) const;
  // Updates what tasks change in a view built by ToNodeView from the same
  // spec (free CPU, memory, GPUs, NUMA), reusing its buffers.
  void FillNodeLoad(topology::NodeView& view, const NodeRecord& node) const;
  // CPU and memory of the node's tasks charged to NUMA node `id`.
  std::pair<uint64_t, uint64_t> NumaUsed(const NodeRecord& node, int32_t id) const;
  void HoldDevices(NodeRecord& node, const TaskRecord& task);
  void ReleaseDevices(NodeRecord& node, const TaskRecord& task);
  void FinishTask(JobRecord& job, TaskRecord& task, TaskState state, int64_t now);
  void ReleaseResources(TaskRecord& task);
  void UpdateJobState(JobRecord& job, int64_t now);
  JobRecord* MutableJob(uint64_t id);
  void RebuildIndexes();
  // Adds (sign +1) or takes away (-1) what a bound or running task holds in
  // queue_held_, under its job's queue.
  void CountQueueHeld(const JobRecord& job, const NodeRecord& node, const TaskRecord& task, int sign);
  void RebuildQueueHeld();
  // Counts the job in (sign +1) or out of (-1) `state` in job_states_ and
  // queue_jobs_.
  void CountJobState(const JobRecord& job, JobState state, int sign);
  // Marks what the scheduler's view shows of the node stale: its load
  // (tasks bound or released), or also its spec, state, labels, taints or
  // pool. RefreshView updates the first in place and rebuilds for the second.
  void Touch(NodeRecord& node) { node.view_version = ++version_; }
  void TouchSpec(NodeRecord& node) { node.spec_version = node.view_version = ++version_; }
  // Puts the task into, or takes it out of, the commands-due index after a
  // change to its state or stop request.
  void TrackCommand(TaskRecord& task);
  void UntrackCommand(TaskRecord& task);
  void SetJobState(JobRecord& job, JobState state);
  void BuildRunning(topology::ClusterView& view, int64_t now_ms) const;
  void BuildPending(topology::ClusterView& view, int64_t now_ms) const;
  // The job submitted with this idempotency key; 0 if none.
  uint64_t FindIdempotent(std::string_view key) const;

  uint64_t applied_index_ = 0;
  uint64_t next_job_id_ = 1;
  std::deque<ClusterEvent> events_;
  uint64_t next_event_seq_ = 1;
  std::map<std::string, uint64_t> sink_cursors_;
  bool breaker_open_ = false;
  int64_t breaker_opened_ms_ = 0;
  std::map<std::string, NodeRecord> nodes_;
  std::set<std::string> nodes_needing_health_;  // nodes_needing_health()
  // Brings a node's membership of nodes_needing_health_ up to date after
  // anything NeedsHealthLook reads changed.
  void NoteHealthLook(const std::string& name, const NodeRecord& node) {
    if (NeedsHealthLook(node)) {
      nodes_needing_health_.insert(name);
    } else {
      nodes_needing_health_.erase(name);
    }
  }
  std::map<uint64_t, JobRecord> jobs_;
  // At most the earliest finish_ms of any finished job (INT64_MIN: unknown,
  // as after a restore): lowered as jobs finish, set exactly by the walk in
  // AnyForgettable. Forgetting only raises the true minimum, so it stays a
  // bound. A cache of what jobs_ holds, never in a snapshot.
  mutable int64_t finish_floor_ms_ = INT64_MIN;
  std::map<std::string, QueueRecord> queues_;
  std::map<std::string, UserSpec> users_;
  std::map<std::string, std::string> enrolled_nodes_;  // node -> worker key, until it registers
  std::map<std::string, PendingEnrolment> pending_enrolments_;  // worker key -> its pending node
  std::map<std::string, JoinTokenInfo> join_tokens_;           // id -> token
  std::deque<AuditEntry> audit_;  // the newest kMaxAudit entries
  uint64_t next_audit_seq_ = 1;
  // Retention: the newest forgotten jobs' summaries (oldest first), how many
  // were ever forgotten, and every forgotten job's usage per (queue, user).
  std::deque<ForgottenJob> forgotten_;
  uint64_t forgotten_count_ = 0;
  std::map<std::pair<std::string, std::string>, UsageTotal> usage_;
  std::map<std::string, AlertCmd> alerts_;  // firing, by key
  UsageLedger usage_ledger_;
  BillingLedger billing_;
  ApiTokenTable api_tokens_;
  std::map<uint64_t, ReplicaKeyRecord> replica_keys_;
  // Set while LoseTask ends an attempt: its end time is unknown (the node
  // went silent) unless the worker reported it (usage_end_known_).
  bool losing_task_ = false;
  bool usage_end_known_ = false;
  // Set while a registration ends an attempt its worker gave no time for.
  bool usage_end_unknown_ = false;
  // Idempotency key -> job, as hash(key) -> job ids, each checked against
  // the key its JobRecord keeps: a second copy of every 32-character key
  // would cost about 80 bytes a job more. Rebuilt on Restore.
  // Ordered, not hashed: a hash table of every retained job's key rehashed
  // all of it on the submission that crossed its load factor, one apply of
  // 100-360 ms on every replica at 10,000 GPUs and far more at a million
  // jobs (issue 49); a lookup per submission costs log n here instead.
  std::multimap<uint64_t, uint64_t> idempotency_;
  std::set<uint64_t> pending_;
  size_t active_count_ = 0;
  // What bound and running tasks hold, summed per job queue (a leaf as a
  // rule); QueueAllocations adds it up the tree. Kept as tasks bind and
  // release, so a scrape, an alert check or `gpool queues` costs per queue,
  // not per task (a walk of 100,000 tasks was 50-90 ms). Rebuilt on Restore.
  struct QueueHeld {
    uint64_t gpu = 0, cpu = 0, memory = 0;
    std::map<std::string, uint64_t> gpu_by_model;
  };
  std::unordered_map<std::string, QueueHeld> queue_held_;
  std::unordered_map<std::string, std::array<uint32_t, 2>> queue_jobs_;
  std::set<uint64_t> session_jobs_;
  std::set<uint64_t> scale_jobs_;
  std::array<uint32_t, static_cast<size_t>(JobState::kCancelled) + 1> job_states_{};
  std::vector<std::pair<uint64_t, TaskId>> due_log_;  // (seq, task) by seq; stale entries until compacted
  size_t due_count_ = 0;
  uint64_t due_seq_ = 0;
  // View bookkeeping (not state). Generations are unique in the process, so
  // a cursor never matches another ClusterState, or this one after a Restore.
  static uint64_t NextGeneration();
  uint64_t version_ = 0;
  uint64_t generation_;
};

}  // namespace gpool::state
