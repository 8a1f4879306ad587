// MIG discovery for one GPU through NVML: whether MIG is on and which
// instances exist. A GPU with MIG on is reported as mig_mode "static" with
// its instances: the worker hands out what exists and never creates or
// destroys instances.
//
// Per MIG device (nvmlDeviceGetMigDeviceHandleByIndex up to
// nvmlDeviceGetMaxMigDeviceCount):
//   uuid     nvmlDeviceGetUUID ("MIG-...")
//   profile  NVML's own name of the GPU instance profile ("1g.10gb",
//            "1g.10gb+me"), from nvmlDeviceGetGpuInstanceProfileInfoV: the
//            profile whose id is the instance's (nvmlGpuInstanceGetInfo),
//            else the one whose slices, memory and media engines equal the
//            device's nvmlDeviceGetAttributes_v2; without a profile table,
//            "<slices>g.<GiB rounded up>gb", which is NVIDIA's name for the
//            common A100/H100 profiles but not for every part.
//   start    the placement start (nvmlDeviceGetGpuInstanceId,
//            nvmlDeviceGetGpuInstanceById, nvmlGpuInstanceGetInfo). Some
//            drivers allow GetGpuInstanceById to root only. When any
//            instance's placement cannot be read, every instance of that GPU
//            gets its GPU instance id as start instead: 0 for all would make
//            two instances of one profile indistinguishable, and the worker
//            could then hand one instance to two tasks. The id is unique per
//            GPU and stable while the layout is.
// MIG devices that are a compute instance covering only part of their GPU
// instance are left out: a task would get a fraction of what the profile
// says. Symbols the driver lacks leave MIG off (mig_mode "").
//
// Thread-safety: as nvml_probe.h (between nvmlInit and nvmlShutdown).
#pragma once

#include "protocol/types.h"
#include "worker/discovery/nvml_api.h"

namespace gpool::worker {

// Fills gpu->mig_mode and gpu->mig_instances for `device`.
void ProbeMig(const nvml::MigApi& api, nvml::Device device, GpuInfo* gpu);

}  // namespace gpool::worker
