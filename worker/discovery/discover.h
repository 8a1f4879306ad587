// Decides what this node is, in the order main uses:
//   1. --spec FILE when given (simulated nodes, or hosts NVML cannot see);
//   2. otherwise the host probe (CPUs, memory, NUMA, NICs) plus the GPUs NVML
//      reports;
//   3. when NVML is absent or fails, the accelerators the vendors' tools
//      list (vendor_probe.h: npu-smi, xpu-smi, neuron-ls, mx-smi, efsmi,
//      hy-smi, rocm-smi), when one does;
//   4. otherwise a CPU-only node from the host probe (logged as one line,
//      not an error). A vendor tool whose output cannot be read fails
//      discovery: a node that hides its devices is worse than one that
//      does not start.
// The name is --node-name when given, else the spec's name, else the
// hostname. The result has passed ValidateNodeSpec.
//
// Thread-safety: stateless; call from any thread.
#pragma once

#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "protocol/base/status.h"
#include "protocol/types.h"
#include "worker/discovery/host_probe.h"
#include "worker/discovery/nvml_probe.h"
#include "worker/discovery/vendor_probe.h"

namespace gpool::worker {

struct DiscoveryOptions {
  std::string spec_path;   // --spec; empty: probe the host
  std::string node_name;   // --node-name; empty: the spec's name or the hostname
  NvmlProbeOptions nvml;
  // MIG-enabled GPUs with no instances are offered as dynamic MIG (the
  // scheduler chooses instances, the worker creates them); GPUs with
  // instances stay static, since the scheduler does not own those.
  bool mig_dynamic = false;
  HostProbeOptions host;
  // Vendor tools after NVML (step 3); off: NVML or CPU-only, as before.
  bool vendor_tools = true;
  VendorProbeOptions vendor;
  std::shared_ptr<spdlog::logger> logger;  // nullptr: spdlog's default
};

Result<NodeSpec> DiscoverNode(const DiscoveryOptions& options);

}  // namespace gpool::worker
