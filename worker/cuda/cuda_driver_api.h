// gpool's own declarations of the part of the CUDA driver API (libcuda.so.1)
// that the interposer, the fake driver, the tests and the GPU check use,
// written from NVIDIA's public driver API reference (cuda.h's documented
// ABI). Building gpool needs no CUDA toolkit, and the fake and the code under
// test share one set of declarations, so they cannot drift apart.
//
// Names are the ABI's: the driver exports versioned symbols (cuMemAlloc_v2,
// cuMemGetInfo_v2, ...) which cuda.h normally hides behind #define
// cuMemAlloc cuMemAlloc_v2; here the versioned names are spelled out. The
// _ptsz/_ptds variants are the per-thread-default-stream entry points that
// code built with --default-stream per-thread calls.
//
// Only plain C types: this header is included by code loaded into foreign
// processes (the interposer) and by a fake built as a C-ABI library.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2: 64 bits on every 64-bit ABI
using cuuint64_t = std::uint64_t;
using CUmemGenericAllocationHandle = unsigned long long;

struct CUctx_st;
struct CUstream_st;
struct CUfunc_st;
struct CUmod_st;
struct CUevent_st;
struct CUarray_st;
struct CUmipmappedArray_st;
struct CUmemPoolHandle_st;
struct CUgraphExec_st;
struct CUlib_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUfunction = CUfunc_st*;
using CUmodule = CUmod_st*;
using CUevent = CUevent_st*;
using CUarray = CUarray_st*;
using CUmipmappedArray = CUmipmappedArray_st*;
using CUmemoryPool = CUmemPoolHandle_st*;
using CUgraphExec = CUgraphExec_st*;
using CUlibrary = CUlib_st*;

// CUresult values (cudaError_enum).
enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_PROFILER_DISABLED = 5,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_SOURCE = 300,
  CUDA_ERROR_FILE_NOT_FOUND = 301,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

// cuGetProcAddress flags (CUdriverProcAddress_flags).
enum : cuuint64_t {
  CU_GET_PROC_ADDRESS_DEFAULT = 0,
  CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1,
};

// cuGetProcAddress_v2's out parameter (CUDA 12.0+).
enum CUdriverProcAddressQueryResult : int {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

// CUstreamCaptureStatus and CUstreamCaptureMode.
enum : int {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
};
enum : int {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
};

// CUdevice_attribute: the few the fake answers.
enum : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

// cuEventCreate flags.
enum : unsigned {
  CU_EVENT_DEFAULT = 0,
  CU_EVENT_BLOCKING_SYNC = 1,
  CU_EVENT_DISABLE_TIMING = 2,
};

// cuMemAllocManaged flags.
enum : unsigned { CU_MEM_ATTACH_GLOBAL = 1, CU_MEM_ATTACH_HOST = 2 };

// CUarray_format: element formats whose size the interposer knows.
enum CUarray_format : int {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
  CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
  CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
  CU_AD_FORMAT_SIGNED_INT8 = 0x08,
  CU_AD_FORMAT_SIGNED_INT16 = 0x09,
  CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
  CU_AD_FORMAT_HALF = 0x10,
  CU_AD_FORMAT_FLOAT = 0x20,
};

// CUDA_ARRAY_DESCRIPTOR_v2 (cuArrayCreate_v2).
struct CUDA_ARRAY_DESCRIPTOR {
  std::size_t Width;
  std::size_t Height;
  CUarray_format Format;
  unsigned int NumChannels;
};

// CUDA_ARRAY3D_DESCRIPTOR_v2 (cuArray3DCreate_v2, cuMipmappedArrayCreate).
struct CUDA_ARRAY3D_DESCRIPTOR {
  std::size_t Width;
  std::size_t Height;
  std::size_t Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
};

// Virtual memory management (cuMemCreate).
enum CUmemAllocationType : int { CU_MEM_ALLOCATION_TYPE_INVALID = 0, CU_MEM_ALLOCATION_TYPE_PINNED = 1 };
enum CUmemAllocationHandleType : int { CU_MEM_HANDLE_TYPE_NONE = 0 };
enum CUmemLocationType : int {
  CU_MEM_LOCATION_TYPE_INVALID = 0,
  CU_MEM_LOCATION_TYPE_DEVICE = 1,
  CU_MEM_LOCATION_TYPE_HOST = 2,
  CU_MEM_LOCATION_TYPE_HOST_NUMA = 3,
  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 4,
};
struct CUmemLocation {
  CUmemLocationType type;
  int id;
};
struct CUmemAllocationProp {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

// cuLaunchKernelEx's configuration (CUDA 11.8+). Attributes are opaque here:
// the interposer only needs the stream.
struct CUlaunchAttribute_st;
struct CUlaunchConfig {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute_st* attrs;
  unsigned int numAttrs;
};

// Function types of the entry points gpool calls or replaces, named
// <symbol>_fn after the exported (versioned) symbol.
using cuInit_fn = CUresult (*)(unsigned int);
using cuDriverGetVersion_fn = CUresult (*)(int*);
using cuDeviceGet_fn = CUresult (*)(CUdevice*, int);
using cuDeviceGetCount_fn = CUresult (*)(int*);
using cuDeviceGetName_fn = CUresult (*)(char*, int, CUdevice);
using cuDeviceGetUuid_fn = CUresult (*)(unsigned char*, CUdevice);  // CUuuid: 16 bytes
using cuDeviceGetAttribute_fn = CUresult (*)(int*, int, CUdevice);
using cuDeviceTotalMem_v2_fn = CUresult (*)(std::size_t*, CUdevice);
using cuCtxCreate_v2_fn = CUresult (*)(CUcontext*, unsigned int, CUdevice);
using cuCtxDestroy_v2_fn = CUresult (*)(CUcontext);
// CUDA 11.4's cuCtxCreate_v3 (CUexecAffinityParam*, count) and 12.5's
// cuCtxCreate_v4 (CUctxCreateParams*): the parameters are passed through
// untouched, so they are opaque here.
using cuCtxCreate_v3_fn = CUresult (*)(CUcontext*, void*, int, unsigned int, CUdevice);
using cuCtxCreate_v4_fn = CUresult (*)(CUcontext*, void*, unsigned int, CUdevice);
using cuCtxGetDevice_fn = CUresult (*)(CUdevice*);
using cuCtxGetCurrent_fn = CUresult (*)(CUcontext*);
using cuCtxSetCurrent_fn = CUresult (*)(CUcontext);
using cuCtxSynchronize_fn = CUresult (*)();
using cuDevicePrimaryCtxRetain_fn = CUresult (*)(CUcontext*, CUdevice);
using cuDevicePrimaryCtxRelease_v2_fn = CUresult (*)(CUdevice);
using cuDevicePrimaryCtxReset_v2_fn = CUresult (*)(CUdevice);
using cuMemGetInfo_v2_fn = CUresult (*)(std::size_t*, std::size_t*);
using cuMemAlloc_v2_fn = CUresult (*)(CUdeviceptr*, std::size_t);
using cuMemAllocManaged_fn = CUresult (*)(CUdeviceptr*, std::size_t, unsigned int);
using cuMemAllocPitch_v2_fn = CUresult (*)(CUdeviceptr*, std::size_t*, std::size_t, std::size_t, unsigned int);
using cuMemFree_v2_fn = CUresult (*)(CUdeviceptr);
using cuMemAllocAsync_fn = CUresult (*)(CUdeviceptr*, std::size_t, CUstream);
using cuMemAllocFromPoolAsync_fn = CUresult (*)(CUdeviceptr*, std::size_t, CUmemoryPool, CUstream);
using cuMemFreeAsync_fn = CUresult (*)(CUdeviceptr, CUstream);
using cuMemCreate_fn = CUresult (*)(CUmemGenericAllocationHandle*, std::size_t, const CUmemAllocationProp*,
                                    unsigned long long);
using cuMemRelease_fn = CUresult (*)(CUmemGenericAllocationHandle);
using cuArrayCreate_v2_fn = CUresult (*)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*);
using cuArray3DCreate_v2_fn = CUresult (*)(CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*);
using cuArrayDestroy_fn = CUresult (*)(CUarray);
using cuMipmappedArrayCreate_fn = CUresult (*)(CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned int);
using cuMipmappedArrayDestroy_fn = CUresult (*)(CUmipmappedArray);
using cuMemcpyHtoD_v2_fn = CUresult (*)(CUdeviceptr, const void*, std::size_t);
using cuMemcpyDtoH_v2_fn = CUresult (*)(void*, CUdeviceptr, std::size_t);
using cuModuleLoad_fn = CUresult (*)(CUmodule*, const char*);
using cuModuleLoadData_fn = CUresult (*)(CUmodule*, const void*);
using cuModuleLoadDataEx_fn = CUresult (*)(CUmodule*, const void*, unsigned int, void*, void**);  // CUjit_option*
using cuModuleLoadFatBinary_fn = CUresult (*)(CUmodule*, const void*);
// CUDA 12.0's context-independent loading: (library, code or file name,
// jit options, their values, count, library options, their values, count).
using cuLibraryLoadData_fn = CUresult (*)(CUlibrary*, const void*, void*, void**, unsigned int, void*, void**,
                                          unsigned int);
using cuLibraryLoadFromFile_fn = CUresult (*)(CUlibrary*, const char*, void*, void**, unsigned int, void*, void**,
                                              unsigned int);
using cuLibraryUnload_fn = CUresult (*)(CUlibrary);
using cuModuleGetFunction_fn = CUresult (*)(CUfunction*, CUmodule, const char*);
using cuModuleUnload_fn = CUresult (*)(CUmodule);
using cuStreamCreate_fn = CUresult (*)(CUstream*, unsigned int);
using cuStreamCreateWithPriority_fn = CUresult (*)(CUstream*, unsigned int, int);
using cuStreamDestroy_v2_fn = CUresult (*)(CUstream);
using cuStreamSynchronize_fn = CUresult (*)(CUstream);
using cuEventCreate_fn = CUresult (*)(CUevent*, unsigned int);
using cuEventDestroy_v2_fn = CUresult (*)(CUevent);
using cuEventRecord_fn = CUresult (*)(CUevent, CUstream);
using cuEventQuery_fn = CUresult (*)(CUevent);
using cuEventSynchronize_fn = CUresult (*)(CUevent);
using cuEventElapsedTime_fn = CUresult (*)(float*, CUevent, CUevent);
using cuLaunchKernel_fn = CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                                       unsigned int, unsigned int, unsigned int, CUstream, void**, void**);
using cuLaunchKernelEx_fn = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using cuLaunchCooperativeKernel_fn = CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int,
                                                  unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
                                                  void**);
using cuGraphLaunch_fn = CUresult (*)(CUgraphExec, CUstream);
using cuStreamIsCapturing_fn = CUresult (*)(CUstream, int*);  // CUstreamCaptureStatus*
using cuThreadExchangeStreamCaptureMode_fn = CUresult (*)(int*);  // CUstreamCaptureMode*
using cuGetProcAddress_fn = CUresult (*)(const char*, void**, int, cuuint64_t);
using cuGetProcAddress_v2_fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using cuGetErrorName_fn = CUresult (*)(CUresult, const char**);

// Earlier versions with the same arguments as their successors.
using cuCtxCreate_fn = cuCtxCreate_v2_fn;
using cuCtxDestroy_fn = cuCtxDestroy_v2_fn;
using cuStreamDestroy_fn = cuStreamDestroy_v2_fn;
using cuDevicePrimaryCtxRelease_fn = cuDevicePrimaryCtxRelease_v2_fn;
using cuDevicePrimaryCtxReset_fn = cuDevicePrimaryCtxReset_v2_fn;

// The per-thread-default-stream variants take the same arguments.
using cuMemAllocAsync_ptsz_fn = cuMemAllocAsync_fn;
using cuMemAllocFromPoolAsync_ptsz_fn = cuMemAllocFromPoolAsync_fn;
using cuMemFreeAsync_ptsz_fn = cuMemFreeAsync_fn;
using cuEventRecord_ptsz_fn = cuEventRecord_fn;
using cuLaunchKernel_ptsz_fn = cuLaunchKernel_fn;
using cuLaunchKernelEx_ptsz_fn = cuLaunchKernelEx_fn;
using cuLaunchCooperativeKernel_ptsz_fn = cuLaunchCooperativeKernel_fn;
using cuGraphLaunch_ptsz_fn = cuGraphLaunch_fn;
using cuStreamIsCapturing_ptsz_fn = cuStreamIsCapturing_fn;

}  // extern "C"
