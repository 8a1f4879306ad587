// Device access rules for a task's cgroup (issue 31): which device nodes a
// task may not open, so that a task given GPU 0 cannot open /dev/nvidia1
// whatever its CUDA_VISIBLE_DEVICES says.
//
// The rules are a deny list of (type, major, minor): every GPU device node
// of the node that the task was not granted. Everything else stays as the
// parent cgroup allows it (so /dev/null, ttys and nvidiactl/nvidia-uvm,
// which every CUDA process needs, keep working). The same list becomes
//   - v1: one "c M:m rwm" line per rule written to the task cgroup's
//     devices.deny (a default-allow cgroup keeps a list of exceptions);
//   - v2: a BPF_PROG_TYPE_CGROUP_DEVICE program (raw instructions, no
//     libbpf) attached to the task's cgroup with BPF_F_ALLOW_MULTI, so a
//     program the parent already has (systemd's) still runs too. It returns
//     0 (deny) for a listed node and 1 otherwise.
// The kernel checks both at open(2) (and mknod), before the driver is
// reached: a denied node gives EPERM.
//
// Other accelerator families add their per-device and shared nodes
// (vendor_device_nodes.h) to the same list.
//
// Which nodes are GPUs: the worker stats the path made from a pattern
// (--gpu-device-nodes, default /dev/nvidia%u, %u the GPU index) for indices
// 0..63 and every GPU of the node spec, so a GPU the spec leaves out is
// denied too; tests point the pattern at nodes they mknod themselves.
//
// Thread-safety: pure functions, except AttachV2DeviceProgram (a syscall).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <linux/bpf.h>

#include "protocol/base/status.h"

namespace gpool::worker {

struct DeviceRule {
  bool block = false;  // a block device; false: a character device
  uint32_t major = 0;
  uint32_t minor = 0;
  bool operator==(const DeviceRule&) const = default;
  auto operator<=>(const DeviceRule&) const = default;
  template <typename V>
  void Fields(V& v) {
    v.Optional("block", block);
    v.Required("major", major);
    v.Required("minor", minor);
  }
};

// A GPU of the node and the device node that is its: index and path.
struct GpuDeviceNode {
  uint32_t index = 0;
  std::string path;
};

// The path of GPU `index` from a pattern with one %u ("/dev/nvidia%u").
std::string GpuDeviceNodePath(const std::string& pattern, uint32_t index);

// A device node of the node and whether the task may open it.
struct DeviceNodeAccess {
  std::string path;
  bool granted = false;
};

// The deny rules for `nodes`: every listed node that exists as a device
// (stat(2)) and is not granted, sorted and unique. A node that is also
// listed as granted (the same major:minor under another path or entry) is
// never denied. Missing nodes and plain files are skipped.
std::vector<DeviceRule> DenyRulesForNodes(const std::vector<DeviceNodeAccess>& nodes);

// The deny rules for a task granted `granted` (GPU indices) on a node with
// `gpus`: the node of every GPU not granted, by stat(2). A GPU whose node is
// missing or not a device is skipped (a node spec without real devices).
// A node shared by a granted GPU is never denied.
std::vector<DeviceRule> DenyRulesFor(const std::vector<GpuDeviceNode>& gpus, const std::vector<uint32_t>& granted);

// The v1 devices.deny lines ("c 195:1 rwm").
std::vector<std::string> V1DenyLines(const std::vector<DeviceRule>& rules);

// The v2 device program for `rules` (see above).
std::vector<bpf_insn> V2DeviceProgram(const std::vector<DeviceRule>& rules);

// Loads `program` and attaches it to the cgroup directory `cgroup_dir`
// (BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI). The attachment holds the program
// for as long as the cgroup lives. Unavailable, with the errno, on failure.
Status AttachV2DeviceProgram(const std::string& cgroup_dir, const std::vector<bpf_insn>& program);

}  // namespace gpool::worker
