// Shared by the client library's driver API files (api_*.cc): the export
// macro, the calling thread's context stack, and handle conversions.
//
// Contexts are per thread in CUDA, so the client keeps each thread's stack
// of context handles here and names the current one in every call it
// sends; the server makes that context current before running the call.
#pragma once

#include <cstdint>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/rgpu/client/connection.h"
#include "worker/rgpu/wire.h"

#define GPOOL_RGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpool::rgpu {

std::uint64_t CurrentContext();
void SetCurrentContext(std::uint64_t handle);  // replaces the top of the stack
void PushContext(std::uint64_t handle);
std::uint64_t PopContext();  // 0 when the stack is empty

template <typename Handle>
std::uint64_t H(Handle h) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(h));
}
template <typename Handle>
Handle AsHandle(std::uint64_t h) {
  return reinterpret_cast<Handle>(static_cast<std::uintptr_t>(h));
}

// A synchronous call in the calling thread's context.
inline CUresult Sync(Op op, const Writer& args, Reply* reply = nullptr) {
  Reply ignored;
  return Connection::Get().Call(op, CurrentContext(), args, reply != nullptr ? reply : &ignored);
}

// Device pointers the session allocated, so cuMemcpy (unified addressing)
// can tell a device address from a host one.
void RememberAllocation(CUdeviceptr p, std::uint64_t bytes);
void ForgetAllocation(CUdeviceptr p);
bool IsDevicePointer(CUdeviceptr p);

}  // namespace gpool::rgpu
