// The interposer's side of the task ledger (ledger.h): maps the file,
// claims this process's entry and reserves or releases device memory
// against the task's limit.
//
// Thread rules: every method may be called from any thread. Reserve takes
// a process mutex and then flock on the file (flock alone does not exclude
// threads of one process: they share the open file). Release is a lock-free
// subtraction from this process's own entry, Used a lock-free sum.
//
// Without a path the ledger is private memory: the limit then holds per
// process, which is all a process alone can know.
#pragma once

#include <cstdint>
#include <mutex>

#include "worker/cuda/ledger.h"

namespace gpool::cuda {

class LedgerFile {
 public:
  // Maps `path` (created 0600 if missing), or private memory when `path` is
  // null or empty. Null only when the file cannot be opened or mapped.
  static LedgerFile* Open(const char* path);

  // Counts `bytes` on `device` for this process when the task's live total
  // plus `bytes` stays within `limit` (0: no limit). Entries of dead
  // processes are reclaimed first. False: refused, nothing counted.
  bool Reserve(int device, std::uint64_t bytes, std::uint64_t limit);
  void Release(int device, std::uint64_t bytes);
  // The task's live total on `device` (skipping dead processes' entries).
  std::uint64_t Used(int device);
  LedgerDevice& Device(int device) { return layout_->devices[device]; }

  // In a forked child: the parent's entry is not ours, and the mutex may
  // have been held by a thread that does not exist here.
  void AfterForkInChild();

 private:
  LedgerFile(LedgerLayout* layout, int fd) : layout_(layout), fd_(fd) {}
  // Both under mu_ and the file lock.
  void ReclaimDeadLocked();
  LedgerProcess* ClaimLocked();
  void LockFile();
  void UnlockFile();

  LedgerLayout* layout_;
  int fd_;  // -1 for private memory
  std::mutex mu_;
  LedgerProcess* mine_ = nullptr;
};

}  // namespace gpool::cuda
