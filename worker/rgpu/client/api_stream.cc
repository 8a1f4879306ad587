// The remote driver API: streams and events. Recording an event is queued
// (it is stream-ordered work); everything that waits or answers is a
// synchronous call, which also carries the queued work before it.
#include <cstring>

#include "worker/rgpu/client/api.h"

using gpool::rgpu::AsHandle;
using gpool::rgpu::H;
using gpool::rgpu::Op;
using gpool::rgpu::Reader;
using gpool::rgpu::Reply;
using gpool::rgpu::Sync;
using gpool::rgpu::Writer;

namespace {

CUresult Create(Op op, unsigned flags, std::uint64_t* handle) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U32(flags);
  Reply reply;
  const CUresult r = Sync(op, w, &reply);
  if (r == CUDA_SUCCESS) *handle = Reader(reply.out.data(), reply.out.size()).U64();
  return r;
}

CUresult OnHandle(Op op, std::uint64_t handle) {
  Writer w;
  w.U64(handle);
  return Sync(op, w);
}

}  // namespace

GPOOL_RGPU_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  std::uint64_t handle = 0;
  const CUresult r = Create(Op::kStreamCreate, flags, stream == nullptr ? nullptr : &handle);
  if (r == CUDA_SUCCESS) *stream = AsHandle<CUstream>(handle);
  return r;
}
GPOOL_RGPU_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) { return OnHandle(Op::kStreamDestroy, H(stream)); }
GPOOL_RGPU_EXPORT CUresult cuStreamSynchronize(CUstream stream) { return OnHandle(Op::kStreamSynchronize, H(stream)); }
GPOOL_RGPU_EXPORT CUresult cuStreamQuery(CUstream stream) { return OnHandle(Op::kStreamQuery, H(stream)); }

GPOOL_RGPU_EXPORT CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  std::uint64_t handle = 0;
  const CUresult r = Create(Op::kEventCreate, flags, event == nullptr ? nullptr : &handle);
  if (r == CUDA_SUCCESS) *event = AsHandle<CUevent>(handle);
  return r;
}
GPOOL_RGPU_EXPORT CUresult cuEventDestroy_v2(CUevent event) { return OnHandle(Op::kEventDestroy, H(event)); }
GPOOL_RGPU_EXPORT CUresult cuEventQuery(CUevent event) { return OnHandle(Op::kEventQuery, H(event)); }
GPOOL_RGPU_EXPORT CUresult cuEventSynchronize(CUevent event) { return OnHandle(Op::kEventSynchronize, H(event)); }

GPOOL_RGPU_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Writer w;
  w.U64(H(event));
  w.U64(H(stream));
  return gpool::rgpu::Connection::Get().Enqueue(Op::kEventRecord, gpool::rgpu::CurrentContext(), w);
}
GPOOL_RGPU_EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
  return cuEventRecord(event, stream == nullptr ? AsHandle<CUstream>(2) : stream);
}

GPOOL_RGPU_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U64(H(start));
  w.U64(H(end));
  Reply reply;
  const CUresult r = Sync(Op::kEventElapsedTime, w, &reply);
  if (r != CUDA_SUCCESS) return r;
  const std::uint32_t bits = Reader(reply.out.data(), reply.out.size()).U32();
  std::memcpy(ms, &bits, 4);
  return r;
}
