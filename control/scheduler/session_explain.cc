// Why a task finds no node: the text of each rejection, the per-node counts
// ExplainTask reports, and the task-shape key FindNode caches those reasons
// under, so a full cluster is explained once per shape, not once per job.
#include "control/scheduler/session.h"

#include <string>

namespace gpool::scheduler {

using topology::PendingTask;

std::string_view RejectText(Reject reject) {
  switch (reject) {
    case Reject::kNotReady: return "node not ready";
    case Reject::kCordoned: return "node cordoned";
    case Reject::kPool: return "in another pool";
    case Reject::kSelector: return "node selector does not match";
    case Reject::kTaint: return "taint not tolerated";
    case Reject::kGpuModel: return "no GPUs of the requested model";
    case Reject::kNuma: return "NUMA not fit";
    case Reject::kClaimed: return "claimed by a preempting job";
    case Reject::kReserved: return "held for a large waiting job";
    case Reject::kExclusiveBusy: return "exclusive node in use";
    case Reject::kExclusiveWhole: return "exclusive pool takes whole nodes only";
    case Reject::kGpus: return "insufficient GPUs";
    case Reject::kGpuUuid: return "GPUs excluded by the job's UUID lists";
    case Reject::kShareRoom: return "no GPU with room for the share";
    case Reject::kShareQos: return "GPUs shared under another QoS";
    case Reject::kShareMode: return "no GPU free to share";
    case Reject::kMigFit: return "no MIG instance of the profile fits";
    case Reject::kMigUnsupported: return "no MIG-capable GPU";
    case Reject::kVendorRule: return "no device set the vendor's placement rule allows";
    case Reject::kModelCapability: return "queue at capability for the node's GPU model";
    case Reject::kGpuMemoryCapability: return "queue at capability for gpu_memory";
    case Reject::kCpu: return "insufficient CPU";
    case Reject::kCpuKeptForGpus: return "CPU kept for the node's free GPUs";
    case Reject::kMemory: return "insufficient memory";
    case Reject::kMemoryKeptForGpus: return "memory kept for the node's free GPUs";
    case Reject::kCount: break;
  }
  return "unknown";
}

std::string Session::ShapeKey(const WorkJob& job, const PendingTask& task, bool ignore_reservations) const {
  const topology::PendingJob& spec = *job.view;
  std::string key = spec.pool;
  const Resources& need = task.resources;
  key += '|' + std::to_string(need.gpus) + '|' + std::to_string(need.cpu_milli) + '|' +
         std::to_string(need.memory_mib) + '|' + need.gpu_model + '|' + std::to_string(job.queue) +
         (ignore_reservations ? "|i" : "|-");
  if (!need.Whole()) {
    key += "|s" + std::to_string(need.gpu_memory_mib) + '/' + std::to_string(need.gpu_memory_pct) + '/' +
           std::to_string(need.gpu_compute_pct) + '/' + need.sharing_qos + '/' + need.mig_profile + '/' +
           std::to_string(static_cast<int>(spec.numa_policy));
  }
  for (const auto& uuid : spec.gpu_uuid_allow) key += "|+" + uuid;
  for (const auto& uuid : spec.gpu_uuid_deny) key += "|-" + uuid;
  for (const auto& [k, v] : spec.node_selector) key += '|' + k + '=' + v;
  key += '#';
  for (const auto& t : spec.tolerations) key += '|' + t;
  return key;
}

std::vector<std::string> Session::ExplainTask(const WorkJob& job, const PendingTask& task,
                                              bool ignore_reservations) const {
  std::vector<std::string> reasons;
  if (nodes_.empty()) {
    reasons.push_back("no nodes registered");
    return reasons;
  }
  const Resources& need = task.resources;
  const std::string prefix = "task " + std::to_string(task.index) + " needs ";
  if (need.Whole() && need.gpus > largest_gpus_) {  // shares and MIG may use static-MIG GPUs too
    reasons.push_back(prefix + std::to_string(need.gpus) + " GPUs but the largest node has " +
                      std::to_string(largest_gpus_));
  }
  if (need.cpu_milli > largest_cpu_) {
    reasons.push_back(prefix + std::to_string(need.cpu_milli) + " milli-CPU but the largest node has " +
                      std::to_string(largest_cpu_));
  }
  if (need.memory_mib > largest_memory_) {
    reasons.push_back(prefix + std::to_string(need.memory_mib) + " MiB memory but the largest node has " +
                      std::to_string(largest_memory_));
  }
  uint32_t counts[static_cast<size_t>(Reject::kCount)] = {};
  for (const auto& node : nodes_) {
    if (auto reject = Check(job, task, node, ignore_reservations)) ++counts[static_cast<size_t>(*reject)];
  }
  for (size_t r = 0; r < static_cast<size_t>(Reject::kCount); ++r) {
    if (counts[r] == 0) continue;
    reasons.push_back(std::to_string(counts[r]) + (counts[r] == 1 ? " node: " : " nodes: ") +
                      std::string(RejectText(static_cast<Reject>(r))));
  }
  return reasons;
}

}  // namespace gpool::scheduler
