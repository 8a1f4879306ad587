#include "topology/pending_reason.h"

#include <string_view>

#include "topology/cluster_view.h"

namespace gpool::topology {

namespace {

// The node checks' texts; empty for codes that are not node checks.
std::string_view NodeCheckText(PendingCode code) {
  switch (code) {
    case PendingCode::kNodeNotReady: return "node not ready";
    case PendingCode::kNodeCordoned: return "node cordoned";
    case PendingCode::kNodeInAnotherPool: return "in another pool";
    case PendingCode::kNodeSelector: return "node selector does not match";
    case PendingCode::kNodeTaint: return "taint not tolerated";
    case PendingCode::kNodeGpuModel: return "no GPUs of the requested model";
    case PendingCode::kNodeNuma: return "NUMA not fit";
    case PendingCode::kNodeClaimed: return "claimed by a preempting job";
    case PendingCode::kNodeReserved: return "held for a large waiting job";
    case PendingCode::kNodeExclusiveBusy: return "exclusive node in use";
    case PendingCode::kNodeExclusiveWhole: return "exclusive pool takes whole nodes only";
    case PendingCode::kNodeGpus: return "insufficient GPUs";
    case PendingCode::kNodeGpuUuid: return "GPUs excluded by the job's UUID lists";
    case PendingCode::kNodeShareRoom: return "no GPU with room for the share";
    case PendingCode::kNodeShareQos: return "GPUs shared under another QoS";
    case PendingCode::kNodeShareMode: return "no GPU free to share";
    case PendingCode::kNodeMigFit: return "no MIG instance of the profile fits";
    case PendingCode::kNodeMigUnsupported: return "no MIG-capable GPU";
    case PendingCode::kNodeVendorRule: return "no device set the vendor's placement rule allows";
    case PendingCode::kNodeModelCapability: return "queue at capability for the node's GPU model";
    case PendingCode::kNodeGpuMemoryCapability: return "queue at capability for gpu_memory";
    case PendingCode::kNodeCpu: return "insufficient CPU";
    case PendingCode::kNodeCpuKeptForGpus: return "CPU kept for the node's free GPUs";
    case PendingCode::kNodeMemory: return "insufficient memory";
    case PendingCode::kNodeMemoryKeptForGpus: return "memory kept for the node's free GPUs";
    case PendingCode::kNodeModelDeserved:
      return "queue holds its deserved share of the node's GPU model (only low-class work may borrow)";
    case PendingCode::kNodeOwnedByAnotherQueue: return "exclusive node of another queue";
    case PendingCode::kNodeExclusiveCores: return "too few whole cores free for exclusive use";
    case PendingCode::kNodeGpuMemoryDeserved:
      return "queue holds its deserved gpu_memory (only low-class work may borrow)";
    default: return {};
  }
}

std::string TaskOverLargest(const PendingReason& r, std::string_view unit) {
  return "task " + std::to_string(r.task) + " needs " + std::to_string(r.need) + std::string(unit) +
         " but the largest node has " + std::to_string(r.have);
}

std::string Tier(const PendingReason& r) { return "no tier-" + std::to_string(r.tier) + " switch "; }

}  // namespace

std::string RenderPendingReason(const PendingReason& r) {
  if (auto text = NodeCheckText(r.code); !text.empty()) {
    return std::to_string(r.count) + (r.count == 1 ? " node: " : " nodes: ") + std::string(text);
  }
  switch (r.code) {
    case PendingCode::kNoNodes: return "no nodes registered";
    case PendingCode::kTaskGpusOverLargest: return TaskOverLargest(r, " GPUs");
    case PendingCode::kTaskCpuOverLargest: return TaskOverLargest(r, " milli-CPU");
    case PendingCode::kTaskMemoryOverLargest: return TaskOverLargest(r, " MiB memory");
    case PendingCode::kQueueAtCapability:
      return "queue " + r.queue + " at capability for " + r.resource + " (" + std::to_string(r.have) + " of " +
             std::to_string(r.limit) + " in use, needs " + std::to_string(r.need) + " more)";
    case PendingCode::kQueueAtDeserved:
      return "queue " + r.queue + " holds its deserved " + r.resource + " (" + std::to_string(r.have) + " of " +
             std::to_string(r.limit) + " in use, needs " + std::to_string(r.need) +
             " more): only low-class work may borrow beyond it";
    case PendingCode::kQueueOutOfCredit:
      return "queue " + r.queue + " admits no new work: the credit of account " + r.resource + " is used up (" +
             std::to_string(r.need) + " micro-units below zero); an admin adds credit: gpool credit add " +
             r.resource + " AMOUNT";
    case PendingCode::kOwnTasksStopping: return "waiting for its evicted tasks to stop before it restarts";
    case PendingCode::kVictimsStopping: return "waiting for evicted tasks to stop";
    case PendingCode::kPreempting:
      return "preempting lower-priority tasks of its queue (" + std::to_string(r.count) + " tasks)";
    case PendingCode::kReclaiming:
      return "reclaiming capacity lent to other queues (" + std::to_string(r.count) + " tasks)";
    case PendingCode::kNodesHeld: return "nodes are being held for this job as work finishes";
    case PendingCode::kNotConsidered: return "not considered this cycle (the configured actions skip it)";
    case PendingCode::kNoHoldBeyondDeserved:
      return "no nodes are held for it though it has waited long: it would take queue " + r.queue +
             " past its deserved " + r.resource + ", and low-class work beyond the deserved share may be reclaimed";
    case PendingCode::kSwitchMissesRunningTasks:
      return Tier(r) + "holds the job's running tasks and room for the rest";
    case PendingCode::kTierNotLabelled:
      return "no node carries " + TierLabel(r.tier) + " (the switch tree is not labelled)";
    case PendingCode::kSwitchTooSmall:
      return Tier(r) + "can hold the job's " + std::to_string(r.need) + " GPUs together (the most free under one: " +
             std::to_string(r.have) + ")";
    case PendingCode::kSwitchTasksDoNotFit: return Tier(r) + "with enough free GPUs fits the job's tasks on its nodes";
    default: break;
  }
  // Written by a newer coordinator: say so rather than guess.
  return "pending (reason code " + std::to_string(static_cast<uint32_t>(r.code)) + ")";
}

std::vector<std::string> RenderPendingReasons(const std::vector<PendingReason>& reasons) {
  std::vector<std::string> out;
  out.reserve(reasons.size());
  for (const auto& reason : reasons) out.push_back(RenderPendingReason(reason));
  return out;
}

bool NeverFits(const PendingReason& reason) {
  return reason.code == PendingCode::kTaskGpusOverLargest || reason.code == PendingCode::kTaskCpuOverLargest ||
         reason.code == PendingCode::kTaskMemoryOverLargest;
}

std::string_view PendingCodeSlug(PendingCode code) {
  switch (code) {
    case PendingCode::kUnknown: return "unknown";
    case PendingCode::kNodeNotReady: return "node_not_ready";
    case PendingCode::kNodeCordoned: return "node_cordoned";
    case PendingCode::kNodeInAnotherPool: return "node_in_another_pool";
    case PendingCode::kNodeSelector: return "node_selector";
    case PendingCode::kNodeTaint: return "node_taint";
    case PendingCode::kNodeGpuModel: return "node_gpu_model";
    case PendingCode::kNodeNuma: return "node_numa";
    case PendingCode::kNodeClaimed: return "node_claimed";
    case PendingCode::kNodeReserved: return "node_reserved";
    case PendingCode::kNodeExclusiveBusy: return "node_exclusive_busy";
    case PendingCode::kNodeExclusiveWhole: return "node_exclusive_whole";
    case PendingCode::kNodeGpus: return "node_gpus";
    case PendingCode::kNodeGpuUuid: return "node_gpu_uuid";
    case PendingCode::kNodeShareRoom: return "node_share_room";
    case PendingCode::kNodeShareQos: return "node_share_qos";
    case PendingCode::kNodeShareMode: return "node_share_mode";
    case PendingCode::kNodeMigFit: return "node_mig_fit";
    case PendingCode::kNodeMigUnsupported: return "node_mig_unsupported";
    case PendingCode::kNodeVendorRule: return "node_vendor_rule";
    case PendingCode::kNodeModelCapability: return "node_model_capability";
    case PendingCode::kNodeGpuMemoryCapability: return "node_gpu_memory_capability";
    case PendingCode::kNodeCpu: return "node_cpu";
    case PendingCode::kNodeCpuKeptForGpus: return "node_cpu_kept_for_gpus";
    case PendingCode::kNodeMemory: return "node_memory";
    case PendingCode::kNodeMemoryKeptForGpus: return "node_memory_kept_for_gpus";
    case PendingCode::kNodeModelDeserved: return "node_model_deserved";
    case PendingCode::kNodeGpuMemoryDeserved: return "node_gpu_memory_deserved";
    case PendingCode::kNodeOwnedByAnotherQueue: return "node_owned_by_another_queue";
    case PendingCode::kNodeExclusiveCores: return "node_exclusive_cores";
    case PendingCode::kNoNodes: return "no_nodes";
    case PendingCode::kTaskGpusOverLargest: return "task_gpus_over_largest";
    case PendingCode::kTaskCpuOverLargest: return "task_cpu_over_largest";
    case PendingCode::kTaskMemoryOverLargest: return "task_memory_over_largest";
    case PendingCode::kQueueAtCapability: return "queue_at_capability";
    case PendingCode::kQueueAtDeserved: return "queue_at_deserved";
    case PendingCode::kQueueOutOfCredit: return "queue_out_of_credit";
    case PendingCode::kOwnTasksStopping: return "own_tasks_stopping";
    case PendingCode::kVictimsStopping: return "victims_stopping";
    case PendingCode::kPreempting: return "preempting";
    case PendingCode::kReclaiming: return "reclaiming";
    case PendingCode::kNodesHeld: return "nodes_held";
    case PendingCode::kNotConsidered: return "not_considered";
    case PendingCode::kNoHoldBeyondDeserved: return "no_hold_beyond_deserved";
    case PendingCode::kSwitchMissesRunningTasks: return "switch_misses_running_tasks";
    case PendingCode::kTierNotLabelled: return "tier_not_labelled";
    case PendingCode::kSwitchTooSmall: return "switch_too_small";
    case PendingCode::kSwitchTasksDoNotFit: return "switch_tasks_do_not_fit";
  }
  return "unknown";
}

}  // namespace gpool::topology
