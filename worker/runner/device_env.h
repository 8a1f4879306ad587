// The device part of a task's environment: which devices it sees (whole
// GPUs, MIG instances, NeuronCores) and the limits of a GPU share. Pure; the
// rest of the environment is task_env.h's.
//
// Visible devices, in bind order: the GPU's uuid, or, for a GPU with a MIG
// profile in the bind (mig_profiles[i], mig_starts[i]), the MIG instance:
//   static MIG   the uuid of the node spec's mig_instances entry with that
//                profile and start. None: FailedPrecondition, and the task
//                fails to start; the layout changed since the coordinator
//                placed it, and running on some other instance is worse.
//   dynamic MIG  the uuid the task manager's MigManager returned when it
//                created the instance (TaskEnvOptions.mig_uuids); without
//                one, "MIG-<gpu uuid>-<profile>-<start>", the id a simulated
//                node's instance goes by (simulated_mig_manager.h).
// With a MIG instance, CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES list
// these ids (CUDA takes MIG uuids there); otherwise indices and uuids.
//
// GPU shares (gpu_memory_mib or gpu_compute_pct above 0) are enforced by
// HAMi-core (libvgpu.so, Project-HAMi), preloaded into the task. It reads:
//   CUDA_DEVICE_MEMORY_LIMIT_<i>   "<mib>m" per visible device i (0-based)
//   CUDA_DEVICE_MEMORY_LIMIT       "<mib>m", the fallback for other devices
//   CUDA_DEVICE_SM_LIMIT           compute %, unless the QoS is best-effort
//   GPU_CORE_UTILIZATION_POLICY    best-effort -> "disable" (no compute cap),
//                                  fixed-share -> "force" (always capped),
//                                  burst-share -> "default" (capped; HAMi's
//                                  node monitor may lift the cap while the
//                                  device is otherwise idle)
//   CUDA_DEVICE_MEMORY_SHARED_CACHE  its per-task accounting file; HAMi-core
//                                  keeps the first limits it saw in that file,
//                                  so tasks must never share one
// plus LD_PRELOAD=<intercept lib> (before any LD_PRELOAD of the task's own)
// when the worker has one (--cuda-intercept-lib). gpool's own:
// GPOOL_GPU_MEMORY_MIB, GPOOL_GPU_COMPUTE_PCT, GPOOL_SHARING_QOS
// (best-effort when unset), which gpool's interposer reads.
//
// gpool's interposer (share_enforcement.h), when the task has a private
// driver directory (TaskEnvOptions.cuda_lib_dir) and no intercept library:
//   LD_LIBRARY_PATH         that directory first, then the task's own
//                           entries (any copy of the directory dropped)
//   GPOOL_CUDA_REAL_DRIVER  the node's real libcuda.so.1 (when known)
//   GPOOL_CUDA_LEDGER       the attempt's ledger file
//   GPOOL_CUDA_OBJECT_COSTS what contexts, modules and streams are charged
//                           (worker/cuda/object_costs.h; "none" when unset)
// Neither: the share is not enforced here and the variables only inform
// (the worker's NVML sampling still stops a task far over its memory).
//
// Cores (bind.cores, node-wide NeuronCore ids): NEURON_RT_VISIBLE_CORES in
// cpulist form ("0-3"; the Neuron runtime documents a single id or one
// range, so the scheduler should hand out contiguous cores) and GPOOL_CORES
// ("0,1,2,3"). Whole core-addressable devices get their own cores there,
// numbered node-wide: device d's cores follow those of the devices before it
// in index order.
//
// Other accelerator families (Ascend, Kunlun, Neuron, MetaX, Enflame, Hygon
// DCU, AMD): their visible-device variables come from their table row
// (vendor_env.h, vendor/vendor_profile.h); a share on a family that cannot
// be shared is FailedPrecondition.
//
// Every variable named here is the worker's: values from the job's env or
// the worker's own environment are dropped (a task could otherwise raise its
// own limits, e.g. with CUDA_DEVICE_SM_LIMIT_0 or CUDA_DISABLE_CONTROL).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages_worker.h"
#include "protocol/types.h"

namespace gpool::worker {

// What the worker adds to a task's environment beyond the bind.
struct TaskEnvOptions {
  // The CUDA interception library for GPU shares (--cuda-intercept-lib);
  // empty: shares are not enforced and no LD_PRELOAD is added.
  std::string cuda_intercept_lib;
  // CUDA_DEVICE_MEMORY_SHARED_CACHE for a share: unique to the task.
  std::string share_cache_path;
  // gpool's interposer for a share (share_enforcement.h): the task's private
  // directory holding libcuda.so.1; empty: not interposed. Ignored when
  // cuda_intercept_lib is set (the two are never both applied).
  std::string cuda_lib_dir;
  std::string cuda_real_driver;  // GPOOL_CUDA_REAL_DRIVER; empty: left unset
  std::string cuda_ledger;       // GPOOL_CUDA_LEDGER
  std::string cuda_activity_dir; // GPOOL_CUDA_ACTIVITY; empty: the interposer's default
  std::string cuda_object_costs; // GPOOL_CUDA_OBJECT_COSTS; empty: "none" (objects not charged)
  // Dynamic MIG: the uuid of the instance created for the task, by GPU index.
  std::map<uint32_t, std::string> mig_uuids;
};

// The sharing QoS a bind asks for: best-effort when unset.
std::string EffectiveSharingQos(const BindTask& bind);
// True when the bind is a GPU share (memory or compute limit above 0).
bool IsGpuShare(const BindTask& bind);

// The uuids of the bound GPUs, in bind order (from the node spec; MIG
// instances are named by their GPU's uuid here).
std::vector<std::string> BoundGpuUuids(const BindTask& bind, const NodeSpec& node);

// The ids the task's devices go by, in bind order (see above).
// `mig_uuids`: as TaskEnvOptions.mig_uuids.
Result<std::vector<std::string>> VisibleDeviceIds(const BindTask& bind, const NodeSpec& node,
                                                  const std::map<uint32_t, std::string>& mig_uuids = {});

// The NeuronCores the task may use, node-wide ids, sorted: bind.cores, else
// the cores of its whole core-addressable devices; empty when none.
std::vector<uint32_t> VisibleCores(const BindTask& bind, const NodeSpec& node);

// Sets the device variables in `env`, dropping any it already had.
// FailedPrecondition when a MIG instance cannot be found.
Status AddDeviceEnv(const BindTask& bind, const NodeSpec& node, const TaskEnvOptions& options,
                    std::map<std::string, std::string>& env);

}  // namespace gpool::worker
