// Why a task finds no node: the stored code of each rejection, the reasons
// Explain builds from the counts FindNode gathered while searching, and the
// task-shape key FindNode caches them under, so a full cluster is explained
// once per shape, not once per job.
#include "control/scheduler/session.h"

#include <string>

namespace gpool::scheduler {

using topology::PendingTask;

topology::PendingCode CodeOf(Reject reject) {
  using topology::PendingCode;
  switch (reject) {
    case Reject::kNotReady: return PendingCode::kNodeNotReady;
    case Reject::kCordoned: return PendingCode::kNodeCordoned;
    case Reject::kPool: return PendingCode::kNodeInAnotherPool;
    case Reject::kPoolOwner: return PendingCode::kNodeOwnedByAnotherQueue;
    case Reject::kSelector: return PendingCode::kNodeSelector;
    case Reject::kTaint: return PendingCode::kNodeTaint;
    case Reject::kGpuModel: return PendingCode::kNodeGpuModel;
    case Reject::kNuma: return PendingCode::kNodeNuma;
    case Reject::kClaimed: return PendingCode::kNodeClaimed;
    case Reject::kReserved: return PendingCode::kNodeReserved;
    case Reject::kExclusiveBusy: return PendingCode::kNodeExclusiveBusy;
    case Reject::kExclusiveWhole: return PendingCode::kNodeExclusiveWhole;
    case Reject::kGpus: return PendingCode::kNodeGpus;
    case Reject::kGpuUuid: return PendingCode::kNodeGpuUuid;
    case Reject::kShareRoom: return PendingCode::kNodeShareRoom;
    case Reject::kShareQos: return PendingCode::kNodeShareQos;
    case Reject::kShareMode: return PendingCode::kNodeShareMode;
    case Reject::kMigFit: return PendingCode::kNodeMigFit;
    case Reject::kMigUnsupported: return PendingCode::kNodeMigUnsupported;
    case Reject::kVendorRule: return PendingCode::kNodeVendorRule;
    case Reject::kModelCapability: return PendingCode::kNodeModelCapability;
    case Reject::kGpuMemoryCapability: return PendingCode::kNodeGpuMemoryCapability;
    case Reject::kModelDeserved: return PendingCode::kNodeModelDeserved;
    case Reject::kGpuMemoryDeserved: return PendingCode::kNodeGpuMemoryDeserved;
    case Reject::kCpu: return PendingCode::kNodeCpu;
    case Reject::kCpuKeptForGpus: return PendingCode::kNodeCpuKeptForGpus;
    case Reject::kMemory: return PendingCode::kNodeMemory;
    case Reject::kMemoryKeptForGpus: return PendingCode::kNodeMemoryKeptForGpus;
    case Reject::kCount: break;
  }
  return PendingCode::kUnknown;
}

std::string Session::ShapeKey(const WorkJob& job, const PendingTask& task, bool ignore_reservations) const {
  const topology::PendingJob& spec = *job.view;
  std::string key = spec.pool;
  const Resources& need = task.resources;
  key += '|' + std::to_string(need.gpus) + '|' + std::to_string(need.cpu_milli) + '|' +
         std::to_string(need.memory_mib) + '|' + need.gpu_model + '|' + std::to_string(job.queue) +
         (ignore_reservations ? "|i" : "|-") + (job.within_deserved ? "d" : "-") + (job.borrowing ? "b" : "-");
  // Held nodes take a job whose max_runtime ends before they are needed.
  if (spec.max_runtime_ms > 0 && !reservation_start_ms_.empty()) key += "|t" + std::to_string(spec.max_runtime_ms);
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

std::vector<topology::PendingReason> Session::Explain(const PendingTask& task, const RejectCounts& counts) const {
  using topology::PendingCode;
  using topology::PendingReason;
  std::vector<PendingReason> reasons;
  if (nodes_.empty()) return {PendingReason::Of(PendingCode::kNoNodes)};
  const Resources& need = task.resources;
  auto over_largest = [&](PendingCode code, uint64_t needed, uint64_t largest) {
    reasons.push_back(PendingReason{.code = code, .task = task.index, .need = needed, .have = largest});
  };
  if (need.Whole() && need.gpus > largest_gpus_) {  // shares and MIG may use static-MIG GPUs too
    over_largest(PendingCode::kTaskGpusOverLargest, need.gpus, largest_gpus_);
  }
  if (need.cpu_milli > largest_cpu_) over_largest(PendingCode::kTaskCpuOverLargest, need.cpu_milli, largest_cpu_);
  if (need.memory_mib > largest_memory_) {
    over_largest(PendingCode::kTaskMemoryOverLargest, need.memory_mib, largest_memory_);
  }
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] != 0) reasons.push_back(PendingReason::Nodes(CodeOf(static_cast<Reject>(r)), counts[r]));
  }
  return reasons;
}

}  // namespace gpool::scheduler
