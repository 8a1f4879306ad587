#include "worker/rgpu/server/session.h"

#include <cstring>

namespace gpool::rgpu {

namespace {

// A call whose driver entry point is missing answers this, as the client
// library does for calls it does not cover.
#define GPOOL_RGPU_NEED(fn) \
  if (d_.fn == nullptr) return CUDA_ERROR_NOT_SUPPORTED

constexpr std::uint64_t kStreamLegacy = 1;
constexpr std::uint64_t kStreamPerThread = 2;

}  // namespace

CUresult Session::MakeCurrent(std::uint64_t context) {
  if (current_known_ && context == current_) return CUDA_SUCCESS;
  CUcontext ctx = nullptr;
  if (context != 0) {
    auto it = contexts_.find(context);
    if (it == contexts_.end()) return CUDA_ERROR_INVALID_CONTEXT;
    ctx = it->second.ctx;
  }
  GPOOL_RGPU_NEED(cuCtxSetCurrent);
  const CUresult r = d_.cuCtxSetCurrent(ctx);
  if (r != CUDA_SUCCESS) return r;
  current_ = context;
  current_known_ = true;
  return CUDA_SUCCESS;
}

void Session::Forget(std::uint64_t context) {
  // What lived in the context died with it (destroyed, or a primary context reset).
  std::erase_if(allocations_, [&](const auto& a) { return a.second.context == context; });
  std::erase_if(modules_, [&](const auto& m) { return m.second.context == context; });
  std::erase_if(functions_, [&](const auto& f) { return !modules_.contains(f.second.module); });
  std::erase_if(streams_, [&](const auto& s) { return s.second.context == context; });
  std::erase_if(events_, [&](const auto& e) { return e.second.context == context; });
  if (current_ == context) current_known_ = false;
}

bool Session::Owns(CUdeviceptr p, std::uint64_t bytes) const {
  auto it = allocations_.upper_bound(p);
  if (it == allocations_.begin()) return false;
  --it;
  const std::uint64_t offset = p - it->first;
  return offset <= it->second.bytes && bytes <= it->second.bytes - offset;
}

CUresult Session::StreamOf(std::uint64_t handle, CUstream* stream) const {
  if (handle == 0 || handle == kStreamLegacy || handle == kStreamPerThread) {
    *stream = reinterpret_cast<CUstream>(handle);  // the driver's own special values
    return CUDA_SUCCESS;
  }
  auto it = streams_.find(handle);
  if (it == streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
  *stream = it->second.ptr;
  return CUDA_SUCCESS;
}

CUresult Session::Execute(Op op, std::uint64_t context, Reader& args, const std::vector<DataFrame>& data, Writer& out,
                          const BulkSink& bulk) {
  // Calls that need no context: the device queries and context management.
  switch (op) {
    case Op::kInit: GPOOL_RGPU_NEED(cuInit); return d_.cuInit(args.U32());
    case Op::kDriverGetVersion: {
      GPOOL_RGPU_NEED(cuDriverGetVersion);
      int v = 0;
      const CUresult r = d_.cuDriverGetVersion(&v);
      out.I32(v);
      return r;
    }
    case Op::kDeviceGetCount: {
      GPOOL_RGPU_NEED(cuDeviceGetCount);
      int n = 0;
      const CUresult r = d_.cuDeviceGetCount(&n);
      out.I32(n);
      return r;
    }
    case Op::kDeviceGet: {
      GPOOL_RGPU_NEED(cuDeviceGet);
      CUdevice dev = 0;
      const CUresult r = d_.cuDeviceGet(&dev, args.I32());
      out.I32(dev);
      return r;
    }
    case Op::kDeviceGetName: {
      GPOOL_RGPU_NEED(cuDeviceGetName);
      const std::uint32_t len = args.U32();
      const CUdevice dev = args.I32();
      if (len == 0 || len > 4096) return CUDA_ERROR_INVALID_VALUE;
      std::string name(len, '\0');
      const CUresult r = d_.cuDeviceGetName(name.data(), static_cast<int>(len), dev);
      name.resize(std::strlen(name.c_str()));
      out.Bytes(name);
      return r;
    }
    case Op::kDeviceGetUuid: {
      GPOOL_RGPU_NEED(cuDeviceGetUuid);
      unsigned char uuid[16] = {};
      const CUresult r = d_.cuDeviceGetUuid(uuid, args.I32());
      out.Bytes(std::string_view(reinterpret_cast<const char*>(uuid), 16));
      return r;
    }
    case Op::kDeviceGetAttribute: {
      GPOOL_RGPU_NEED(cuDeviceGetAttribute);
      const int attribute = args.I32();
      int v = 0;
      const CUresult r = d_.cuDeviceGetAttribute(&v, attribute, args.I32());
      out.I32(v);
      return r;
    }
    case Op::kDeviceTotalMem: {
      GPOOL_RGPU_NEED(cuDeviceTotalMem_v2);
      std::size_t bytes = 0;
      const CUresult r = d_.cuDeviceTotalMem_v2(&bytes, args.I32());
      out.U64(bytes);
      return r;
    }
    case Op::kPrimaryCtxRetain:
    case Op::kPrimaryCtxRelease:
    case Op::kPrimaryCtxReset:
    case Op::kPrimaryCtxSetFlags:
    case Op::kPrimaryCtxGetState:
    case Op::kCtxCreate:
    case Op::kCtxDestroy: return ContextOps(op, args, out);
    default: break;
  }
  if (const CUresult r = MakeCurrent(context); r != CUDA_SUCCESS) return r;
  switch (op) {
    case Op::kCtxGetDevice: {
      GPOOL_RGPU_NEED(cuCtxGetDevice);
      CUdevice dev = 0;
      const CUresult r = d_.cuCtxGetDevice(&dev);
      out.I32(dev);
      return r;
    }
    case Op::kCtxSynchronize: GPOOL_RGPU_NEED(cuCtxSynchronize); return d_.cuCtxSynchronize();
    case Op::kModuleLoad:
    case Op::kModuleUnload:
    case Op::kModuleGetFunction: return ModuleOps(op, context, args, data, out);
    case Op::kLaunchKernel: return Launch(args);
    case Op::kStreamCreate:
    case Op::kStreamDestroy:
    case Op::kStreamSynchronize:
    case Op::kStreamQuery:
    case Op::kEventCreate:
    case Op::kEventDestroy:
    case Op::kEventRecord:
    case Op::kEventQuery:
    case Op::kEventSynchronize:
    case Op::kEventElapsedTime: return StreamOps(op, context, args, out);
    default: return MemoryOps(op, context, args, data, out, bulk);
  }
}

CUresult Session::ContextOps(Op op, Reader& args, Writer& out) {
  switch (op) {
    case Op::kPrimaryCtxRetain: {
      GPOOL_RGPU_NEED(cuDevicePrimaryCtxRetain);
      const CUdevice dev = args.I32();
      CUcontext ctx = nullptr;
      const CUresult r = d_.cuDevicePrimaryCtxRetain(&ctx, dev);
      if (r != CUDA_SUCCESS) return r;
      ++primary_retains_[dev];
      auto [it, fresh] = primary_handles_.try_emplace(dev, 0);
      if (fresh) it->second = NewHandle();
      // The same handle for the device's primary context always; the
      // driver's pointer may change after a reset.
      contexts_[it->second] = {ctx, dev, true};
      if (current_ == it->second) current_known_ = false;
      out.U64(it->second);
      return r;
    }
    case Op::kPrimaryCtxRelease: {
      GPOOL_RGPU_NEED(cuDevicePrimaryCtxRelease_v2);
      const CUdevice dev = args.I32();
      // Only the client's own retains: releasing more would take the
      // primary context from under another user of it on this server.
      if (primary_retains_[dev] <= 0) return CUDA_ERROR_INVALID_CONTEXT;
      const CUresult r = d_.cuDevicePrimaryCtxRelease_v2(dev);
      if (r == CUDA_SUCCESS) --primary_retains_[dev];
      return r;
    }
    case Op::kPrimaryCtxReset: {
      GPOOL_RGPU_NEED(cuDevicePrimaryCtxReset_v2);
      const CUdevice dev = args.I32();
      const CUresult r = d_.cuDevicePrimaryCtxReset_v2(dev);
      auto primary = primary_handles_.find(dev);
      if (r == CUDA_SUCCESS && primary != primary_handles_.end()) Forget(primary->second);
      return r;
    }
    case Op::kPrimaryCtxSetFlags: {
      GPOOL_RGPU_NEED(cuDevicePrimaryCtxSetFlags_v2);
      const CUdevice dev = args.I32();
      return d_.cuDevicePrimaryCtxSetFlags_v2(dev, args.U32());
    }
    case Op::kPrimaryCtxGetState: {
      GPOOL_RGPU_NEED(cuDevicePrimaryCtxGetState);
      unsigned flags = 0;
      int active = 0;
      const CUresult r = d_.cuDevicePrimaryCtxGetState(args.I32(), &flags, &active);
      out.U32(flags);
      out.I32(active);
      return r;
    }
    case Op::kCtxCreate: {
      GPOOL_RGPU_NEED(cuCtxCreate_v2);
      const unsigned flags = args.U32();
      const CUdevice dev = args.I32();
      CUcontext ctx = nullptr;
      const CUresult r = d_.cuCtxCreate_v2(&ctx, flags, dev);
      if (r != CUDA_SUCCESS) return r;
      const std::uint64_t handle = NewHandle();
      contexts_[handle] = {ctx, dev, false};
      current_ = handle;  // cuCtxCreate makes it current
      current_known_ = true;
      out.U64(handle);
      return r;
    }
    case Op::kCtxDestroy: {
      GPOOL_RGPU_NEED(cuCtxDestroy_v2);
      auto it = contexts_.find(args.U64());
      if (it == contexts_.end() || it->second.primary) return CUDA_ERROR_INVALID_CONTEXT;
      const CUresult r = d_.cuCtxDestroy_v2(it->second.ctx);
      if (r != CUDA_SUCCESS) return r;
      const std::uint64_t handle = it->first;
      contexts_.erase(it);
      Forget(handle);
      return r;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Session::MemoryOps(Op op, std::uint64_t context, Reader& args, const std::vector<DataFrame>& data, Writer& out,
                            const BulkSink& bulk) {
  switch (op) {
    case Op::kMemAlloc:
    case Op::kMemAllocManaged: {
      const std::uint64_t bytes = args.U64();
      const unsigned flags = args.U32();
      CUdeviceptr p = 0;
      CUresult r = CUDA_ERROR_NOT_SUPPORTED;
      if (op == Op::kMemAlloc && d_.cuMemAlloc_v2 != nullptr) r = d_.cuMemAlloc_v2(&p, bytes);
      if (op == Op::kMemAllocManaged && d_.cuMemAllocManaged != nullptr) r = d_.cuMemAllocManaged(&p, bytes, flags);
      if (r == CUDA_SUCCESS) allocations_[p] = {bytes, context};
      out.U64(p);
      return r;
    }
    case Op::kMemAllocPitch: {
      GPOOL_RGPU_NEED(cuMemAllocPitch_v2);
      const std::uint64_t width = args.U64();
      const std::uint64_t height = args.U64();
      const unsigned element = args.U32();
      CUdeviceptr p = 0;
      std::size_t pitch = 0;
      const CUresult r = d_.cuMemAllocPitch_v2(&p, &pitch, width, height, element);
      if (r == CUDA_SUCCESS) allocations_[p] = {pitch * height, context};
      out.U64(p);
      out.U64(pitch);
      return r;
    }
    case Op::kMemFree: {
      GPOOL_RGPU_NEED(cuMemFree_v2);
      const CUdeviceptr p = args.U64();
      // Only the session's own allocations: a guessed pointer of another
      // tenant's must not be freed through this server.
      if (!allocations_.contains(p)) return CUDA_ERROR_INVALID_VALUE;
      const CUresult r = d_.cuMemFree_v2(p);
      if (r == CUDA_SUCCESS) allocations_.erase(p);
      return r;
    }
    case Op::kMemGetInfo: {
      GPOOL_RGPU_NEED(cuMemGetInfo_v2);
      std::size_t free = 0, total = 0;
      const CUresult r = d_.cuMemGetInfo_v2(&free, &total);
      out.U64(free);
      out.U64(total);
      return r;
    }
    case Op::kMemcpyHtoD: {
      CUdeviceptr dst = args.U64();
      const std::uint64_t stream_handle = args.U64();
      const bool async = args.U8() != 0;
      CUstream stream = nullptr;
      if (const CUresult r = StreamOf(stream_handle, &stream); r != CUDA_SUCCESS) return r;
      GPOOL_RGPU_NEED(cuMemcpyHtoD_v2);
      std::uint64_t total = 0;
      for (const DataFrame& f : data) total += f.size;
      if (!Owns(dst, total)) return CUDA_ERROR_INVALID_VALUE;
      for (const DataFrame& f : data) {
        // The frame is freed when the request is done: an asynchronous
        // copy from it must have finished by then, so the server copies
        // synchronously and the client still sees it as queued work.
        (void)async;
        const CUresult r = d_.cuMemcpyHtoD_v2(dst, f.data, f.size);
        if (r != CUDA_SUCCESS) return r;
        dst += f.size;
      }
      return CUDA_SUCCESS;
    }
    case Op::kMemcpyDtoH: {
      GPOOL_RGPU_NEED(cuMemcpyDtoH_v2);
      CUdeviceptr src = args.U64();
      std::uint64_t bytes = args.U64();
      if (!args.ok() || bytes > kMaxCopyPerRequest || !Owns(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
      while (bytes > 0) {
        const std::size_t n = bytes < kChunkBytes ? bytes : kChunkBytes;
        zmq::message_t chunk = chunks_.Take(n);
        const CUresult r = d_.cuMemcpyDtoH_v2(chunk.data(), src, n);
        if (r != CUDA_SUCCESS) return r;
        bulk(chunk);
        src += n;
        bytes -= n;
      }
      return CUDA_SUCCESS;
    }
    case Op::kMemcpyDtoD: {
      const CUdeviceptr dst = args.U64();
      const CUdeviceptr src = args.U64();
      const std::uint64_t bytes = args.U64();
      const std::uint64_t stream_handle = args.U64();
      const bool async = args.U8() != 0;
      if (!args.ok() || !Owns(dst, bytes) || !Owns(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
      if (!async) {
        GPOOL_RGPU_NEED(cuMemcpyDtoD_v2);
        return d_.cuMemcpyDtoD_v2(dst, src, bytes);
      }
      CUstream stream = nullptr;
      if (const CUresult r = StreamOf(stream_handle, &stream); r != CUDA_SUCCESS) return r;
      GPOOL_RGPU_NEED(cuMemcpyDtoDAsync_v2);
      return d_.cuMemcpyDtoDAsync_v2(dst, src, bytes, stream);
    }
    case Op::kMemset: {
      const CUdeviceptr dst = args.U64();
      const std::uint32_t value = args.U32();
      const std::uint8_t element = args.U8();
      const std::uint64_t count = args.U64();
      const std::uint64_t stream_handle = args.U64();
      const bool async = args.U8() != 0;
      if (!args.ok() || (element != 1 && element != 4) || count > UINT64_MAX / element || !Owns(dst, count * element)) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      CUstream stream = nullptr;
      if (const CUresult r = StreamOf(stream_handle, &stream); r != CUDA_SUCCESS) return r;
      if (element == 1 && !async) {
        GPOOL_RGPU_NEED(cuMemsetD8_v2);
        return d_.cuMemsetD8_v2(dst, static_cast<unsigned char>(value), count);
      }
      if (element == 1) {
        GPOOL_RGPU_NEED(cuMemsetD8Async);
        return d_.cuMemsetD8Async(dst, static_cast<unsigned char>(value), count, stream);
      }
      if (!async) {
        GPOOL_RGPU_NEED(cuMemsetD32_v2);
        return d_.cuMemsetD32_v2(dst, value, count);
      }
      GPOOL_RGPU_NEED(cuMemsetD32Async);
      return d_.cuMemsetD32Async(dst, value, count, stream);
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Session::ModuleOps(Op op, std::uint64_t context, Reader& args, const std::vector<DataFrame>& data,
                            Writer& out) {
  switch (op) {
    case Op::kModuleLoad: {
      const std::uint8_t kind = args.U8();
      std::size_t size = 0;
      for (const DataFrame& f : data) size += f.size;
      if (size == 0 || size > kMaxModuleBytes) return CUDA_ERROR_INVALID_VALUE;
      // One contiguous, NUL-terminated image (PTX is text the driver reads
      // up to its NUL).
      std::string image;
      image.reserve(size + 1);
      for (const DataFrame& f : data) image.append(static_cast<const char*>(f.data), f.size);
      image.push_back('\0');
      CUmodule module = nullptr;
      CUresult r = CUDA_ERROR_NOT_SUPPORTED;
      if (kind == kModuleData && d_.cuModuleLoadData != nullptr) r = d_.cuModuleLoadData(&module, image.data());
      if (kind == kModuleFatBinary && d_.cuModuleLoadFatBinary != nullptr) {
        r = d_.cuModuleLoadFatBinary(&module, image.data());
      }
      if (kind != kModuleData && kind != kModuleFatBinary) r = CUDA_ERROR_INVALID_VALUE;
      if (r != CUDA_SUCCESS) return r;
      const std::uint64_t handle = NewHandle();
      modules_[handle] = {module, context};
      out.U64(handle);
      return r;
    }
    case Op::kModuleUnload: {
      GPOOL_RGPU_NEED(cuModuleUnload);
      auto it = modules_.find(args.U64());
      if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
      const CUresult r = d_.cuModuleUnload(it->second.ptr);
      if (r != CUDA_SUCCESS) return r;
      const std::uint64_t handle = it->first;
      modules_.erase(it);
      std::erase_if(functions_, [&](const auto& f) { return f.second.module == handle; });
      return r;
    }
    case Op::kModuleGetFunction: {
      GPOOL_RGPU_NEED(cuModuleGetFunction);
      const std::uint64_t module_handle = args.U64();
      const std::string name(args.Bytes());
      if (!args.ok() || name.empty()) return CUDA_ERROR_INVALID_VALUE;
      auto it = modules_.find(module_handle);
      if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
      CUfunction fn = nullptr;
      CUresult r = d_.cuModuleGetFunction(&fn, it->second.ptr, name.c_str());
      if (r != CUDA_SUCCESS) return r;
      // The client packs kernel arguments from this layout; without it a
      // launch cannot be forwarded.
      GPOOL_RGPU_NEED(cuFuncGetParamInfo);
      Function f{fn, module_handle, {}, 0};
      for (std::size_t i = 0; i < kMaxKernelParams; ++i) {
        std::size_t offset = 0, size = 0;
        if (d_.cuFuncGetParamInfo(fn, i, &offset, &size) != CUDA_SUCCESS) break;
        f.params.emplace_back(static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(size));
        f.param_bytes = std::max<std::uint32_t>(f.param_bytes, static_cast<std::uint32_t>(offset + size));
      }
      if (f.param_bytes > kMaxKernelParamBytes) return CUDA_ERROR_NOT_SUPPORTED;
      const std::uint64_t handle = NewHandle();
      out.U64(handle);
      out.U32(static_cast<std::uint32_t>(f.params.size()));
      for (const auto& [offset, size] : f.params) {
        out.U32(offset);
        out.U32(size);
      }
      functions_[handle] = std::move(f);
      return r;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Session::Launch(Reader& args) {
  GPOOL_RGPU_NEED(cuLaunchKernel);
  const std::uint64_t fn_handle = args.U64();
  unsigned dims[7];
  for (unsigned& v : dims) v = args.U32();
  const std::uint64_t stream_handle = args.U64();
  const std::string_view params = args.Bytes();
  if (!args.ok()) return CUDA_ERROR_INVALID_VALUE;
  auto it = functions_.find(fn_handle);
  if (it == functions_.end()) return CUDA_ERROR_INVALID_HANDLE;
  const Function& f = it->second;
  if (params.size() != f.param_bytes) return CUDA_ERROR_INVALID_VALUE;
  CUstream stream = nullptr;
  if (const CUresult r = StreamOf(stream_handle, &stream); r != CUDA_SUCCESS) return r;
  // The driver copies the arguments at launch, so pointers into the
  // request's frame are enough.
  std::string copy(params);  // aligned storage for the fields
  std::vector<void*> pointers;
  pointers.reserve(f.params.size());
  for (const auto& [offset, size] : f.params) pointers.push_back(copy.data() + offset);
  return d_.cuLaunchKernel(f.fn, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], stream, pointers.data(),
                           nullptr);
}

CUresult Session::StreamOps(Op op, std::uint64_t context, Reader& args, Writer& out) {
  switch (op) {
    case Op::kStreamCreate: {
      GPOOL_RGPU_NEED(cuStreamCreate);
      CUstream s = nullptr;
      const CUresult r = d_.cuStreamCreate(&s, args.U32());
      if (r != CUDA_SUCCESS) return r;
      const std::uint64_t handle = NewHandle();
      streams_[handle] = {s, context};
      out.U64(handle);
      return r;
    }
    case Op::kStreamDestroy: {
      GPOOL_RGPU_NEED(cuStreamDestroy_v2);
      auto it = streams_.find(args.U64());
      if (it == streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
      const CUresult r = d_.cuStreamDestroy_v2(it->second.ptr);
      if (r == CUDA_SUCCESS) streams_.erase(it);
      return r;
    }
    case Op::kStreamSynchronize:
    case Op::kStreamQuery: {
      CUstream s = nullptr;
      if (const CUresult r = StreamOf(args.U64(), &s); r != CUDA_SUCCESS) return r;
      if (op == Op::kStreamQuery) {
        GPOOL_RGPU_NEED(cuStreamQuery);
        return d_.cuStreamQuery(s);
      }
      GPOOL_RGPU_NEED(cuStreamSynchronize);
      return d_.cuStreamSynchronize(s);
    }
    case Op::kEventCreate: {
      GPOOL_RGPU_NEED(cuEventCreate);
      CUevent e = nullptr;
      const CUresult r = d_.cuEventCreate(&e, args.U32());
      if (r != CUDA_SUCCESS) return r;
      const std::uint64_t handle = NewHandle();
      events_[handle] = {e, context};
      out.U64(handle);
      return r;
    }
    default: break;
  }
  auto event = events_.find(args.U64());
  if (event == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  switch (op) {
    case Op::kEventDestroy: {
      GPOOL_RGPU_NEED(cuEventDestroy_v2);
      const CUresult r = d_.cuEventDestroy_v2(event->second.ptr);
      if (r == CUDA_SUCCESS) events_.erase(event);
      return r;
    }
    case Op::kEventRecord: {
      GPOOL_RGPU_NEED(cuEventRecord);
      CUstream s = nullptr;
      if (const CUresult r = StreamOf(args.U64(), &s); r != CUDA_SUCCESS) return r;
      return d_.cuEventRecord(event->second.ptr, s);
    }
    case Op::kEventQuery: GPOOL_RGPU_NEED(cuEventQuery); return d_.cuEventQuery(event->second.ptr);
    case Op::kEventSynchronize: GPOOL_RGPU_NEED(cuEventSynchronize); return d_.cuEventSynchronize(event->second.ptr);
    case Op::kEventElapsedTime: {
      GPOOL_RGPU_NEED(cuEventElapsedTime);
      auto end = events_.find(args.U64());
      if (end == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
      float ms = 0;
      const CUresult r = d_.cuEventElapsedTime(&ms, event->second.ptr, end->second.ptr);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &ms, 4);
      out.U32(bits);
      return r;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

ReleaseCounts Session::Release() {
  ReleaseCounts n;
  // Each object is destroyed with the context it was made in current (a
  // driver wants that for modules and streams).
  auto in = [&](std::uint64_t context) {
    current_known_ = false;
    (void)MakeCurrent(context);
  };
  for (auto& [h, e] : events_) {
    in(e.context);
    if (d_.cuEventDestroy_v2 != nullptr) d_.cuEventDestroy_v2(e.ptr);
    ++n.events;
  }
  for (auto& [h, s] : streams_) {
    in(s.context);
    if (d_.cuStreamDestroy_v2 != nullptr) d_.cuStreamDestroy_v2(s.ptr);
    ++n.streams;
  }
  for (auto& [h, m] : modules_) {
    in(m.context);
    if (d_.cuModuleUnload != nullptr) d_.cuModuleUnload(m.ptr);
    ++n.modules;
  }
  for (auto& [p, a] : allocations_) {
    in(a.context);
    if (d_.cuMemFree_v2 != nullptr) d_.cuMemFree_v2(p);
    ++n.allocations;
  }
  if (d_.cuCtxSetCurrent != nullptr) d_.cuCtxSetCurrent(nullptr);
  for (auto& [h, c] : contexts_) {
    if (c.primary || d_.cuCtxDestroy_v2 == nullptr) continue;
    d_.cuCtxDestroy_v2(c.ctx);
    ++n.contexts;
  }
  for (auto& [dev, retains] : primary_retains_) {
    for (; retains > 0 && d_.cuDevicePrimaryCtxRelease_v2 != nullptr; --retains) {
      d_.cuDevicePrimaryCtxRelease_v2(dev);
      ++n.primary_retains;
    }
  }
  events_.clear();
  streams_.clear();
  modules_.clear();
  functions_.clear();
  allocations_.clear();
  contexts_.clear();
  primary_handles_.clear();
  primary_retains_.clear();
  current_ = 0;
  current_known_ = false;
  return n;
}

}  // namespace gpool::rgpu
