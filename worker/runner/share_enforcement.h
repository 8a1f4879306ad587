// How a GPU share's limits are held (worker/README.md, "How share limits
// are enforced"): what the worker prepares for gpool's CUDA interposer
// (libgpool-cuda.so.1, worker/cuda/) and how it catches a task that gets
// around it.
//
// The interposer replaces the driver by name: each interposed task has a
// private directory, <log_dir>/<job>.<index>.<attempt>.cuda (worker-owned,
// 0755, never writable by the task), holding one symlink, libcuda.so.1 ->
// the interposer. device_env.cc puts that directory first on the task's
// LD_LIBRARY_PATH, so both `-lcuda` programs and the CUDA runtime's
// dlopen("libcuda.so.1") load the interposer, which opens the real driver
// by the absolute path in GPOOL_CUDA_REAL_DRIVER and counts the task's
// allocations in its ledger, GPOOL_CUDA_LEDGER (<ledger_dir>/gpool-cuda-
// <job>-<index>-<attempt>, one per attempt: a retry never inherits the
// last attempt's counts). The worker creates the ledger before the task
// starts, in a directory of its own, and gives it to the task's uid, 0600
// (cuda_shared_files.h: no other task can plant it); it removes it and the
// directory when the attempt ends, however it ends.
//
// Interposed: a GPU share (IsGpuShare) that is not a MIG instance, on a
// worker with an interposer and no --cuda-intercept-lib (an operator's
// HAMi-core replaces gpool's interposer; the two are never both applied).
// The interposer also charges the share for the contexts, modules and
// streams the task creates (GPOOL_CUDA_OBJECT_COSTS, object_costs).
//
// Unenforceable (issue 50): a share that is not a MIG instance on a node
// where nothing can hold it (the interposer was looked for and is missing,
// or the --cuda-intercept-lib file is gone) does not start: its start fails
// with kUnenforceableShareReason (protocol/model/task_report.h) and what is
// missing, which the job shows. The operator opts a node out with
// --allow-unenforced-shares (the task then runs with its limits as variables
// only) or says --cuda-interposer none (the same, said at start).
// Whole GPUs and MIG instances are isolated by the hardware or by holding
// the GPU alone, and are never interposed.
//
// The bypass catch: a process that unsets its environment or links the
// driver statically escapes the interposer, but not the driver's own
// accounting (NVML, sampled with every heartbeat). ShareMemoryGuard counts,
// per task, the consecutive samples in which the task's GPU memory exceeds
// its share (gpu_memory_mib x its GPU count) by more than the tolerance
// (the larger of tolerance_mib and 5 % of the share: allocator rounding
// and the driver's per-context overhead are not a bypass); at the second
// such sample in a row the task is to be stopped. A compute-only share
// (gpu_memory_mib 0) has no memory limit to overrun.
//
// Thread-safety: ShareMemoryGuard belongs to one thread (the agent's); the
// free functions are safe anywhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages_worker.h"
#include "protocol/types.h"

namespace gpool::worker {

// What the worker was told about the interposer (flags.h --cuda-*).
struct ShareEnforcementOptions {
  // libgpool-cuda.so.1, absolute; empty: shares are not interposed.
  std::string interposer;
  // The node's real libcuda.so.1 (GPOOL_CUDA_REAL_DRIVER); empty: not set,
  // and the interposer looks in its own default places.
  std::string real_driver;
  // Where the per-attempt ledgers live (shared memory: the interposer
  // takes a lock on it at every allocation), and where interposed processes
  // publish their launches for burst-share: both the worker's own
  // (cuda_shared_files.h).
  std::string ledger_dir = "/dev/shm/gpool-cuda";
  std::string activity_dir = "/dev/shm/gpool-cuda-activity.d";
  // The least sampled GPU memory above a share that stops its task (above).
  uint64_t memory_tolerance_mib = 64;
  // GPOOL_CUDA_OBJECT_COSTS for interposed tasks (--cuda-object-costs).
  std::string object_costs = "default";
  // Non-empty: the interposer was looked for and is missing (what was looked
  // at); share tasks are then unenforceable here (above).
  std::string interposer_missing;
  // --allow-unenforced-shares: unenforceable shares run anyway.
  bool allow_unenforced = false;
};

// The places a node's libcuda.so.1 usually is, in the order looked at.
const std::vector<std::string>& DefaultRealDriverPaths();
// The first of `candidates` that exists; empty when none does.
std::string FirstExisting(const std::vector<std::string>& candidates);
// Where libgpool-cuda.so.1 is next to a worker binary at `exe`:
// <dir>/../lib/gpool/libgpool-cuda.so.1 (installed), then
// <dir>/cuda/libgpool-cuda.so.1 (the build tree: build/worker/gpool-worker
// and build/worker/cuda/).
std::vector<std::string> InterposerPathsNextTo(const std::string& exe);

// Which interposer the worker uses, and the line it logs once at start.
struct InterposerChoice {
  std::string path;     // absolute; empty: shares are not interposed
  std::string message;  // for the operator: what holds shares on this node
  bool warn = false;    // enforcement is off without being turned off
  std::string missing;  // with warn: the paths looked at (ShareEnforcementOptions.interposer_missing)
};
// `flag`: --cuda-interposer ("" default, "none", or a path);
// `intercept_lib`: --cuda-intercept-lib (set: HAMi-core replaces gpool's
// interposer); `exe`: the worker binary (/proc/self/exe), for the default.
// A path that does not exist is not used (warn): a task would fail to load
// its driver through a dangling link.
InterposerChoice ChooseInterposer(const std::string& flag, const std::string& intercept_lib, const std::string& exe);

// True when a bind with these limits gets the interposer (above), given the
// worker's options: a share, not MIG, an interposer and no HAMi-core.
bool InterposedShare(const BindTask& bind, const ShareEnforcementOptions& share, const std::string& intercept_lib);

// Why a share with this bind cannot be held on this node, or empty when it
// can (or is not a share, or is a MIG instance, or the operator allowed
// unenforced shares): "<kUnenforceableShareReason>: <what is missing>".
// `intercept_lib` is checked on disk now: it may have been removed since
// the worker started.
std::string UnenforceableShare(const BindTask& bind, const ShareEnforcementOptions& share,
                               const std::string& intercept_lib);

// <log_dir>/<job>.<index>.<attempt>.cuda
std::string TaskCudaDir(const std::string& log_dir, const TaskId& task);
// <ledger_dir>/gpool-cuda-<job>-<index>-<attempt>
std::string TaskCudaLedgerPath(const std::string& ledger_dir, const TaskId& task);

// Creates `dir` (0755) with the symlink libcuda.so.1 -> `interposer`,
// replacing whatever a previous try left there. IoError when it cannot.
Status PrepareCudaDir(const std::string& dir, const std::string& interposer);
// Removes the task's private directory and its ledger; what is already
// gone is no error. Returns the first error's text, empty when none.
std::string RemoveShareFiles(const std::string& dir, const std::string& ledger);

// The allowed GPU memory of a share and the tolerance over it, in MiB; 0
// allowed: no memory limit.
uint64_t ShareMemoryLimitMib(const BindTask& bind);
uint64_t ShareMemoryToleranceMib(uint64_t limit_mib, uint64_t tolerance_floor_mib);

// Why a task over its share was stopped: "GPU memory 20480 MiB over its
// share of 10240 MiB (the interposer was bypassed)". The coordinator finds
// it in the exit event's message (StoppedOverShare, messages_worker.h).
std::string OverShareReason(uint64_t used_mib, uint64_t limit_mib, const std::string& why);

// Counts consecutive over-share samples per task (above).
class ShareMemoryGuard {
 public:
  static constexpr int kSamplesToStop = 2;

  struct Overrun {
    TaskId task;
    uint64_t used_mib = 0;
    uint64_t limit_mib = 0;
  };

  explicit ShareMemoryGuard(uint64_t tolerance_floor_mib) : tolerance_floor_mib_(tolerance_floor_mib) {}

  // One sample: `shares` are the running share tasks' binds, `usage` what
  // was measured. A task absent from `usage` or within its share starts
  // over; the tasks at their kSamplesToStop-th over sample in a row are
  // returned (once: their count starts over too). Tasks no longer in
  // `shares` are forgotten.
  std::vector<Overrun> Observe(const std::map<TaskId, const BindTask*>& shares, const std::vector<TaskUsage>& usage);

 private:
  uint64_t tolerance_floor_mib_;
  std::map<TaskId, int> over_;
};

}  // namespace gpool::worker
