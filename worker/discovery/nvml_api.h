// The part of NVML's C API the worker uses, declared here from nvml.h (the
// ABI is stable) so the worker builds without NVML headers and loads the
// library with dlopen. Private to discovery/nvml_*.{h,cc} and the test
// stand-in discovery/testdata/fake_nvml.cc, which implements it.
#pragma once

namespace gpool::worker::nvml {

using Return = int;
using Device = struct nvmlDevice_st*;
using GpuInstance = struct nvmlGpuInstance_st*;
using ComputeInstance = struct nvmlComputeInstance_st*;

constexpr Return kSuccess = 0;
constexpr Return kErrorInvalidArgument = 2;           // NVML_ERROR_INVALID_ARGUMENT
constexpr Return kErrorNotSupported = 3;              // NVML_ERROR_NOT_SUPPORTED
constexpr Return kErrorNoPermission = 4;              // NVML_ERROR_NO_PERMISSION
constexpr Return kErrorNotFound = 6;                  // NVML_ERROR_NOT_FOUND
constexpr Return kErrorInsufficientSize = 7;          // NVML_ERROR_INSUFFICIENT_SIZE
constexpr Return kErrorDriverNotLoaded = 9;           // NVML_ERROR_DRIVER_NOT_LOADED
constexpr Return kErrorTimeout = 10;                  // NVML_ERROR_TIMEOUT
constexpr Return kErrorGpuIsLost = 15;                // NVML_ERROR_GPU_IS_LOST
constexpr Return kErrorInUse = 19;                    // NVML_ERROR_IN_USE
constexpr Return kErrorInsufficientResources = 23;    // NVML_ERROR_INSUFFICIENT_RESOURCES
constexpr Return kErrorArgumentVersionMismatch = 25;  // NVML_ERROR_ARGUMENT_VERSION_MISMATCH
constexpr Return kErrorUnknown = 999;                 // NVML_ERROR_UNKNOWN
// NVML_VALUE_NOT_AVAILABLE: what usedGpuMemory holds when NVML may not say
// (another user's or container's process, for an unprivileged caller).
constexpr unsigned long long kValueNotAvailable = ~0ULL;
constexpr int kFeatureEnabled = 1;   // NVML_FEATURE_ENABLED
constexpr unsigned kMigEnabled = 1;  // NVML_DEVICE_MIG_ENABLE
constexpr unsigned kMaxLinks = 18;   // NVML_NVLINK_MAX_LINKS in recent drivers
// Profile indices are small enums (NVML_GPU_INSTANCE_PROFILE_*, 0..14 in
// current drivers); the probe tries this many and skips the unknown ones.
constexpr unsigned kMaxGpuInstanceProfiles = 32;
// NVML_COMPUTE_INSTANCE_PROFILE_* (0..9 in current drivers), tried the same way.
constexpr unsigned kMaxComputeInstanceProfiles = 16;
constexpr unsigned kComputeInstanceEngineProfileShared = 0;  // NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
// More instances than any GPU holds (A100/H100: 7 per GPU).
constexpr unsigned kMaxInstances = 32;
constexpr unsigned kNameV2BufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlUtilization_t: percent of the last sample period the GPU (memory) was busy.
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};

struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

// nvmlDeviceAttributes_t: filled for MIG devices (and, on some drivers,
// for whole GPUs).
struct DeviceAttributes {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
};

struct GpuInstancePlacement {
  unsigned int start;
  unsigned int size;
};

struct GpuInstanceInfo {
  Device device;
  unsigned int id;
  unsigned int profileId;
  GpuInstancePlacement placement;
};

// nvmlGpuInstanceProfileInfo_v2_t; `version` must be kGpuInstanceProfileInfoV2.
struct GpuInstanceProfileInfoV2 {
  unsigned int version;
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[kNameV2BufferSize];
};
// NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2).
constexpr unsigned int kGpuInstanceProfileInfoV2 = sizeof(GpuInstanceProfileInfoV2) | (2u << 24);

// nvmlComputeInstanceProfileInfo_t (v1).
struct ComputeInstanceProfileInfo {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
};

// nvmlProcessInfo_v1_t: what nvmlDeviceGetComputeRunningProcesses (no
// suffix) fills.
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
static_assert(sizeof(ProcessInfoV1) == 16);

// nvmlProcessInfo_v2_t (nvml.h's nvmlProcessInfo_t since R470): what the
// _v2 and _v3 entry points fill. The ids are 0xFFFFFFFF without MIG.
struct ProcessInfoV2 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(ProcessInfoV2) == 24);

using InitFn = Return (*)();
using GetUtilizationFn = Return (*)(Device, Utilization*);
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using GetCountFn = Return (*)(unsigned int*);
using GetHandleFn = Return (*)(unsigned int, Device*);
using GetStringFn = Return (*)(Device, char*, unsigned int);
using GetMemoryFn = Return (*)(Device, Memory*);
using GetPciFn = Return (*)(Device, PciInfo*);
using GetLinkStateFn = Return (*)(Device, unsigned int, int*);
using GetRemotePciFn = Return (*)(Device, unsigned int, PciInfo*);
using GetAttributesFn = Return (*)(Device, DeviceAttributes*);
using GetMigModeFn = Return (*)(Device, unsigned int* current, unsigned int* pending);
using GetUintFn = Return (*)(Device, unsigned int*);
using GetMigHandleFn = Return (*)(Device, unsigned int, Device*);
using GetGpuInstanceByIdFn = Return (*)(Device, unsigned int, GpuInstance*);
using GpuInstanceGetInfoFn = Return (*)(GpuInstance, GpuInstanceInfo*);
using GetProfileInfoVFn = Return (*)(Device, unsigned int, GpuInstanceProfileInfoV2*);
using GetProcessesV1Fn = Return (*)(Device, unsigned int* count, ProcessInfoV1*);
using GetProcessesV2Fn = Return (*)(Device, unsigned int* count, ProcessInfoV2*);
using CreateGpuInstanceFn = Return (*)(Device, unsigned int profile_id, const GpuInstancePlacement*, GpuInstance*);
using GetPlacementsFn = Return (*)(Device, unsigned int profile_id, GpuInstancePlacement*, unsigned int* count);
using GetGpuInstancesFn = Return (*)(Device, unsigned int profile_id, GpuInstance*, unsigned int* count);
using GetCiProfileInfoFn = Return (*)(GpuInstance, unsigned int profile, unsigned int eng_profile,
                                      ComputeInstanceProfileInfo*);
using CreateComputeInstanceFn = Return (*)(GpuInstance, unsigned int profile_id, ComputeInstance*);
using GetComputeInstancesFn = Return (*)(GpuInstance, unsigned int profile_id, ComputeInstance*, unsigned int* count);
using DestroyComputeInstanceFn = Return (*)(ComputeInstance);
using DestroyGpuInstanceFn = Return (*)(GpuInstance);

// Health (worker/health/gpu_checks.h). nvmlEventData_t:
struct EventData {
  Device device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID code for XID events
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
using EventSet = struct nvmlEventSet_st*;
constexpr unsigned long long kEventTypeXidCriticalError = 0x8;  // nvmlEventTypeXidCriticalError
constexpr int kMemoryErrorUncorrected = 1;                        // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;                                   // NVML_VOLATILE_ECC
constexpr unsigned kTemperatureGpu = 0;                           // NVML_TEMPERATURE_GPU
using EventSetCreateFn = Return (*)(EventSet*);
using RegisterEventsFn = Return (*)(Device, unsigned long long, EventSet);
using EventSetWaitFn = Return (*)(EventSet, EventData*, unsigned int timeout_ms);
using EventSetFreeFn = Return (*)(EventSet);
using GetTotalEccFn = Return (*)(Device, int error_type, int counter_type, unsigned long long*);
using GetRetiredPendingFn = Return (*)(Device, int* pending);
using GetRemappedRowsFn = Return (*)(Device, unsigned int* corrected, unsigned int* uncorrected,
                                     unsigned int* pending, unsigned int* failure);
using GetTemperatureFn = Return (*)(Device, unsigned int sensor, unsigned int*);

// The MIG entry points, resolved one by one: drivers before R450 (and
// non-MIG builds) lack some or all, and any of these may be null.
struct MigApi {
  GetStringFn get_uuid = nullptr;                     // nvmlDeviceGetUUID
  GetMigModeFn get_mig_mode = nullptr;                // nvmlDeviceGetMigMode
  GetUintFn get_max_mig_count = nullptr;              // nvmlDeviceGetMaxMigDeviceCount
  GetMigHandleFn get_mig_handle = nullptr;            // nvmlDeviceGetMigDeviceHandleByIndex
  GetAttributesFn get_attributes = nullptr;           // nvmlDeviceGetAttributes_v2
  GetUintFn get_gpu_instance_id = nullptr;            // nvmlDeviceGetGpuInstanceId
  GetGpuInstanceByIdFn get_gpu_instance = nullptr;    // nvmlDeviceGetGpuInstanceById
  GpuInstanceGetInfoFn get_gpu_instance_info = nullptr;  // nvmlGpuInstanceGetInfo
  GetProfileInfoVFn get_profile_info = nullptr;       // nvmlDeviceGetGpuInstanceProfileInfoV
};

// What creating and destroying MIG instances needs beyond MigApi; resolved
// the same way (nvml_mig_manager.h).
struct MigControlApi {
  CreateGpuInstanceFn create_gpu_instance = nullptr;  // nvmlDeviceCreateGpuInstanceWithPlacement
  // nvmlDeviceGetGpuInstancePossiblePlacements_v2 (or its unsuffixed
  // predecessor): a placement's size is not always the profile's slice
  // count (A100's 3g and 7g profiles span 4 and 8 memory slices).
  GetPlacementsFn get_placements = nullptr;
  GetGpuInstancesFn get_gpu_instances = nullptr;      // nvmlDeviceGetGpuInstances
  GetCiProfileInfoFn get_ci_profile_info = nullptr;   // nvmlGpuInstanceGetComputeInstanceProfileInfo
  CreateComputeInstanceFn create_compute_instance = nullptr;  // nvmlGpuInstanceCreateComputeInstance
  GetComputeInstancesFn get_compute_instances = nullptr;      // nvmlGpuInstanceGetComputeInstances
  DestroyComputeInstanceFn destroy_compute_instance = nullptr;  // nvmlComputeInstanceDestroy
  DestroyGpuInstanceFn destroy_gpu_instance = nullptr;          // nvmlGpuInstanceDestroy
};

}  // namespace gpool::worker::nvml
