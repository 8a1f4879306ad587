#include "worker/vendor/vendor_profile.h"

#include <algorithm>
#include <string>

namespace gpool::worker {
namespace {

// Sources, per row (names only; what each vendor's documentation and its
// device plugin set, not copied code):
//   Ascend   ASCEND_RT_VISIBLE_DEVICES (CANN runtime); /dev/davinciN plus
//            davinci_manager, devmm_svm, hisi_hdc, which Ascend's device
//            plugin and container toolkit mount into every NPU container.
//   Kunlun   XPU_VISIBLE_DEVICES (XRE runtime, Kunlunxin's PyTorch/vLLM
//            guides); /dev/xpuN plus /dev/xpuctrl (Kunlunxin's docker
//            guides pass exactly these); vXPU slices come from its
//            vxpu-device-plugin.
//   Neuron   NEURON_RT_VISIBLE_CORES (Neuron runtime configuration guide);
//            /dev/neuronN, one per device.
//   MetaX    MACA_VISIBLE_DEVICES (MACA runtime; MetaX's CUDA bridge also
//            takes CUDA_VISIBLE_DEVICES); /dev/dri/renderD<128+N> plus
//            /dev/mxcd, the MetaX compute device; sGPU from its plugin.
//   Enflame  TOPS_VISIBLE_DEVICES (TopsRider runtime) and
//            ENFLAME_VISIBLE_DEVICES (its k8s device plugin's variable);
//            /dev/gcuN; vGCU (DRS) slices from its plugin.
//   Hygon    HIP_VISIBLE_DEVICES (DTK's HIP); /dev/dri/renderD<128+N>,
//            /dev/kfd and, on newer DTK drivers, /dev/mkfd.
//   AMD      ROCR_VISIBLE_DEVICES, the variable ROCm recommends on Linux
//            (ROCm "GPU isolation techniques"), with the physical ordinals.
//            HIP applies HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES to the
//            devices ROCr left, so both get positions 0..n-1: the physical
//            ordinals there would point past the narrowed list. Device
//            nodes as ROCm's container guide: /dev/kfd plus one
//            /dev/dri/renderD<128+N> per GPU.
// Render nodes are numbered from 128 in probe order, assumed to be the
// family order; a host with another DRM device that has a render node
// first (rare: BMC VGA has none) breaks that, and worker/README.md says so.
const std::vector<VendorProfile>& VendorProfileTable() {
  static const std::vector<VendorProfile> table = {
      {.vendor = NodeVendor::kNvidia,
       .name = "nvidia",
       .display = "NVIDIA GPU",
       .visible = {},  // device_env.cc sets CUDA_ and NVIDIA_VISIBLE_DEVICES itself
       .device_nodes = {},  // --gpu-device-nodes (task_isolation.h)
       .shared_nodes = {},
       .share = ShareSupport::kVendorPlugin,  // HAMi-core / gpool's interposer: device_env.h
       .share_name = "GPU share",
       .tool = {},  // NVML, not a tool (discovery/nvml_probe.h)
       .tool_reports_health = false},
      {.vendor = NodeVendor::kAscend,
       .name = "ascend",
       .display = "Huawei Ascend NPU",
       .visible = {{"ASCEND_RT_VISIBLE_DEVICES", VisibleForm::kOrdinals}},
       .device_nodes = {{"davinci%u", 0}},
       .shared_nodes = {"davinci_manager", "devmm_svm", "hisi_hdc"},
       .share = ShareSupport::kVendorPlugin,
       .share_name = "vNPU",
       .tool = {"npu-smi", "info"},
       .tool_reports_health = true},
      {.vendor = NodeVendor::kKunlun,
       .name = "kunlun",
       .display = "Kunlunxin XPU",
       .visible = {{"XPU_VISIBLE_DEVICES", VisibleForm::kOrdinals}},
       .device_nodes = {{"xpu%u", 0}},
       .shared_nodes = {"xpuctrl"},
       .share = ShareSupport::kVendorPlugin,
       .share_name = "vXPU",
       .tool = {"xpu-smi"},
       .tool_reports_health = false},
      {.vendor = NodeVendor::kNeuron,
       .name = "neuron",
       .display = "AWS Neuron device",
       .visible = {{"NEURON_RT_VISIBLE_CORES", VisibleForm::kCores}},
       .device_nodes = {{"neuron%u", 0}},
       .shared_nodes = {},
       .share = ShareSupport::kCores,
       .share_name = "NeuronCores",
       .tool = {"neuron-ls", "--json-output"},
       .tool_reports_health = false},
      {.vendor = NodeVendor::kMetax,
       .name = "metax",
       .display = "MetaX GPU",
       .visible = {{"MACA_VISIBLE_DEVICES", VisibleForm::kOrdinals}},
       .device_nodes = {{"dri/renderD%u", 128}},
       .shared_nodes = {"mxcd"},
       .share = ShareSupport::kVendorPlugin,
       .share_name = "sGPU",
       .tool = {"mx-smi"},
       .tool_reports_health = false},
      {.vendor = NodeVendor::kEnflame,
       .name = "enflame",
       .display = "Enflame GCU",
       .visible = {{"TOPS_VISIBLE_DEVICES", VisibleForm::kOrdinals},
                   {"ENFLAME_VISIBLE_DEVICES", VisibleForm::kOrdinals}},
       .device_nodes = {{"gcu%u", 0}},
       .shared_nodes = {},
       .share = ShareSupport::kVendorPlugin,
       .share_name = "vGCU",
       .tool = {"efsmi"},
       .tool_reports_health = false},
      {.vendor = NodeVendor::kHygonDcu,
       .name = "hygon-dcu",
       .display = "Hygon DCU",
       .visible = {{"HIP_VISIBLE_DEVICES", VisibleForm::kOrdinals}},
       .device_nodes = {{"dri/renderD%u", 128}},
       .shared_nodes = {"kfd", "mkfd"},
       .share = ShareSupport::kNone,
       .share_name = "",
       .tool = {"hy-smi"},
       .tool_reports_health = false},
      {.vendor = NodeVendor::kAmd,
       .name = "amd",
       .display = "AMD GPU",
       .visible = {{"ROCR_VISIBLE_DEVICES", VisibleForm::kOrdinals},
                   {"HIP_VISIBLE_DEVICES", VisibleForm::kPositions},
                   {"CUDA_VISIBLE_DEVICES", VisibleForm::kPositions}},
       .device_nodes = {{"dri/renderD%u", 128}},
       .shared_nodes = {"kfd"},
       .share = ShareSupport::kNone,
       .share_name = "",
       .tool = {"rocm-smi", "--showproductname", "--showmeminfo", "vram", "--showuniqueid", "--json"},
       .tool_reports_health = false},
  };
  return table;
}

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); });
  return out;
}

bool ContainsWord(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

const VendorProfile& ProfileOf(NodeVendor vendor) {
  for (const VendorProfile& p : VendorProfileTable()) {
    if (p.vendor == vendor) return p;
  }
  return VendorProfileTable().front();
}

const std::vector<VendorProfile>& AcceleratorProfiles() {
  static const std::vector<VendorProfile> rows(VendorProfileTable().begin() + 1, VendorProfileTable().end());
  return rows;
}

NodeVendor VendorOf(std::string_view vendor_in, std::string_view model_in) {
  const std::string vendor = LowerAscii(vendor_in);
  const std::string model = LowerAscii(model_in);
  if (ContainsWord(vendor, "huawei") || ContainsWord(vendor, "ascend") || ContainsWord(model, "ascend")) {
    return NodeVendor::kAscend;
  }
  if (ContainsWord(vendor, "kunlun") || ContainsWord(vendor, "baidu") || ContainsWord(model, "kunlun")) {
    return NodeVendor::kKunlun;
  }
  if (ContainsWord(vendor, "aws") || ContainsWord(vendor, "amazon") || ContainsWord(vendor, "neuron") ||
      ContainsWord(model, "trainium") || ContainsWord(model, "inferentia")) {
    return NodeVendor::kNeuron;
  }
  if (ContainsWord(vendor, "metax") || ContainsWord(model, "metax")) return NodeVendor::kMetax;
  if (ContainsWord(vendor, "enflame") || ContainsWord(model, "enflame")) return NodeVendor::kEnflame;
  // Before AMD: a Hygon DCU is sometimes reported with an AMD-derived vendor string.
  if (ContainsWord(vendor, "hygon") || vendor == "dcu" || ContainsWord(model, "hygon")) return NodeVendor::kHygonDcu;
  if (vendor == "amd" || ContainsWord(vendor, "advanced micro devices") || ContainsWord(vendor, "amd/ati")) {
    return NodeVendor::kAmd;
  }
  return NodeVendor::kNvidia;
}

NodeVendor VendorOf(const GpuInfo& gpu) { return VendorOf(gpu.vendor, gpu.model); }

int32_t FamilyOrdinal(const NodeSpec& node, uint32_t index) {
  const GpuInfo* target = nullptr;
  for (const GpuInfo& gpu : node.gpus) {
    if (gpu.index == index) target = &gpu;
  }
  if (target == nullptr) return -1;
  const NodeVendor family = VendorOf(*target);
  int32_t ordinal = 0;
  for (const GpuInfo& gpu : node.gpus) {
    if (gpu.index < index && VendorOf(gpu) == family) ++ordinal;
  }
  return ordinal;
}

}  // namespace gpool::worker
