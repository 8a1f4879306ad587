#include "worker/runner/vendor_env.h"

#include <set>
#include <vector>

#include "worker/vendor/vendor_profile.h"

namespace gpool::worker {
namespace {

// CUDA_VISIBLE_DEVICES is NVIDIA's as well (device_env.cc sets it from the
// node-wide indices): a family row naming it replaces that value only when
// every bound GPU is of that family, so a mixed bind keeps NVIDIA's meaning.
constexpr std::string_view kNvidiaVisibleName = "CUDA_VISIBLE_DEVICES";

std::string JoinVendorIds(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) {
    // Appended, not `"," + string`: GCC 12 -O2 warns falsely inside that
    // operator+ (bug 105651).
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

}  // namespace

bool IsVendorDeviceVariable(const std::string& key) {
  for (const VendorProfile& profile : AcceleratorProfiles()) {
    for (const VisibleVariable& v : profile.visible) {
      if (key == v.name) return true;
    }
  }
  return false;
}

Status AddVendorDeviceEnv(const BindTask& bind, const NodeSpec& node, std::map<std::string, std::string>& env) {
  // The bound devices of each family, as ordinals in bind order.
  std::map<NodeVendor, std::vector<uint32_t>> bound;
  std::set<NodeVendor> bound_families;
  for (size_t i = 0; i < bind.gpu_indices.size(); ++i) {
    const GpuInfo* gpu = FindGpu(node, bind.gpu_indices[i]);
    if (gpu == nullptr) {
      return Status::InvalidArgument("gpu_indices[" + std::to_string(i) + "]: GPU " +
                                     std::to_string(bind.gpu_indices[i]) + " does not exist");
    }
    const NodeVendor family = VendorOf(*gpu);
    bound[family].push_back(static_cast<uint32_t>(FamilyOrdinal(node, gpu->index)));
    bound_families.insert(family);
  }
  const bool share = bind.gpu_memory_mib > 0 || bind.gpu_compute_pct > 0;
  if (share) {
    for (NodeVendor family : bound_families) {
      const VendorProfile& profile = ProfileOf(family);
      if (profile.share == ShareSupport::kVendorPlugin) continue;
      return Status::FailedPrecondition(
          std::string(profile.display) + "s cannot be shared by memory or compute: the task asks for a share (" +
          std::to_string(bind.gpu_memory_mib) + " MiB, " + std::to_string(bind.gpu_compute_pct) +
          "% compute) of GPU " + JoinVendorIds(bind.gpu_indices) +
          ", and nothing on this node would hold it to that share; " +
          (profile.share == ShareSupport::kCores ? "ask for cores instead" : "ask for whole devices"));
    }
  }

  std::set<NodeVendor> present;
  for (const GpuInfo& gpu : node.gpus) present.insert(VendorOf(gpu));
  for (NodeVendor family : present) {
    const std::vector<uint32_t>& ordinals = bound[family];
    for (const VisibleVariable& v : ProfileOf(family).visible) {
      if (v.form == VisibleForm::kCores) continue;  // device_env.cc: NEURON_RT_VISIBLE_CORES
      if (v.name == kNvidiaVisibleName && bound_families.size() > 1) continue;
      if (v.name == kNvidiaVisibleName && !bound_families.empty() && !bound_families.count(family)) continue;
      std::vector<uint32_t> values = ordinals;
      if (v.form == VisibleForm::kPositions) {
        for (size_t p = 0; p < values.size(); ++p) values[p] = static_cast<uint32_t>(p);
      }
      env[std::string(v.name)] = JoinVendorIds(values);
    }
  }
  return Status::Ok();
}

}  // namespace gpool::worker
