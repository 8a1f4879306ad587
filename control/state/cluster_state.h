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

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "control/state/commands.h"
#include "topology/device_share.h"
#include "control/state/records.h"
#include "topology/cluster_view.h"

namespace gpool::state {

struct ApplyResult {
  Status status;
  bool committed = true;   // false: the command never reached the log (status says why)
  uint64_t job_id = 0;     // SubmitJob, CancelJob
  bool duplicate = false;  // SubmitJob matched an idempotency key
  std::string job_state;   // CancelJob: the state after the cancel
  uint32_t binds_applied = 0;   // ApplyPlan
  uint32_t jobs_rejected = 0;   // ApplyPlan: jobs whose binds no longer fit
};

class ClusterState {
 public:
  ClusterState() { EnsureBuiltinQueues(); }
  ApplyResult Apply(uint64_t index, const Command& command);

  // Whole-state snapshot; Restore replaces everything with it.
  std::string Snapshot() const;
  Status Restore(std::string_view snapshot);

  uint64_t applied_index() const { return applied_index_; }
  const std::map<std::string, NodeRecord>& nodes() const { return nodes_; }
  const std::map<uint64_t, JobRecord>& jobs() const { return jobs_; }
  // Always holds "root" and "default" (a child of root).
  const std::map<std::string, QueueRecord>& queues() const { return queues_; }
  const QueueRecord* FindQueue(std::string_view name) const;
  // What bound and running tasks hold, per queue, including descendants'.
  std::map<std::string, Quota> QueueAllocations() const;
  const NodeRecord* FindNode(std::string_view name) const;
  const JobRecord* FindJob(JobId id) const;
  const TaskRecord* FindTask(const TaskId& id) const;
  // The UUIDs of the GPUs a task holds, in the order of its gpu_indices.
  // With `mig_instances`, a MIG task's instance UUIDs instead of its GPUs'
  // (the worker resolves instances itself, so binds carry the GPUs').
  std::vector<std::string> GpuUuids(const TaskRecord& task, bool mig_instances = true) const;
  // Tasks bound or running: those the dispatcher must keep in step with workers.
  const std::set<TaskId>& active_tasks() const { return active_; }
  const std::set<uint64_t>& pending_jobs() const { return pending_; }

  // The scheduler's input: free capacity per node, the queue tree, tasks
  // holding resources (eviction candidates) and jobs with tasks to place.
  // `now_ms` only dates how long jobs have waited.
  topology::ClusterView BuildView(int64_t now_ms = 0) const;

 private:
  ApplyResult ApplyRegisterNode(int64_t now, const RegisterNodeCmd& cmd);
  ApplyResult ApplyNodeState(int64_t now, const NodeStateCmd& cmd);
  ApplyResult ApplySubmitJob(uint64_t index, int64_t now, const SubmitJobCmd& cmd);
  ApplyResult ApplyCancelJob(int64_t now, const CancelJobCmd& cmd);
  ApplyResult ApplyUpdateNode(int64_t now, const UpdateNodeCmd& cmd);
  ApplyResult ApplyPlan(int64_t now, const ApplyPlanCmd& cmd);
  ApplyResult ApplyTaskEvent(int64_t now, const TaskEventCmd& cmd);
  ApplyResult ApplyUpdateQueue(const UpdateQueueCmd& cmd);
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
  Status CheckBind(const JobRecord& job, const PlanBind& bind, const std::set<std::pair<std::string, uint32_t>>& taken,
                   std::map<std::string, std::pair<uint64_t, uint64_t>>& extra, PlanLoads& loads) const;
  Status CheckGrant(const Resources& need, const PlanBind& bind, const NodeRecord& node, PlanLoads& loads) const;
  // A GPU as the scheduler sees it: its spec, who holds it whole, and what
  // its sharing tenants (shares, MIG instances, cores) hold.
  topology::GpuSlot GpuSlotOf(const NodeRecord& node, const GpuInfo& gpu) const;
  topology::NodeView ToNodeView(const std::string& name, const NodeRecord& node) const;
  // CPU and memory of the node's tasks charged to NUMA node `id`.
  std::pair<uint64_t, uint64_t> NumaUsed(const NodeRecord& node, int32_t id) const;
  void HoldDevices(NodeRecord& node, const TaskRecord& task);
  // Static MIG layouts must be ones the hardware allows (for models with a
  // profile table), or the scheduler would hand out instances that overlap.
  static Status CheckMigLayouts(const NodeSpec& node);
  void ReleaseDevices(NodeRecord& node, const TaskRecord& task);
  void FinishTask(JobRecord& job, TaskRecord& task, TaskState state, int64_t now);
  void ReleaseResources(TaskRecord& task);
  void UpdateJobState(JobRecord& job, int64_t now);
  JobRecord* MutableJob(uint64_t id);
  void RebuildIndexes();
  // The job submitted with this idempotency key; 0 if none.
  uint64_t FindIdempotent(std::string_view key) const;

  uint64_t applied_index_ = 0;
  uint64_t next_job_id_ = 1;
  std::map<std::string, NodeRecord> nodes_;
  std::map<uint64_t, JobRecord> jobs_;
  std::map<std::string, QueueRecord> queues_;
  // Idempotency key -> job, as hash(key) -> job ids, each checked against
  // the key its JobRecord keeps: a second copy of every 32-character key
  // would cost about 80 bytes a job more. Rebuilt on Restore.
  std::unordered_multimap<uint64_t, uint64_t> idempotency_;
  std::set<TaskId> active_;
  std::set<uint64_t> pending_;
};

}  // namespace gpool::state
