// Which CPUs and memory a task is pinned to, from its bind and the node
// spec. Pure; the launcher applies the result (process_launcher.h
// NumaPinning, posix_process_launcher.h).
//
// A task is pinned when its numa_policy is best-effort or single-numa-node
// and some of its devices sit on a known NUMA node (GpuInfo.numa >= 0) that
// the spec lists with a `cpus` cpulist: to the union of those nodes' CPUs,
// with memory bound to (single-numa-node) or preferring (best-effort) those
// nodes. Devices are the bound GPUs, or for a core-level task the devices
// its cores belong to. Devices on unknown or CPU-less nodes are left out;
// with none left the task is not pinned.
//
// Thread-safety: pure function.
#pragma once

#include "protocol/messages_worker.h"
#include "protocol/types.h"
#include "worker/runner/process_launcher.h"

namespace gpool::worker {

NumaPinning PlanNumaPinning(const BindTask& bind, const NodeSpec& node);

}  // namespace gpool::worker
