// Discovers NVIDIA GPUs through NVML, loaded at run time with dlopen so the
// worker has no link-time dependency on the driver and runs unchanged on
// CPU-only machines.
//
// What it reports per GPU: index, UUID, model name, memory, NUMA node (from
// /sys/bus/pci/devices/<bus id>/numa_node), NVLink peers (best effort:
// links to another GPU make it a peer; links to an NVSwitch join the GPU to
// the switch fabric, whose members are all peers of each other), SM count
// as compute_units when the driver gives attributes for whole GPUs, and MIG
// (nvml_mig.h: mode "static" with the instances that exist). Symbols an
// older driver lacks are skipped, never fatal.
//
// A missing library is Status NotFound with a one-line message; any NVML
// error is a Status, never a crash. The library is unloaded before return
// (loading and initialising: nvml_library.h).
//
// Thread-safety: ProbeNvmlGpus may be called from any one thread at a time
// (NVML init/shutdown is reference-counted but not ours to interleave).
#pragma once

#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/types.h"

namespace gpool::worker {

struct NvmlProbeOptions {
  // The shared library to dlopen. Tests point this at a fake or at a name
  // that does not exist.
  std::string library = "libnvidia-ml.so.1";
  // Root of sysfs, for the NUMA node of each PCI device.
  std::string sys_root = "/sys";
};

// The GPUs NVML sees, indexed as NVML (and CUDA with the default
// CUDA_DEVICE_ORDER=PCI_BUS_ID) counts them. NotFound when the library is
// absent; Unavailable when it loads but NVML cannot initialise (no driver).
Result<std::vector<GpuInfo>> ProbeNvmlGpus(const NvmlProbeOptions& options = {});

}  // namespace gpool::worker
