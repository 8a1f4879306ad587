// Why a task finds no node: the stored code of each rejection, the reasons
// Explain builds from the counts FindNode gathered while searching, and the
// task-shape key FindNode caches them under, so a full cluster is explained
// once per shape, not once per job.
#include "control/scheduler/session.h"

#include <charconv>
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
    case Reject::kExclusiveCores: return PendingCode::kNodeExclusiveCores;
    case Reject::kCount: break;
  }
  return PendingCode::kUnknown;
}

namespace {

void AppendNumber(std::string& out, uint64_t value) {
  char digits[20];
  const auto end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
  out.append(digits, end);
}

}  // namespace

// Appended piece by piece into the caller's buffer: FindNode asks for a key
// on every search, and the temporaries of a concatenated one cost more than
// the lookup they serve.
void Session::ShapeKey(const WorkJob& job, const PendingTask& task, bool ignore_reservations, std::string& key) const {
  const topology::PendingJob& spec = *job.view;
  const Resources& need = task.resources;
  key.assign(spec.pool);
  key += '|';
  AppendNumber(key, need.gpus);
  key += '|';
  AppendNumber(key, need.cpu_milli);
  key += '|';
  AppendNumber(key, need.memory_mib);
  key += '|';
  key += need.gpu_model;
  key += '|';
  AppendNumber(key, static_cast<uint64_t>(job.queue));
  key += ignore_reservations ? "|i" : "|-";
  key += job.within_deserved ? 'd' : '-';
  key += job.borrowing ? 'b' : '-';
  // Held nodes take a job whose max_runtime ends before they are needed.
  if (spec.max_runtime_ms > 0 && !reservation_start_ms_.empty()) {
    key += "|t";
    AppendNumber(key, static_cast<uint64_t>(spec.max_runtime_ms));
  }
  if (need.exclusive_cores) key += "|x";
  if (MayTimeSlice(job, task)) key += "|ts";
  // A NUMA policy decides the fit of whole-GPU and CPU-only tasks too: a
  // single-numa-node failure says nothing of a best-effort task of the
  // same size (shares carry it below).
  if (need.Whole() && spec.numa_policy != topology::NumaPolicy::kNone) {
    key += "|n";
    AppendNumber(key, static_cast<uint64_t>(spec.numa_policy));
  }
  if (!need.Whole()) {
    key += "|s";
    AppendNumber(key, need.gpu_memory_mib);
    key += '/';
    AppendNumber(key, need.gpu_memory_pct);
    key += '/';
    AppendNumber(key, need.gpu_compute_pct);
    key += '/';
    key += need.sharing_qos;
    key += '/';
    key += need.mig_profile;
    key += '/';
    AppendNumber(key, static_cast<uint64_t>(spec.numa_policy));
  }
  for (const auto& uuid : spec.gpu_uuid_allow) key.append("|+").append(uuid);
  for (const auto& uuid : spec.gpu_uuid_deny) key.append("|-").append(uuid);
  for (const auto& [k, v] : spec.node_selector) key.append("|").append(k).append("=").append(v);
  key += '#';
  for (const auto& t : spec.tolerations) key.append("|").append(t);
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
