// Loads a node description from a YAML or JSON file (yaml-cpp reads both),
// for nodes whose devices cannot be probed and for simulated nodes: the
// worker's --spec (real nodes and the --simulate fleet) and gpool-sim's
// --nodes read the same format through this one parser.
//
// Format (see worker/README.md and worker/examples/node-8gpu.yaml):
//
//   name: gpu-a01                 # optional; --node-name overrides it
//   hostname: gpu-a01.dc1         # optional; defaults to the machine's hostname
//   labels: {pool: public, rack: r12}
//   cpus: 128                     # cores, may be fractional (7.5); or cpu_milli: 128000
//   memory: 1024Gi                # "512Gi", "64Mi", or an integer number of MiB; or memory_mib
//   numa:                         # optional; node totals default to the sum over NUMA nodes
//     - {id: 0, cpus: 64, memory: 512Gi, cpulist: "0-31,64-95"}
//     - {id: 1, cpus: 64, memory: 512Gi, cpulist: "32-63,96-127"}
//   gpus:                         # a list ...
//     - {index: 0, uuid: GPU-..., model: A100-SXM4-80GB, vendor: nvidia, memory: 80Gi,
//        numa: 0, nvlink_peers: [1, 2, 3], compute_units: 108, link_group: 0,
//        mig_mode: static, mig_instances: [{profile: 3g.40gb, start: 4, uuid: MIG-...}]}
//     - {index: 1, uuid: ..., vendor: aws, model: trn1, cores: 2}
//     - {index: 2, uuid: ..., model: T4, time_slices: 4}   # 4 time-sliced replicas, low class only
//   gpus:                         # ... or the shorthand for simulated nodes
//     {count: 8, model: A100-SXM4-80GB, memory: 80Gi, nvlink: all, numa_split: 2,
//      link_groups: 2, compute_units: 108, cores: 0, vendor: nvidia, mig_mode: dynamic}
//   nics:
//     - {name: ib0, leaf_switch: leaf-3, speed_gbps: 200}
//
// numa[].cpus is a CPU count, as at the top level, so the NUMA node's CPUs
// as a Linux cpulist (NumaInfo.cpus, used to pin tasks) are `cpulist`; with
// no cpus/cpu_milli the cpulist's size is the count. mig_mode is static,
// dynamic or none; mig_instances (static MIG: the instances that exist)
// implies static, each {profile (required), start (default 0), uuid
// (default "MIG-<gpu uuid>-<profile>-<start>")}, starts unique per GPU.
//
// The shorthand generates uuids "GPU-<node name>-<i>"; nvlink is all|none
// (default none); numa_split N puts GPU i on NUMA node i*N/count (default:
// split over the numa list, or -1 when there is none); link_groups N puts
// GPU i in link group i*N/count. time_slices N (2 to 64) advertises a GPU
// as N time-sliced replicas that low-class tasks take one each, with no
// memory isolation (GpuInfo::time_slices); not with MIG or cores.
// compute_units, cores, time_slices and mig_mode apply to
// every GPU; mig_mode static is refused there, since static layouts list
// their instances per GPU. vendor defaults to nvidia. Unknown fields are
// errors, so a typo does not silently vanish.
//
// Every error names the file and the field:
//   "spec.yaml: gpus[2].memory: '80Q' is not a memory size (...)".
// The result has passed ValidateNodeSpec.
//
// Pure functions apart from reading the file; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "protocol/base/status.h"
#include "protocol/types.h"

namespace gpool::topology {

struct NodeSpecFileOptions {
  // When non-empty, replaces the file's `name` (the worker's --node-name).
  std::string name_override;
  // The name when neither the override nor the file gives one (the worker:
  // the hostname; gpool-sim: the file's name without its extension).
  std::string default_name;
  // The hostname when the file gives none.
  std::string default_hostname;
};

// Reads and parses `path`. NotFound / IoError when the file cannot be read,
// InvalidArgument when its content is wrong.
Result<NodeSpec> LoadNodeSpecFile(const std::string& path, const NodeSpecFileOptions& options = {});

// Parses `text`; `source` names it in error messages (usually the path).
Result<NodeSpec> ParseNodeSpec(std::string_view text, const std::string& source,
                               const NodeSpecFileOptions& options = {});

}  // namespace gpool::topology
