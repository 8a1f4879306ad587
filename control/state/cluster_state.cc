// ClusterState: Apply() dispatch to the command families (cluster_state_nodes.cc,
// cluster_state_jobs.cc, cluster_state_plan.cc, queues.cc), lookups, the
// whole-state snapshot (read back by cluster_state_restore.cc), and the
// indexes rebuilt from it (pending jobs, idempotency keys, job-state
// counters, the commands-due log).
#include "control/state/cluster_state.h"

#include <algorithm>
#include <atomic>
#include <set>

#include "control/state/cluster_state_internal.h"
#include "control/state/snapshot_image.h"
#include "protocol/event.h"
#include "protocol/model/users.h"

namespace gpool::state {

using internal::HasScaleRule;
using internal::KeyHash;

Status ClusterState::CheckJobShape(const JobSpec& spec) {
  if (spec.tasks.empty()) return Status::InvalidArgument("tasks: at least one task group is required");
  uint64_t total = 0;
  for (const auto& group : spec.tasks) {
    if (group.replicas == 0) return Status::InvalidArgument("tasks: every group needs at least one replica");
    total += group.replicas;
  }
  if (total > kMaxTasksPerJob) {
    return Status::ResourceExhausted("tasks: " + std::to_string(total) + " is more than the " +
                                     std::to_string(kMaxTasksPerJob) + " a job may hold");
  }
  return Status::Ok();
}

Status ClusterState::CheckNodeShape(const NodeSpec& node) {
  if (node.name.empty()) return Status::InvalidArgument("node: a name is required");
  std::set<uint32_t> indices;
  for (const auto& gpu : node.gpus) {
    if (!indices.insert(gpu.index).second) {
      return Status::InvalidArgument("node.gpus: index " + std::to_string(gpu.index) + " is listed twice");
    }
  }
  return Status::Ok();
}

ApplyResult ClusterState::Apply(uint64_t index, const Command& command) {
  applied_index_ = std::max(applied_index_, index);
  const int64_t now = command.time_ms;
  return std::visit(
      [&](const auto& body) -> ApplyResult {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, RegisterNodeCmd>) return ApplyRegisterNode(now, body);
        if constexpr (std::is_same_v<T, NodeStateCmd>) return ApplyNodeState(now, body);
        if constexpr (std::is_same_v<T, SubmitJobCmd>) return ApplySubmitJob(index, now, body);
        if constexpr (std::is_same_v<T, CancelJobCmd>) return ApplyCancelJob(now, body);
        if constexpr (std::is_same_v<T, ApplyPlanCmd>) return ApplyPlan(now, body);
        if constexpr (std::is_same_v<T, TaskEventCmd>) return ApplyTaskEvent(now, body);
        if constexpr (std::is_same_v<T, UpdateNodeCmd>) return ApplyUpdateNode(now, body);
        if constexpr (std::is_same_v<T, UpdateQueueCmd>) return ApplyUpdateQueue(body);
        if constexpr (std::is_same_v<T, RefuseBindCmd>) return ApplyRefuseBind(now, body);
        if constexpr (std::is_same_v<T, NodeLostCmd>) return ApplyNodeLost(now, body);
        if constexpr (std::is_same_v<T, NodeHealthCmd>) return ApplyNodeHealth(now, body);
        if constexpr (std::is_same_v<T, HealthFenceCmd>) return ApplyHealthFence(now, body);
        if constexpr (std::is_same_v<T, SinkCursorCmd>) return ApplySinkCursor(body);
        if constexpr (std::is_same_v<T, ProbeResultCmd>) return ApplyProbeResult(now, body);
        if constexpr (std::is_same_v<T, ForgetJobsCmd>) return ApplyForgetJobs(body);
        if constexpr (std::is_same_v<T, UpdateUserCmd>) return ApplyUpdateUser(now, body);
        if constexpr (std::is_same_v<T, BootstrapCmd>) return ApplyBootstrap(body);
        if constexpr (std::is_same_v<T, AuditCmd>) return ApplyAudit(now, body);
        if constexpr (std::is_same_v<T, RenewSessionCmd>) return ApplyRenewSession(now, body);
        if constexpr (std::is_same_v<T, AlertCmd>) return ApplyAlert(now, body);
        if constexpr (std::is_same_v<T, UsageCheckpointCmd>) return ApplyUsageCheckpoint(now, body);
        if constexpr (std::is_same_v<T, UpdatePricesCmd>) return ApplyUpdatePrices(now, body);
        if constexpr (std::is_same_v<T, EnrolmentCmd>) return ApplyEnrolment(now, body);
        if constexpr (std::is_same_v<T, TokenCmd>) return ApplyToken(now, body);
        if constexpr (std::is_same_v<T, ReplicaKeyCmd>) return ApplyReplicaKey(now, body);
        if constexpr (std::is_same_v<T, CreditCmd>) return ApplyCredit(body);
        if constexpr (std::is_same_v<T, ScaleJobCmd>) return ApplyScaleJob(now, body);
        if constexpr (std::is_same_v<T, SkipJobIdsCmd>) {
          SkipJobIdsTo(body.to);
          return ApplyResult{};
        }
      },
      command.body);
}

const NodeRecord* ClusterState::FindNode(std::string_view name) const {
  auto it = nodes_.find(std::string(name));
  return it == nodes_.end() ? nullptr : &it->second;
}

const JobRecord* ClusterState::FindJob(JobId id) const {
  auto it = jobs_.find(id.value());
  return it == jobs_.end() ? nullptr : &it->second;
}

uint64_t ClusterState::FindIdempotent(std::string_view key) const {
  auto [first, last] = idempotency_.equal_range(KeyHash(key));
  for (auto it = first; it != last; ++it) {
    const JobRecord* job = FindJob(JobId(it->second));
    if (job != nullptr && job->idempotency_key == key) return it->second;
  }
  return 0;
}

JobRecord* ClusterState::MutableJob(uint64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const TaskRecord* ClusterState::FindTask(const TaskId& id) const {
  const JobRecord* job = FindJob(id.job);
  if (job == nullptr || id.index >= job->tasks.size()) return nullptr;
  const TaskRecord& task = job->tasks[id.index];
  return task.id == id ? &task : nullptr;
}

std::vector<std::string> ClusterState::GpuUuids(const TaskRecord& task, bool mig_instances) const {
  std::vector<std::string> uuids;
  const NodeRecord* node = FindNode(task.node);
  if (node == nullptr) return uuids;
  for (uint32_t index : task.gpu_indices) {
    for (const auto& gpu : node->spec.gpus) {
      if (gpu.index == index) uuids.push_back(mig_instances ? DeviceUuid(gpu, task.grant()) : gpu.uuid);
    }
  }
  return uuids;
}

using internal::SnapshotImage;

std::string ClusterState::Snapshot() const {
  std::string image;
  SnapshotTo([&image](std::string_view piece) { image.append(piece); });
  return image;
}

// Writes exactly what packing a SnapshotImage would, record by record: first
// gathering every record into an image held a second copy of the whole state
// while the snapshot was taken (at 100,000 tasks, hundreds of MB at the peak).
// The bytes go to `sink` every few MB, between records, so a forked child
// writing its file holds no image-sized buffer (at 100,000 GPUs and a million
// retained jobs, 2.8 GB more at the peak of a snapshot: the 1.39 GB image and
// the buffer's growth).
void ClusterState::SnapshotTo(const std::function<void(std::string_view)>& sink) const {
  constexpr size_t kSnapshotPieceBytes = size_t{4} << 20;
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  auto hand_on = [&](size_t at_least) {
    if (buffer.size() == 0 || buffer.size() < at_least) return;
    sink(std::string_view(buffer.data(), buffer.size()));
    buffer.clear();
  };
  wire::FieldCounter fields;
  SnapshotImage().Fields(fields);
  packer.BeginMap(fields.count);
  packer.Field("applied", applied_index_);
  packer.Field("next_job_id", next_job_id_);
  packer.Key("nodes");
  packer.BeginArray(static_cast<uint32_t>(nodes_.size()));
  for (const auto& [name, node] : nodes_) {
    // NodeRecord::Fields rebuilds its indexes from the lists it packs, so it
    // packs a copy, one node at a time; job and queue Fields only reassign
    // equal values and pack in place.
    NodeRecord copy = node;
    packer.Value(copy);
    hand_on(kSnapshotPieceBytes);
  }
  packer.Key("jobs");
  packer.BeginArray(static_cast<uint32_t>(jobs_.size()));
  for (const auto& [id, job] : jobs_) {
    packer.Value(job);
    hand_on(kSnapshotPieceBytes);
  }
  packer.Key("queues");
  packer.BeginArray(static_cast<uint32_t>(queues_.size()));
  for (const auto& [name, queue] : queues_) packer.Value(queue);
  packer.Key("events");
  packer.BeginArray(static_cast<uint32_t>(events_.size()));
  for (const auto& event : events_) {
    ClusterEvent copy = event;
    packer.Value(copy);
    hand_on(kSnapshotPieceBytes);
  }
  packer.Field("next_event_seq", next_event_seq_);
  auto cursors = sink_cursors_;
  packer.Field("sink_cursors", cursors);
  packer.Field("breaker_open", breaker_open_);
  packer.Field("breaker_opened_ms", breaker_opened_ms_);
  packer.Key("forgotten");
  packer.BeginArray(static_cast<uint32_t>(forgotten_.size()));
  for (const auto& summary : forgotten_) {
    packer.Value(summary);
    hand_on(kSnapshotPieceBytes);
  }
  packer.Field("forgotten_count", forgotten_count_);
  packer.Key("usage");
  packer.BeginArray(static_cast<uint32_t>(usage_.size()));
  for (const auto& [key, total] : usage_) packer.Value(total);
  packer.Key("users");
  packer.BeginArray(static_cast<uint32_t>(users_.size()));
  for (const auto& [name, user] : users_) {
    UserSpec copy = user;
    packer.Value(copy);
  }
  packer.Key("audit");
  packer.BeginArray(static_cast<uint32_t>(audit_.size()));
  for (const auto& entry : audit_) {
    AuditEntry copy = entry;
    packer.Value(copy);
    hand_on(kSnapshotPieceBytes);
  }
  packer.Field("next_audit_seq", next_audit_seq_);
  packer.Field("enrolled_nodes", enrolled_nodes_);
  packer.Key("alerts");
  packer.BeginArray(static_cast<uint32_t>(alerts_.size()));
  for (const auto& [key, alert] : alerts_) {
    AlertCmd copy = alert;
    packer.Value(copy);
  }
  packer.Key("usage_ledger");
  usage_ledger_.PackImage(packer);  // bounded (--usage-keep-records), packed whole
  hand_on(kSnapshotPieceBytes);
  packer.Key("pending_enrolments");
  packer.BeginArray(static_cast<uint32_t>(pending_enrolments_.size()));
  for (const auto& [key, pending] : pending_enrolments_) {
    PendingEnrolment copy = pending;
    packer.Value(copy);
  }
  packer.Key("join_tokens");
  packer.BeginArray(static_cast<uint32_t>(join_tokens_.size()));
  for (const auto& [id, token] : join_tokens_) {
    JoinTokenInfo copy = token;
    packer.Value(copy);
  }
  auto tokens = api_tokens_.Image();
  packer.Field("api_tokens", tokens);
  packer.Key("replica_keys");
  packer.BeginArray(static_cast<uint32_t>(replica_keys_.size()));
  for (const auto& [id, record] : replica_keys_) {
    ReplicaKeyRecord copy = record;
    packer.Value(copy);
  }
  auto billing = billing_.ToImage();
  packer.Field("billing", billing);
  hand_on(0);
}

void ClusterState::RebuildIndexes() {
  idempotency_.clear();
  pending_.clear();
  due_log_ = {};
  due_count_ = 0;
  job_states_ = {};
  queue_jobs_.clear();
  session_jobs_.clear();
  scale_jobs_.clear();
  active_count_ = 0;
  for (const auto& [name, node] : nodes_) active_count_ += node.tasks.size();
  for (auto& [id, job] : jobs_) {
    if (!job.idempotency_key.empty()) idempotency_.emplace(KeyHash(job.idempotency_key), id);
    CountJobState(job, job.state, +1);
    if (job.spec.session.enabled) session_jobs_.insert(id);
    if (HasScaleRule(job.spec)) scale_jobs_.insert(id);
    bool any_pending = false;
    for (auto& task : job.tasks) {
      task.command_seq = 0;
      if (HoldsResources(task.state)) TrackCommand(task);
      any_pending |= task.state == TaskState::kPending;
    }
    if (!IsTerminal(job.state) && !job.cancel_requested && any_pending) pending_.insert(id);
  }
  RebuildQueueHeld();
}

uint64_t ClusterState::NextGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

std::vector<TaskId> ClusterState::ActiveTasks() const {
  std::vector<TaskId> ids;
  ids.reserve(active_count_);
  for (const auto& [name, node] : nodes_) ids.insert(ids.end(), node.tasks.begin(), node.tasks.end());
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<ClusterState::CommandDue> ClusterState::command_due(const TaskId& id) const {
  const TaskRecord* task = FindTask(id);
  if (task == nullptr || task->command_seq == 0) return std::nullopt;
  return CommandDue{task->command_seq, task->command_stop};
}

void ClusterState::TrackCommand(TaskRecord& task) {
  const bool due = HoldsResources(task.state) && (task.stop_requested || task.state == TaskState::kBound);
  if (!due) return UntrackCommand(task);
  if (task.command_seq != 0 && task.command_stop == task.stop_requested) return;  // the same command is still due
  if (task.command_seq == 0) ++due_count_;
  task.command_seq = ++due_seq_;
  task.command_stop = task.stop_requested;
  due_log_.emplace_back(task.command_seq, task.id);
}

void ClusterState::UntrackCommand(TaskRecord& task) {
  if (task.command_seq == 0) return;
  task.command_seq = 0;
  --due_count_;
  if (due_count_ == 0) {
    due_log_ = {};  // every task runs: hold nothing
  } else if (due_log_.size() > 2 * due_count_ + 1024) {
    // Mostly stale: keep the live entries (amortized, each entry is copied
    // at most once per halving).
    std::erase_if(due_log_, [&](const std::pair<uint64_t, TaskId>& entry) {
      const TaskRecord* t = FindTask(entry.second);
      return t == nullptr || t->command_seq != entry.first;
    });
  }
}

void ClusterState::SetJobState(JobRecord& job, JobState state) {
  if (job.state == state) return;
  CountJobState(job, job.state, -1);
  CountJobState(job, state, +1);
  job.state = state;
}

void ClusterState::CountJobState(const JobRecord& job, JobState state, int sign) {
  job_states_[static_cast<size_t>(state)] += static_cast<uint32_t>(sign);
  if (state != JobState::kPending && state != JobState::kRunning) return;
  auto& counts = queue_jobs_[job.spec.queue];
  counts[state == JobState::kRunning ? 1 : 0] += static_cast<uint32_t>(sign);
  if (counts[0] == 0 && counts[1] == 0) queue_jobs_.erase(job.spec.queue);
}

}  // namespace gpool::state
