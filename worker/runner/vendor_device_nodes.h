// The device nodes of a node's accelerator families other than NVIDIA
// (issue 50), and which of them a task may open: its own devices' nodes and
// its family's shared nodes, not the other devices' nodes, and no shared
// node of a family it holds no device of (a CPU task cannot open /dev/kfd
// or /dev/davinci_manager). NVIDIA's nodes come from --gpu-device-nodes
// (task_isolation.cc). device_rules.h turns the list into v1 lines or the
// v2 program. Pure: the paths are only named here; DenyRulesForNodes stats
// them.
//
// Per family present on the node (vendor/vendor_profile.h), for ordinals
// 0 .. max(its GPUs in the spec, kVendorNodeScan) - 1, so that a device the
// spec leaves out is denied too: each of its row's per-device patterns
// (granted when the task holds that ordinal), then each shared node
// (granted when it holds any device of the family). A Neuron task given
// cores (bind.cores) holds the devices those cores are on.
#pragma once

#include <string>
#include <vector>

#include "protocol/messages_worker.h"
#include "protocol/types.h"
#include "worker/runner/device_rules.h"

namespace gpool::worker {

// Ordinals looked at beyond the spec's devices, per family.
inline constexpr uint32_t kVendorNodeScan = 64;

// `device_root`: where the nodes live ("/dev"; tests use a directory of
// nodes they made).
std::vector<DeviceNodeAccess> VendorDeviceNodes(const BindTask& bind, const NodeSpec& node,
                                                const std::string& device_root);

}  // namespace gpool::worker
