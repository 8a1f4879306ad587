// One rGPU session's driver state: executes the client's calls (wire.h ops)
// on the driver and owns everything they created, so that Release() leaves
// the device as the session found it ("the next tenant finds clean
// memory"): events, streams, modules, allocations, created contexts and
// primary-context retains are undone in that order.
//
// The client never sees a driver pointer except device pointers (which it
// passes back opaquely): contexts, modules, functions, streams and events
// are handles numbered from kFirstHandle, mapped here. A handle of the
// wrong kind or an unknown one answers CUDA_ERROR_INVALID_HANDLE (contexts:
// CUDA_ERROR_INVALID_CONTEXT), never a dereference.
//
// Thread-safety: single-threaded (the server's loop).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/rgpu/server/chunk_pool.h"
#include "worker/rgpu/server/driver.h"
#include "worker/rgpu/wire.h"

namespace gpool::rgpu {

struct DataFrame {
  const void* data;
  std::size_t size;
};

// Takes a call's bulk reply one chunk at a time (kChunkBytes each, the
// last one shorter).
using BulkSink = std::function<void(zmq::message_t& chunk)>;

// What Release() undid, for the log.
struct ReleaseCounts {
  std::size_t events = 0, streams = 0, modules = 0, allocations = 0, contexts = 0, primary_retains = 0;
};

class Session {
 public:
  // `chunks` holds the buffers of device-to-host replies; it outlives the
  // messages made from it (chunk_pool.h).
  Session(const Driver& driver, ChunkPool& chunks) : d_(driver), chunks_(chunks) {}
  ~Session() { Release(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs one call with `context` (a context handle, 0: none) current.
  // `args` holds the op's arguments, `data` its bulk frames; the outputs go
  // to `out`, bulk replies to `bulk` (only kMemcpyDtoH has any; when it
  // fails, the chunks given so far are not to be used).
  CUresult Execute(Op op, std::uint64_t context, Reader& args, const std::vector<DataFrame>& data, Writer& out,
                   const BulkSink& bulk);

  // Frees and destroys everything the client created. Idempotent.
  ReleaseCounts Release();

  std::size_t live_allocations() const { return allocations_.size(); }

 private:
  struct Context {
    CUcontext ctx;
    CUdevice device;
    bool primary;
  };
  struct Function {
    CUfunction fn;
    std::uint64_t module;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> params;  // offset, size
    std::uint32_t param_bytes;
  };
  template <typename T>
  struct Owned {
    T ptr;
    std::uint64_t context;  // made current to destroy it
  };

  CUresult MakeCurrent(std::uint64_t context);
  // Drops the records of everything made in `context` (the driver freed it).
  void Forget(std::uint64_t context);
  CUresult StreamOf(std::uint64_t handle, CUstream* stream) const;
  CUresult ContextOps(Op op, Reader& args, Writer& out);
  CUresult MemoryOps(Op op, std::uint64_t context, Reader& args, const std::vector<DataFrame>& data, Writer& out,
                     const BulkSink& bulk);
  CUresult ModuleOps(Op op, std::uint64_t context, Reader& args, const std::vector<DataFrame>& data, Writer& out);
  CUresult StreamOps(Op op, std::uint64_t context, Reader& args, Writer& out);
  CUresult Launch(Reader& args);
  std::uint64_t NewHandle() { return next_handle_++; }

  const Driver& d_;
  ChunkPool& chunks_;
  std::uint64_t next_handle_ = kFirstHandle;
  std::uint64_t current_ = 0;  // the context handle current on this thread
  bool current_known_ = false;
  std::map<std::uint64_t, Context> contexts_;
  std::map<CUdevice, std::uint64_t> primary_handles_;  // one handle per device's primary context
  std::map<CUdevice, int> primary_retains_;
  struct Allocation {
    std::uint64_t bytes;
    std::uint64_t context;  // the context it was made in
  };
  // Whether [p, p + bytes) lies inside one of the session's allocations:
  // copies and memsets are checked, so a bad pointer is an error reply,
  // not a write somewhere in the server (or another tenant's memory).
  bool Owns(CUdeviceptr p, std::uint64_t bytes) const;
  std::map<CUdeviceptr, Allocation> allocations_;
  std::map<std::uint64_t, Owned<CUmodule>> modules_;
  std::map<std::uint64_t, Function> functions_;
  std::map<std::uint64_t, Owned<CUstream>> streams_;
  std::map<std::uint64_t, Owned<CUevent>> events_;
};

}  // namespace gpool::rgpu
