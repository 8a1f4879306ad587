// The nodes of a simulated fleet: N copies of one node spec, each made
// distinct the way N real machines are. gpool-worker --simulate N registers
// these nodes, and gpool-sim --nodes SPEC --node-count N simulates the same
// ones, so both model one cluster.
//
//   name      "<base>-0001" ... "<base>-NNNN": four digits, more when N needs
//             them, so names sort in node order; <base> is the worker's
//             --node-name, else the spec's name;
//   hostname  the node's name (each simulated node is its own host);
//   uuids     every GPU and MIG instance uuid gets "-<digits>" appended, the
//             node's number, so no two devices in the cluster share an id
//             (a spec lists one machine's uuids; the coordinator and
//             gpu_uuid_allow/deny lists key devices by them).
// Everything else (devices, CPUs, memory, NUMA, NICs, labels) is the spec's.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/types.h"

namespace gpool::topology {

// The number of simulated node `index` (0-based) of `count`, zero-padded:
// "0001" for index 0.
std::string FleetNodeNumber(uint32_t index, uint32_t count);

// `count` nodes derived from `spec`, named from `base` (empty: spec.name).
// InvalidArgument when a derived node does not validate (a base name too
// long for the suffix).
Result<std::vector<NodeSpec>> MakeFleetNodes(const NodeSpec& spec, const std::string& base, uint32_t count);

}  // namespace gpool::topology
