// The remote driver API: device memory, copies and memsets.
//
// Host-to-device copies of up to kQueuedCopyBytes on a stream are queued
// (the bytes copied into the queue, so the caller may reuse its buffer at
// once, as with pageable memory in CUDA); larger ones and synchronous ones
// are sent at once, without a copy, and waited for. Device-to-host copies
// always wait: the bytes must be in the caller's buffer by the next
// synchronisation anyway, and waiting is the simplest way to be sure.
#include <cstring>
#include <map>
#include <mutex>

#include "worker/rgpu/client/api.h"

namespace gpool::rgpu {

namespace {

constexpr std::size_t kQueuedCopyBytes = std::size_t{64} << 10;

std::mutex g_allocations_mu;
std::map<CUdeviceptr, std::uint64_t>& Allocations() {
  static auto* allocations = new std::map<CUdeviceptr, std::uint64_t>;
  return *allocations;
}

}  // namespace

void RememberAllocation(CUdeviceptr p, std::uint64_t bytes) {
  std::lock_guard lock(g_allocations_mu);
  Allocations()[p] = bytes;
}
void ForgetAllocation(CUdeviceptr p) {
  std::lock_guard lock(g_allocations_mu);
  Allocations().erase(p);
}
bool IsDevicePointer(CUdeviceptr p) {
  std::lock_guard lock(g_allocations_mu);
  auto it = Allocations().upper_bound(p);
  if (it == Allocations().begin()) return false;
  --it;
  return p - it->first < it->second;
}

namespace {

CUresult Alloc(Op op, CUdeviceptr* dptr, std::size_t bytes, unsigned flags) {
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U64(bytes);
  w.U32(flags);
  Reply reply;
  const CUresult r = Sync(op, w, &reply);
  if (r != CUDA_SUCCESS) return r;
  *dptr = Reader(reply.out.data(), reply.out.size()).U64();
  RememberAllocation(*dptr, bytes);
  return r;
}

CUresult HtoD(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream, bool async) {
  if (bytes == 0) return CUDA_SUCCESS;
  if (src == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (async && bytes <= kQueuedCopyBytes) {
    Writer w;
    w.U64(dst);
    w.U64(H(stream));
    w.U8(1);
    return Connection::Get().Enqueue(Op::kMemcpyHtoD, CurrentContext(), w, {{src, bytes}});
  }
  // In requests of at most kMaxCopyPerRequest, each sent without a copy.
  for (std::size_t at = 0; at < bytes; at += kMaxCopyPerRequest) {
    const std::size_t n = std::min(kMaxCopyPerRequest, bytes - at);
    Writer w;
    w.U64(dst + at);
    w.U64(H(stream));
    w.U8(0);
    Reply reply;
    const CUresult r =
        Connection::Get().Call(Op::kMemcpyHtoD, CurrentContext(), w, &reply, {{static_cast<const char*>(src) + at, n}});
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

CUresult DtoH(void* dst, CUdeviceptr src, std::size_t bytes) {
  if (bytes == 0) return CUDA_SUCCESS;
  if (dst == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t at = 0; at < bytes; at += kMaxCopyPerRequest) {
    const std::size_t n = std::min(kMaxCopyPerRequest, bytes - at);
    Writer w;
    w.U64(src + at);
    w.U64(n);
    Reply reply;
    const CUresult r =
        Connection::Get().Call(Op::kMemcpyDtoH, CurrentContext(), w, &reply, {}, static_cast<char*>(dst) + at, n);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

CUresult DtoD(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream, bool async) {
  Writer w;
  w.U64(dst);
  w.U64(src);
  w.U64(bytes);
  w.U64(H(stream));
  w.U8(async ? 1 : 0);
  if (async) return Connection::Get().Enqueue(Op::kMemcpyDtoD, CurrentContext(), w);
  return Sync(Op::kMemcpyDtoD, w);
}

CUresult Memset(CUdeviceptr dst, unsigned value, std::uint8_t element, std::size_t count, CUstream stream, bool async) {
  Writer w;
  w.U64(dst);
  w.U32(value);
  w.U8(element);
  w.U64(count);
  w.U64(H(stream));
  w.U8(async ? 1 : 0);
  if (async) return Connection::Get().Enqueue(Op::kMemset, CurrentContext(), w);
  return Sync(Op::kMemset, w);
}

}  // namespace
}  // namespace gpool::rgpu

using gpool::rgpu::Op;
using gpool::rgpu::Reader;
using gpool::rgpu::Reply;
using gpool::rgpu::Sync;
using gpool::rgpu::Writer;

GPOOL_RGPU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, std::size_t bytes) {
  return gpool::rgpu::Alloc(Op::kMemAlloc, dptr, bytes, 0);
}

GPOOL_RGPU_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, std::size_t bytes, unsigned int flags) {
  return gpool::rgpu::Alloc(Op::kMemAllocManaged, dptr, bytes, flags);
}

GPOOL_RGPU_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width,
                                              std::size_t height, unsigned int element_bytes) {
  if (dptr == nullptr || pitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U64(width);
  w.U64(height);
  w.U32(element_bytes);
  Reply reply;
  const CUresult r = Sync(Op::kMemAllocPitch, w, &reply);
  if (r != CUDA_SUCCESS) return r;
  Reader in(reply.out.data(), reply.out.size());
  *dptr = in.U64();
  *pitch = in.U64();
  gpool::rgpu::RememberAllocation(*dptr, *pitch * height);
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Writer w;
  w.U64(dptr);
  const CUresult r = Sync(Op::kMemFree, w);
  if (r == CUDA_SUCCESS) gpool::rgpu::ForgetAllocation(dptr);
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Reply reply;
  const CUresult r = Sync(Op::kMemGetInfo, Writer(), &reply);
  if (r != CUDA_SUCCESS) return r;
  Reader in(reply.out.data(), reply.out.size());
  *free = in.U64();
  *total = in.U64();
  return r;
}

GPOOL_RGPU_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, std::size_t bytes) {
  return gpool::rgpu::HtoD(dst, src, bytes, nullptr, false);
}
GPOOL_RGPU_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream) {
  return gpool::rgpu::HtoD(dst, src, bytes, stream, true);
}
GPOOL_RGPU_EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, std::size_t bytes) {
  return gpool::rgpu::DtoH(dst, src, bytes);
}
GPOOL_RGPU_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, std::size_t bytes, CUstream) {
  return gpool::rgpu::DtoH(dst, src, bytes);
}
GPOOL_RGPU_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  return gpool::rgpu::DtoD(dst, src, bytes, nullptr, false);
}
GPOOL_RGPU_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream) {
  return gpool::rgpu::DtoD(dst, src, bytes, stream, true);
}

// Unified addressing: the direction follows from which side each pointer
// is on. Host-to-host is a plain memcpy.
GPOOL_RGPU_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  const bool dst_device = gpool::rgpu::IsDevicePointer(dst);
  const bool src_device = gpool::rgpu::IsDevicePointer(src);
  if (dst_device && src_device) return gpool::rgpu::DtoD(dst, src, bytes, nullptr, false);
  if (dst_device) return gpool::rgpu::HtoD(dst, reinterpret_cast<const void*>(src), bytes, nullptr, false);
  if (src_device) return gpool::rgpu::DtoH(reinterpret_cast<void*>(dst), src, bytes);
  if (bytes > 0) std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
GPOOL_RGPU_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream) {
  const bool dst_device = gpool::rgpu::IsDevicePointer(dst);
  const bool src_device = gpool::rgpu::IsDevicePointer(src);
  if (dst_device && src_device) return gpool::rgpu::DtoD(dst, src, bytes, stream, true);
  if (dst_device) return gpool::rgpu::HtoD(dst, reinterpret_cast<const void*>(src), bytes, stream, true);
  return cuMemcpy(dst, src, bytes);
}

GPOOL_RGPU_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, std::size_t count) {
  return gpool::rgpu::Memset(dst, value, 1, count, nullptr, false);
}
GPOOL_RGPU_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, std::size_t count) {
  return gpool::rgpu::Memset(dst, value, 4, count, nullptr, false);
}
GPOOL_RGPU_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, std::size_t count, CUstream stream) {
  return gpool::rgpu::Memset(dst, value, 1, count, stream, true);
}
GPOOL_RGPU_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, std::size_t count, CUstream stream) {
  return gpool::rgpu::Memset(dst, value, 4, count, stream, true);
}
