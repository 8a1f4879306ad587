// The remote driver API: initialisation, device queries and contexts.
#include <cstring>
#include <string>
#include <vector>

#include "worker/rgpu/client/api.h"

namespace gpool::rgpu {

namespace {
thread_local std::vector<std::uint64_t> t_contexts;
}  // namespace

std::uint64_t CurrentContext() { return t_contexts.empty() ? 0 : t_contexts.back(); }
void SetCurrentContext(std::uint64_t handle) {
  if (t_contexts.empty()) {
    t_contexts.push_back(handle);
  } else {
    t_contexts.back() = handle;
  }
}
void PushContext(std::uint64_t handle) { t_contexts.push_back(handle); }
std::uint64_t PopContext() {
  if (t_contexts.empty()) return 0;
  const std::uint64_t top = t_contexts.back();
  t_contexts.pop_back();
  return top;
}

}  // namespace gpool::rgpu

using gpool::rgpu::AsHandle;
using gpool::rgpu::H;
using gpool::rgpu::Op;
using gpool::rgpu::Reader;
using gpool::rgpu::Reply;
using gpool::rgpu::Sync;
using gpool::rgpu::Writer;

namespace {

// A call with one device argument whose reply is one i32.
CUresult DeviceInt(Op op, int device, int* out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.I32(device);
  Reply reply;
  const CUresult r = Sync(op, w, &reply);
  if (r == CUDA_SUCCESS) *out = Reader(reply.out.data(), reply.out.size()).I32();
  return r;
}

CUresult Uuid(unsigned char* uuid, CUdevice device) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.I32(device);
  Reply reply;
  const CUresult r = Sync(Op::kDeviceGetUuid, w, &reply);
  if (r != CUDA_SUCCESS) return r;
  Reader in(reply.out.data(), reply.out.size());
  const std::string_view bytes = in.Bytes();
  if (bytes.size() != 16) return CUDA_ERROR_UNKNOWN;
  std::memcpy(uuid, bytes.data(), 16);
  return r;
}

}  // namespace

GPOOL_RGPU_EXPORT CUresult cuInit(unsigned int flags) {
  Writer w;
  w.U32(flags);
  return Sync(Op::kInit, w);
}

GPOOL_RGPU_EXPORT CUresult cuDriverGetVersion(int* version) { return DeviceInt(Op::kDriverGetVersion, 0, version); }

GPOOL_RGPU_EXPORT CUresult cuDeviceGetCount(int* count) { return DeviceInt(Op::kDeviceGetCount, 0, count); }

GPOOL_RGPU_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  return DeviceInt(Op::kDeviceGet, ordinal, device);
}

GPOOL_RGPU_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U32(static_cast<std::uint32_t>(len));
  w.I32(device);
  Reply reply;
  const CUresult r = Sync(Op::kDeviceGetName, w, &reply);
  if (r != CUDA_SUCCESS) return r;
  Reader in(reply.out.data(), reply.out.size());
  const std::string_view text = in.Bytes();
  const std::size_t n = std::min<std::size_t>(text.size(), static_cast<std::size_t>(len) - 1);
  std::memcpy(name, text.data(), n);
  name[n] = '\0';
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuDeviceGetUuid(unsigned char* uuid, CUdevice device) { return Uuid(uuid, device); }
GPOOL_RGPU_EXPORT CUresult cuDeviceGetUuid_v2(unsigned char* uuid, CUdevice device) { return Uuid(uuid, device); }

GPOOL_RGPU_EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.I32(attribute);
  w.I32(device);
  Reply reply;
  const CUresult r = Sync(Op::kDeviceGetAttribute, w, &reply);
  if (r == CUDA_SUCCESS) *value = Reader(reply.out.data(), reply.out.size()).I32();
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice device) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.I32(device);
  Reply reply;
  const CUresult r = Sync(Op::kDeviceTotalMem, w, &reply);
  if (r == CUDA_SUCCESS) *bytes = Reader(reply.out.data(), reply.out.size()).U64();
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.I32(device);
  Reply reply;
  const CUresult r = Sync(Op::kPrimaryCtxRetain, w, &reply);
  if (r == CUDA_SUCCESS) *ctx = AsHandle<CUcontext>(Reader(reply.out.data(), reply.out.size()).U64());
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  Writer w;
  w.I32(device);
  return Sync(Op::kPrimaryCtxRelease, w);
}
GPOOL_RGPU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) { return cuDevicePrimaryCtxRelease_v2(device); }

GPOOL_RGPU_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice device) {
  Writer w;
  w.I32(device);
  return Sync(Op::kPrimaryCtxReset, w);
}
GPOOL_RGPU_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice device) { return cuDevicePrimaryCtxReset_v2(device); }

GPOOL_RGPU_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice device, unsigned int flags) {
  Writer w;
  w.I32(device);
  w.U32(flags);
  return Sync(Op::kPrimaryCtxSetFlags, w);
}
GPOOL_RGPU_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice device, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(device, flags);
}

GPOOL_RGPU_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.I32(device);
  Reply reply;
  const CUresult r = Sync(Op::kPrimaryCtxGetState, w, &reply);
  if (r != CUDA_SUCCESS) return r;
  Reader in(reply.out.data(), reply.out.size());
  *flags = in.U32();
  *active = in.I32();
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice device) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U32(flags);
  w.I32(device);
  Reply reply;
  const CUresult r = Sync(Op::kCtxCreate, w, &reply);
  if (r != CUDA_SUCCESS) return r;
  const std::uint64_t handle = Reader(reply.out.data(), reply.out.size()).U64();
  *ctx = AsHandle<CUcontext>(handle);
  gpool::rgpu::PushContext(handle);  // a new context is pushed onto the calling thread's stack
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U64(H(ctx));
  const CUresult r = Sync(Op::kCtxDestroy, w);
  if (r == CUDA_SUCCESS && gpool::rgpu::CurrentContext() == H(ctx)) gpool::rgpu::PopContext();
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  gpool::rgpu::SetCurrentContext(H(ctx));
  return CUDA_SUCCESS;
}

GPOOL_RGPU_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = AsHandle<CUcontext>(gpool::rgpu::CurrentContext());
  return CUDA_SUCCESS;
}

GPOOL_RGPU_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  gpool::rgpu::PushContext(H(ctx));
  return CUDA_SUCCESS;
}

GPOOL_RGPU_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (gpool::rgpu::CurrentContext() == 0) return CUDA_ERROR_INVALID_CONTEXT;
  const std::uint64_t top = gpool::rgpu::PopContext();
  if (ctx != nullptr) *ctx = AsHandle<CUcontext>(top);
  return CUDA_SUCCESS;
}

GPOOL_RGPU_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (gpool::rgpu::CurrentContext() == 0) return CUDA_ERROR_INVALID_CONTEXT;
  Reply reply;
  const CUresult r = Sync(Op::kCtxGetDevice, Writer(), &reply);
  if (r == CUDA_SUCCESS) *device = Reader(reply.out.data(), reply.out.size()).I32();
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuCtxSynchronize() { return Sync(Op::kCtxSynchronize, Writer()); }
