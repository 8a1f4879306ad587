// VendorProfile: what the worker knows about one accelerator family, as data
// (one table row per family, vendor_profile.cc), so that the task
// environment (runner/vendor_env.h), the device cgroup (runner/
// vendor_device_nodes.h), discovery (discovery/vendor_smi.h) and health
// (health/vendor_health_check.h) read one row instead of each growing a
// switch per vendor.
//
// The families are the ones the scheduler has rules for (control/scheduler/
// vendor_rules.h: Ascend, Kunlun, Neuron, MetaX, Enflame) plus AMD and Hygon
// DCU, which the scheduler places generically. The worker cannot include
// control/ (cmake/CheckLayers.cmake), so it recognises families itself from
// GpuInfo.vendor / model, with the same names the scheduler accepts.
//
// Device numbering: a family's devices are numbered 0..n-1 among the node's
// GPUs of that family, in GPU index order (the "ordinal"). On a node with one
// family (the normal case) the ordinal is the GPU index. Visible-device
// variables and device nodes use the ordinal; CUDA_VISIBLE_DEVICES keeps the
// node-wide index unless the row says otherwise (AMD, below).
//
// Thread-safety: immutable data; any thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "protocol/types.h"

namespace gpool::worker {

enum class NodeVendor : uint8_t {
  kNvidia,    // and anything the table does not name: the NVIDIA paths as before
  kAscend,    // Huawei Ascend NPU (CANN)
  kKunlun,    // Kunlunxin XPU (XRE)
  kNeuron,    // AWS Trainium / Inferentia (Neuron runtime)
  kMetax,     // MetaX GPU (MACA)
  kEnflame,   // Enflame GCU (TopsRider)
  kHygonDcu,  // Hygon DCU (DTK, a ROCm derivative)
  kAmd,       // AMD Instinct (ROCm)
};

// What a visible-device variable holds for the devices a task was given.
enum class VisibleForm : uint8_t {
  kOrdinals,   // the family ordinals of the bound devices, bind order ("2,3")
  kPositions,  // 0..n-1: read after another variable already narrowed the set
  kCores,      // the task's cores as a cpulist ("0-3"; Neuron)
};

struct VisibleVariable {
  std::string_view name;
  VisibleForm form = VisibleForm::kOrdinals;
};

// A device node per device: `pattern` with %u replaced by offset + ordinal,
// relative to the device root ("/dev"): {"davinci%u", 0} -> /dev/davinci3.
struct DeviceNodePattern {
  std::string_view pattern;
  uint32_t offset = 0;
};

// How a family shares one device between tasks, and whether this worker
// enforces it.
enum class ShareSupport : uint8_t {
  kNone,          // the vendor has no sharing: a share bind is refused
  kVendorPlugin,  // sharing exists, carved by the vendor's own plugin/driver;
                  // gpool sets only its GPOOL_* variables (not enforced here)
  kCores,         // shared by handing out cores (Neuron): enforced by the
                  // cores variable and is not a memory share
};

struct VendorProfile {
  NodeVendor vendor = NodeVendor::kNvidia;
  std::string_view name;     // "ascend": logs, docs, health device ids
  std::string_view display;  // "Huawei Ascend NPU": human messages
  // Set on every task of a node with this family (empty value when the task
  // holds none of its devices, so the runtime sees none).
  std::vector<VisibleVariable> visible;
  // Device nodes, one per device: a task may open only its own.
  std::vector<DeviceNodePattern> device_nodes;
  // Nodes every process of the family opens (driver control, shared memory
  // manager): open to a task holding any device of the family, denied to a
  // task holding none.
  std::vector<std::string_view> shared_nodes;
  ShareSupport share = ShareSupport::kNone;
  std::string_view share_name;  // "vXPU", "sGPU", "vGCU", "vNPU"; empty when none
  // The management tool discovery and health run (argv); empty: none.
  std::vector<std::string_view> tool;
  bool tool_reports_health = false;  // the tool's output carries a per-device health state
};

// The row of a family; every NodeVendor has one.
const VendorProfile& ProfileOf(NodeVendor vendor);
// All rows except NVIDIA's, in table order.
const std::vector<VendorProfile>& AcceleratorProfiles();

// The family of a GPU from its vendor and model strings, case-insensitive,
// with the names the scheduler accepts ("huawei"/"ascend", "kunlunxin"/
// "baidu", "aws"/"neuron"/"trainium"/"inferentia", "metax", "enflame",
// "hygon"/"dcu", "amd"); anything else is kNvidia.
NodeVendor VendorOf(std::string_view vendor, std::string_view model);
NodeVendor VendorOf(const GpuInfo& gpu);

// The family ordinal of the node's GPU `index` (see above); -1 when the node
// has no such GPU.
int32_t FamilyOrdinal(const NodeSpec& node, uint32_t index);

}  // namespace gpool::worker
