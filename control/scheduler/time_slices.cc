// Session's time-slicing (the tutorial's oversubscription mode): a GPU its
// node advertises as N time-sliced replicas (GpuSlot::time_slices) takes up
// to N low-class tasks asking for whole GPUs, one replica each, taking
// turns on the device with no memory isolation. Work of any other class
// never runs on it (it is never whole-free: session.cc), so a guarantee is
// never a replica. A task of several GPUs takes replicas of that many
// distinct GPUs of the node.
#include <algorithm>

#include "control/scheduler/session.h"

namespace gpool::scheduler {

namespace {

bool SliceUuidAllowed(const topology::PendingJob& job, const std::string& uuid) {
  if (!job.gpu_uuid_allow.empty() &&
      std::find(job.gpu_uuid_allow.begin(), job.gpu_uuid_allow.end(), uuid) == job.gpu_uuid_allow.end()) {
    return false;
  }
  return std::find(job.gpu_uuid_deny.begin(), job.gpu_uuid_deny.end(), uuid) == job.gpu_uuid_deny.end();
}

// Ranks nodes holding replicas above every node scored by the strategy.
constexpr int64_t kTimeSliceScoreBase = int64_t{1} << 60;

}  // namespace

bool Session::MayTimeSlice(const WorkJob& job, const topology::PendingTask& task) const {
  return time_slices_ && job.view->priority_class == PriorityClass::kLow && task.resources.Whole() &&
         task.resources.gpus > 0 && !task.resources.exclusive_cores;
}

std::vector<size_t> Session::PickTimeSlices(const WorkJob& job, const topology::PendingTask& task,
                                            const WorkNode& node) const {
  const Resources& need = task.resources;
  if (node.family != DeviceFamily::kGeneric || node.sliced_gpus < need.gpus) return {};
  const auto& loads = Loads(node);
  std::vector<size_t> open;
  for (size_t g = 0; g < node.view->gpus.size(); ++g) {
    const auto& gpu = node.view->gpus[g];
    if (!gpu.TimeSliced() || !gpu.healthy || gpu.allocated || loads[g].tenants >= gpu.time_slices) continue;
    if (!GpuModelAllowed(need.gpu_model, gpu.model) || !SliceUuidAllowed(*job.view, gpu.uuid)) continue;
    open.push_back(g);
  }
  if (open.size() < need.gpus) return {};
  std::stable_sort(open.begin(), open.end(), [&](size_t a, size_t b) { return loads[a].tenants > loads[b].tenants; });
  open.resize(need.gpus);
  return open;
}

Session::NodeScore Session::TimeSliceScore(const WorkNode& node, const std::vector<size_t>& slices) const {
  const auto& loads = Loads(node);
  int64_t busy = 0;
  for (size_t g : slices) busy += loads[g].tenants;
  return NodeScore{kTimeSliceScoreBase, busy};
}

}  // namespace gpool::scheduler
