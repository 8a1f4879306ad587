// ClusterState: usage accounting (issue 34). The record of an ended task
// attempt is derived here, on apply, from what the state already holds (the
// job's spec, the task's placement and times, its node's pool and GPUs), so
// every replica derives the same records from the same log; the checkpoint
// and price-table commands; and what running tasks have used so far.
#include <algorithm>

#include "control/state/cluster_state.h"
#include "control/state/usage_weight.h"
#include "protocol/model/prices.h"

namespace gpool::state {

std::string ClusterState::QueuePath(const std::string& queue) const {
  std::vector<std::string> names;
  std::string at = queue;
  // The tree is acyclic; the bound guards a corrupt one.
  for (size_t depth = 0; depth <= queues_.size() && !at.empty(); ++depth) {
    names.push_back(at);
    auto it = queues_.find(at);
    if (it == queues_.end() || at == "root") break;
    at = it->second.spec.parent;
  }
  std::string path;
  for (auto it = names.rbegin(); it != names.rend(); ++it) path += (path.empty() ? "" : "/") + *it;
  return path;
}

UsageRecord ClusterState::UsageRecordOf(const JobRecord& job, const TaskRecord& task, int64_t end_ms) const {
  UsageRecord r;
  r.job = job.id.value();
  r.task = task.id.index;
  r.attempt = task.id.attempt;
  r.session = job.spec.session.enabled;
  r.user = job.spec.user;
  r.queue = job.spec.queue;
  r.queue_path = QueuePath(job.spec.queue);
  r.priority_class = job.spec.priority_class;
  r.node = task.node;
  r.cpu_milli = task.cpu_milli;
  r.memory_mib = task.memory_mib;
  if (task.group < job.spec.tasks.size()) {
    const Resources& res = job.spec.tasks[task.group].resources;
    r.gpus = res.gpus;
    r.gpu_milli = GpuMilli(res);
    if (res.Shared()) r.share_compute_pct = std::max<uint32_t>(res.gpu_compute_pct, task.grant().gpu_compute_pct);
  }
  if (const NodeRecord* node = FindNode(task.node)) {
    r.pool = node->pool;
    const GpuInfo* first = nullptr;
    for (const auto& gpu : node->spec.gpus) {
      if (!task.gpu_indices.empty() && gpu.index == task.gpu_indices.front()) first = &gpu;
    }
    if (first != nullptr) {
      r.model = first->model;
      const DeviceGrant& grant = task.grant();
      // A time-sliced replica gets its turn of the device: 1/N of its time.
      if (grant.time_slice && first->time_slices >= 2) r.gpu_milli = r.gpus * (1000 / first->time_slices);
      if (grant.shared && grant.gpu_memory_mib > 0) {
        r.share_memory_mib = grant.gpu_memory_mib;
        if (first->memory_mib > 0) {
          r.share_memory_permille = static_cast<uint32_t>(std::min<uint64_t>(1000, grant.gpu_memory_mib * 1000 / first->memory_mib));
        }
      }
    }
  }
  // A task that never started (a bind refused, a cancel before it ran) used nothing.
  r.start_ms = task.start_ms != 0 ? task.start_ms : end_ms;
  r.end_ms = std::max(r.start_ms, end_ms);
  return r;
}

void ClusterState::ChargeUsage(const JobRecord& job, const TaskRecord& task, std::string_view outcome, int64_t end_ms) {
  UsageRecord r = UsageRecordOf(job, task, end_ms);
  r.outcome = losing_task_ && outcome != "preempted" ? "lost" : std::string(outcome);
  if (usage_end_unknown_ || ((losing_task_ || outcome == "lost") && !usage_end_known_)) {
    // Nobody saw it end: charge what the last checkpoint vouches for, so a
    // silent node costs at most one checkpoint interval either way.
    r.estimated = true;
    r.end_ms = std::clamp(usage_ledger_.checkpoint_ms(), r.start_ms, r.end_ms);
  }
  // Issue 50: what is left of it to bill (its time since the last
  // checkpoint, and a top-up to its minimum period if it ran at all).
  BillUsage(r, r.end_ms, /*ended=*/task.start_ms != 0);
  usage_ledger_.Add(std::move(r));
}

std::vector<UsageRecord> ClusterState::RunningUsage(int64_t now_ms) const {
  std::vector<UsageRecord> running;
  for (const auto& [name, node] : nodes_) {
    for (const TaskId& id : node.tasks) {
      const JobRecord* job = FindJob(id.job);
      const TaskRecord* task = FindTask(id);
      if (job == nullptr || task == nullptr || task->state != TaskState::kRunning || task->start_ms == 0) continue;
      UsageRecord r = UsageRecordOf(*job, *task, now_ms);
      r.outcome = "running";
      running.push_back(std::move(r));
    }
  }
  return running;
}

ApplyResult ClusterState::ApplyUsageCheckpoint(int64_t now, const UsageCheckpointCmd& cmd) {
  BillRunning(now);  // before the checkpoint moves: bills up to `now`
  if (cmd.daily_before_ms > 0) billing_.Trim(cmd.daily_before_ms);
  usage_ledger_.set_checkpoint_ms(now);
  usage_ledger_.Trim(
      UsageRetention{cmd.keep_records, cmd.records_before_ms, cmd.hourly_before_ms, cmd.daily_before_ms});
  return {};
}

ApplyResult ClusterState::ApplyUpdatePrices(int64_t now, const UpdatePricesCmd& cmd) {
  PriceTable table = cmd.table;
  table.set_ms = now;
  if (cmd.keep_billing) {
    const PriceTable* current = usage_ledger_.prices();
    table.billing = current != nullptr ? current->billing : BillingRules{};
  }
  usage_ledger_.set_prices(std::move(table));
  return {};
}

}  // namespace gpool::state
