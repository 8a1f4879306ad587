// The vendor part of a task's device environment (issue 50): for every
// accelerator family on the node (vendor/vendor_profile.h), the variables
// its runtime reads to choose devices, and the refusal of a GPU share on a
// family that cannot be shared. device_env.h sets the NVIDIA variables and
// calls this; pure.
//
//   Every family present on the node gets each of its row's variables, also
//   when the task holds none of its devices (empty value: the runtime sees
//   none, rather than all of them).
//   kOrdinals: the family ordinals of the bound devices, in bind order.
//   kPositions: 0..n-1 (AMD's HIP_ and CUDA_VISIBLE_DEVICES, applied after
//   ROCR_VISIBLE_DEVICES narrowed the list).
//   kCores: left to device_env (NEURON_RT_VISIBLE_CORES from the cores).
//
// Shares (gpu_memory_mib or gpu_compute_pct above 0) on a device of a family
// whose row says ShareSupport::kNone (AMD, Hygon DCU) or kCores (Neuron: it
// shares by cores, never by memory): FailedPrecondition,
// and the task does not start: nothing on the node would hold it to its
// share. Families whose vendor carves shares itself (vXPU, sGPU, vGCU,
// vNPU) get gpool's GPOOL_* share variables only; worker/README.md lists
// these as not enforced by gpool.
#pragma once

#include <map>
#include <string>

#include "protocol/base/status.h"
#include "protocol/messages_worker.h"
#include "protocol/types.h"

namespace gpool::worker {

// True for a variable some family's row names: the worker's alone, set or
// not (a task must not widen its own device set).
bool IsVendorDeviceVariable(const std::string& key);

// Sets the vendor variables in `env` (see above). InvalidArgument for a
// bound GPU the node does not have; FailedPrecondition for a share on a
// family without sharing. `env` is unchanged on error.
Status AddVendorDeviceEnv(const BindTask& bind, const NodeSpec& node, std::map<std::string, std::string>& env);

}  // namespace gpool::worker
