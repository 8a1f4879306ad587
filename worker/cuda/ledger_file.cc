#include "worker/cuda/ledger_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <new>

#include "worker/cuda/interposer_log.h"

namespace gpool::cuda {

LedgerFile* LedgerFile::Open(const char* path) {
  if (path == nullptr || *path == '\0') {
    void* map = mmap(nullptr, sizeof(LedgerLayout), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return nullptr;
    auto* layout = static_cast<LedgerLayout*>(map);
    layout->magic = kLedgerMagic;
    layout->size = sizeof(LedgerLayout);
    return new LedgerFile(layout, -1);
  }
  const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    LogError("ledger_open_failed path=%s errno=%d", path, errno);
    return nullptr;
  }
  // Whoever comes first sizes and stamps the file; the lock makes the
  // others wait until it is whole. ftruncate to the size it has is a no-op.
  flock(fd, LOCK_EX);
  struct stat st {};
  bool ok = fstat(fd, &st) == 0;
  if (ok && static_cast<std::size_t>(st.st_size) < sizeof(LedgerLayout)) {
    ok = ftruncate(fd, sizeof(LedgerLayout)) == 0;
  }
  void* map = ok ? mmap(nullptr, sizeof(LedgerLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (map == MAP_FAILED) {
    flock(fd, LOCK_UN);
    close(fd);
    LogError("ledger_map_failed path=%s errno=%d", path, errno);
    return nullptr;
  }
  auto* layout = static_cast<LedgerLayout*>(map);
  if (layout->magic == 0) {
    layout->size = sizeof(LedgerLayout);
    layout->magic = kLedgerMagic;
  }
  flock(fd, LOCK_UN);
  if (layout->magic != kLedgerMagic || layout->size != sizeof(LedgerLayout)) {
    LogError("ledger_foreign path=%s magic=%u size=%u", path, layout->magic, layout->size);
    munmap(map, sizeof(LedgerLayout));
    close(fd);
    return nullptr;
  }
  return new LedgerFile(layout, fd);
}

void LedgerFile::LockFile() {
  if (fd_ >= 0) flock(fd_, LOCK_EX);
}

void LedgerFile::UnlockFile() {
  if (fd_ >= 0) flock(fd_, LOCK_UN);
}

void LedgerFile::ReclaimDeadLocked() {
  if (fd_ < 0) return;  // private memory has only this process in it
  for (LedgerProcess& entry : layout_->processes) {
    if (&entry == mine_ || entry.pid.load(std::memory_order_relaxed) == 0) continue;
    if (LedgerEntryAlive(entry)) continue;
    for (auto& used : entry.used) used.store(0, std::memory_order_relaxed);
    entry.start_ticks.store(0, std::memory_order_relaxed);
    entry.pid.store(0, std::memory_order_release);
  }
}

LedgerProcess* LedgerFile::ClaimLocked() {
  if (mine_ != nullptr) return mine_;
  for (LedgerProcess& entry : layout_->processes) {
    if (entry.pid.load(std::memory_order_relaxed) != 0) continue;
    for (auto& used : entry.used) used.store(0, std::memory_order_relaxed);
    entry.start_ticks.store(ProcessStartTicks(getpid()), std::memory_order_relaxed);
    entry.pid.store(getpid(), std::memory_order_release);
    mine_ = &entry;
    return mine_;
  }
  LogError("ledger_full processes=%d", kLedgerProcesses);
  return nullptr;
}

bool LedgerFile::Reserve(int device, std::uint64_t bytes, std::uint64_t limit) {
  std::lock_guard lock(mu_);
  LockFile();
  ReclaimDeadLocked();
  LedgerProcess* mine = ClaimLocked();
  bool ok = mine != nullptr;
  if (ok && limit != 0) {
    std::uint64_t total = 0;
    for (const LedgerProcess& entry : layout_->processes) {
      if (entry.pid.load(std::memory_order_relaxed) != 0) total += entry.used[device].load(std::memory_order_relaxed);
    }
    ok = total <= limit && bytes <= limit - total;
  }
  if (ok) mine->used[device].fetch_add(bytes, std::memory_order_relaxed);
  UnlockFile();
  return ok;
}

void LedgerFile::Release(int device, std::uint64_t bytes) {
  LedgerProcess* mine = mine_;
  if (mine == nullptr) return;
  // Never below zero: a release the ledger did not see (a reclaimed entry
  // after a pid check raced) must not wrap around.
  std::uint64_t used = mine->used[device].load(std::memory_order_relaxed);
  while (!mine->used[device].compare_exchange_weak(used, used >= bytes ? used - bytes : 0,
                                                   std::memory_order_relaxed)) {
  }
}

// Lock-free: a query must be cheap (frameworks ask before big allocations).
// Dead processes' entries are skipped here and reclaimed by the next
// reservation.
std::uint64_t LedgerFile::Used(int device) {
  const LedgerProcess* mine = mine_;
  std::uint64_t total = 0;
  for (const LedgerProcess& entry : layout_->processes) {
    if (entry.pid.load(std::memory_order_acquire) == 0) continue;
    if (fd_ >= 0 && &entry != mine && !LedgerEntryAlive(entry)) continue;
    total += entry.used[device].load(std::memory_order_relaxed);
  }
  return total;
}

void LedgerFile::AfterForkInChild() {
  new (&mu_) std::mutex;
  mine_ = nullptr;
}

}  // namespace gpool::cuda
