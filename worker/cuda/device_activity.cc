#include "worker/cuda/device_activity.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include "worker/cuda/interposer.h"
#include "worker/cuda/interposer_log.h"

namespace gpool::cuda {
namespace {

constexpr std::uint32_t kActivityMagic = 0x31414750;  // "PGA1"
constexpr std::int64_t kActiveWindowNs = 100'000'000;
constexpr std::int64_t kSlotExpiryNs = 10'000'000'000;
constexpr std::int64_t kTouchEveryNs = 1'000'000;

}  // namespace

std::uint64_t TaskKey(const char* ledger_path) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (const char* p = ledger_path; p != nullptr && *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ULL;
  return h | 1;
}

std::int64_t DeviceActivity::CoarseNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

DeviceActivity* DeviceActivity::Open(const char* path, std::uint64_t task_key) {
  const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    LogError("activity_open_failed path=%s errno=%d", path, errno);
    return nullptr;
  }
  flock(fd, LOCK_EX);
  struct stat st {};
  bool ok = fstat(fd, &st) == 0;
  if (ok && static_cast<std::size_t>(st.st_size) < sizeof(Layout)) {
    // The umask must not keep other users' tasks out.
    (void)fchmod(fd, 0666);
    ok = ftruncate(fd, sizeof(Layout)) == 0;
  }
  void* map = ok ? mmap(nullptr, sizeof(Layout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (map != MAP_FAILED) {
    auto* layout = static_cast<Layout*>(map);
    if (layout->magic == 0) {
      layout->size = sizeof(Layout);
      layout->magic = kActivityMagic;
    }
    ok = layout->magic == kActivityMagic && layout->size == sizeof(Layout);
  }
  flock(fd, LOCK_UN);
  if (map == MAP_FAILED || !ok) {
    LogError("activity_map_failed path=%s", path);
    if (map != MAP_FAILED) munmap(map, sizeof(Layout));
    close(fd);
    return nullptr;
  }
  return new DeviceActivity(static_cast<Layout*>(map), fd, task_key);
}

DeviceActivity::Slot* DeviceActivity::Claim(int device, std::int64_t now_ns) {
  const auto get_uuid = State().real.cuDeviceGetUuid;
  unsigned char raw[16] = {};
  if (get_uuid == nullptr || get_uuid(raw, device) != CUDA_SUCCESS) return nullptr;
  std::uint64_t uuid[2];
  std::memcpy(uuid, raw, sizeof(uuid));
  if (uuid[0] == 0 && uuid[1] == 0) uuid[1] = 1;  // 0 marks a free entry
  std::lock_guard lock(mu_);
  flock(fd_, LOCK_EX);
  Gpu* gpu = nullptr;
  for (Gpu& g : layout_->gpus) {
    const std::uint64_t a = g.uuid[0].load(), b = g.uuid[1].load();
    if (a == uuid[0] && b == uuid[1]) {
      gpu = &g;
      break;
    }
    if (gpu == nullptr && a == 0 && b == 0) gpu = &g;
  }
  Slot* slot = nullptr;
  if (gpu != nullptr) {
    gpu->uuid[0].store(uuid[0]);
    gpu->uuid[1].store(uuid[1]);
    for (Slot& s : gpu->slots) {
      const std::uint64_t task = s.task.load();
      if (task == task_) {
        slot = &s;
        break;
      }
      if (slot == nullptr && (task == 0 || now_ns - s.last_ns.load() > kSlotExpiryNs)) slot = &s;
    }
    if (slot != nullptr) {
      slot->last_ns.store(now_ns);
      slot->task.store(task_);
    }
  }
  flock(fd_, LOCK_UN);
  if (slot == nullptr) {
    LogError("activity_full device=%d", device);
    return nullptr;
  }
  gpu_[device].store(gpu, std::memory_order_release);
  slot_[device].store(slot, std::memory_order_release);
  return slot;
}

void DeviceActivity::Touch(int device, std::int64_t now_ns) {
  if (device < 0 || device >= kLedgerDevices) return;
  Slot* slot = slot_[device].load(std::memory_order_acquire);
  if (slot == nullptr || slot->task.load(std::memory_order_relaxed) != task_) {
    // Never claimed, or taken over after 10 s without a launch.
    slot = Claim(device, now_ns);
    if (slot == nullptr) return;
  }
  if (now_ns - slot->last_ns.load(std::memory_order_relaxed) >= kTouchEveryNs) {
    slot->last_ns.store(now_ns, std::memory_order_relaxed);
  }
}

bool DeviceActivity::OthersActive(int device, std::int64_t now_ns) {
  if (device < 0 || device >= kLedgerDevices) return true;
  const Gpu* gpu = gpu_[device].load(std::memory_order_acquire);
  if (gpu == nullptr) return true;  // unknown: assume contention, keep the share
  for (const Slot& s : gpu->slots) {
    const std::uint64_t task = s.task.load(std::memory_order_relaxed);
    if (task != 0 && task != task_ && now_ns - s.last_ns.load(std::memory_order_relaxed) < kActiveWindowNs) {
      return true;
    }
  }
  return false;
}

}  // namespace gpool::cuda
