// The interposer's process-wide state: the real driver's entry points it
// calls, the task's limits from the environment, and the ledger.
//
// libgpool-cuda.so.1 is loaded as "libcuda.so.1" (the worker puts a symlink
// of that name in a private directory at the head of the task's
// LD_LIBRARY_PATH), so it must stand in for the whole driver: the calls
// gpool governs are implemented in memory_hooks.cc, launch_hooks.cc and
// proc_address.cc; every other export is a trampoline (forwarders.cc) to the
// real driver, which is opened by absolute path (GPOOL_CUDA_REAL_DRIVER or
// the distributions' usual places), never by name: "libcuda.so.1" would
// find this library again. Why not LD_PRELOAD: README.md in this folder.
//
// Initialised once, at load (a constructor) or by the first call that gets
// there earlier; read-only afterwards, so hot paths read it without locks.
#pragma once

#include <atomic>
#include <cstdint>

#include "worker/cuda/cuda_driver_api.h"
#include "worker/cuda/ledger_file.h"
#include "worker/cuda/object_costs.h"

namespace gpool::cuda {

enum class Qos { kBestEffort, kFixedShare, kBurstShare };

// The real driver's entry points the interposer calls itself. A null member:
// the driver lacks that symbol (an old driver), and the hook forwards
// nothing it cannot call.
struct RealDriver {
#define GPOOL_CUDA_REAL(name) name##_fn name;
#include "worker/cuda/real_symbols.inc"
#undef GPOOL_CUDA_REAL
};

enum class LaunchMode : std::uint8_t {
  kForward,   // no compute share and nobody to tell: a launch is one indirect call
  kPublish,   // not throttled, but other tasks on the device see this one's activity
  kThrottle,  // the task's compute share is enforced
};

struct InterposerState {
  void* real_handle = nullptr;  // dlopen handle of the real driver; null: none found
  // Remote mode (GPOOL_RGPU_ENDPOINT set): real_handle is the rGPU client
  // library (libgpool-rgpu.so.1), which sends the calls to a session
  // server; a call it lacks answers CUDA_ERROR_NOT_SUPPORTED, not
  // CUDA_ERROR_NOT_FOUND.
  bool remote = false;
  RealDriver real{};
  std::uint64_t limit_bytes = 0;  // per device; 0: no memory limit
  int compute_pct = 100;
  Qos qos = Qos::kBestEffort;
  bool count_memory = false;  // a limit or a ledger: allocations are counted
  // What contexts, modules and streams are charged (object_costs.h); only
  // where count_memory, and never remotely: there the session server's own
  // interposer charges the objects the GPU really holds.
  ObjectCosts object_costs;
  // The ledger file exists but another user could have written it: every
  // allocation is refused (a limit that cannot be kept must not become none).
  bool ledger_untrusted = false;
  LaunchMode launch_mode = LaunchMode::kForward;
  LedgerFile* ledger = nullptr;  // non-null when count_memory or throttling
};

// Set (release) once the state is complete; read by State()'s fast path.
extern std::atomic<bool> g_interposer_ready;
extern InterposerState g_interposer_state;
const InterposerState& InitState();

// The state, initialised on first use. On the launch fast path this is one
// acquire load (a plain load on x86-64): the constructor has always run by
// then.
inline const InterposerState& State() {
  if (__builtin_expect(g_interposer_ready.load(std::memory_order_acquire), 1)) return g_interposer_state;
  return InitState();
}

// Resolves `name` in the real driver, or null.
void* RealSymbol(const char* name);

// What a call the real driver (or, remote, the client library) lacks
// answers: CUDA_ERROR_NOT_FOUND, or CUDA_ERROR_NOT_SUPPORTED in remote
// mode. Logs the name.
CUresult MissingDriverSymbol(const char* name);

}  // namespace gpool::cuda
