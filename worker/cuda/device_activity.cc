#include "worker/cuda/device_activity.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#include "worker/cuda/interposer.h"
#include "worker/cuda/interposer_log.h"

namespace gpool::cuda {
namespace {

constexpr std::uint32_t kRecordMagic = 0x32414750;  // "PGA2"
constexpr std::uint64_t kCheckSalt = 0x9E3779B97F4A7C15ULL;
constexpr std::int64_t kActiveWindowNs = 100'000'000;
// A neighbour's file is at most this stale while it launches, far inside
// the 100 ms window.
constexpr std::int64_t kWriteEveryNs = 5'000'000;
// How long a scan's answer stands; the throttle sleeps at most 20 ms too.
constexpr std::int64_t kScanEveryNs = 20'000'000;
// Bounds on one scan, so a directory stuffed by a hostile task costs
// a bounded time; past either the answer is "busy" (the safe one).
constexpr int kMaxEntries = 4096;
constexpr int kMaxFiles = 256;
constexpr const char* kDefaultDir = "/dev/shm/gpool-cuda-activity.d";

// The process's instance, for the exit and fork handlers.
DeviceActivity* g_activity = nullptr;

std::uint64_t Check(const DeviceActivity::Record& r) {
  return r.task ^ static_cast<std::uint64_t>(r.last_ns) ^ kCheckSalt;
}

}  // namespace

std::uint64_t TaskKey(const char* ledger_path) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (const char* p = ledger_path; p != nullptr && *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ULL;
  return h | 1;
}

const char* ActivityDir() {
  const char* chosen = std::getenv("GPOOL_CUDA_ACTIVITY");
  return chosen != nullptr && *chosen != '\0' ? chosen : kDefaultDir;
}

std::int64_t DeviceActivity::CoarseNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

DeviceActivity* DeviceActivity::Open(const char* dir, std::uint64_t task_key) {
  // Whoever comes first makes it, as /tmp is: writable by every user's
  // tasks, sticky so none can remove or rename another's file.
  const bool made = mkdir(dir, 01777) == 0;
  // O_NOFOLLOW: a symlink planted at the path is refused, and everything
  // after works on this descriptor, so the path cannot be swapped later.
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    LogError("activity_untrusted dir=%s reason=not_a_directory_or_symlink errno=%d burst=off", dir, errno);
    return nullptr;
  }
  if (made) (void)fchmod(fd, 01777);  // the umask must not keep other users' tasks out
  struct stat st {};
  const char* reason = nullptr;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    reason = "not_a_directory";
  } else if (st.st_uid != 0 && st.st_uid != geteuid()) {
    // Its owner could remove other tasks' files (hiding them from burst
    // tasks) despite the sticky bit.
    reason = "owned_by_another_user";
  } else if ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0) {
    reason = "writable_by_others_without_sticky_bit";
  }
  if (reason != nullptr) {
    LogError("activity_untrusted dir=%s reason=%s mode=%o uid=%u burst=off", dir, reason,
             static_cast<unsigned>(st.st_mode & 07777), static_cast<unsigned>(st.st_uid));
    close(fd);
    return nullptr;
  }
  auto* activity = new DeviceActivity(fd, task_key);
  for (int d = 0; d < kLedgerDevices; ++d) {
    activity->fd_[d].store(-1);
    activity->others_[d].store(true);  // unknown until scanned: keep the share
  }
  g_activity = activity;
  std::atexit([] { g_activity->RemoveOwnFiles(); });
  pthread_atfork(nullptr, nullptr, [] { g_activity->AfterForkInChild(); });
  return activity;
}

bool DeviceActivity::UuidLocked(int device) {
  if (uuid_hex_[device][0] != '\0') return true;
  const auto get_uuid = State().real.cuDeviceGetUuid;
  unsigned char raw[16] = {};
  if (get_uuid == nullptr || get_uuid(raw, device) != CUDA_SUCCESS) return false;
  for (int i = 0; i < 16; ++i) std::snprintf(&uuid_hex_[device][2 * i], 3, "%02x", raw[i]);
  return true;
}

int DeviceActivity::CreateLocked(int device) {
  if (!UuidLocked(device)) return -2;
  // A random part no other task can guess, so none can take the name first.
  std::uint64_t random = 0;
  if (getrandom(&random, sizeof(random), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(random))) {
    random = static_cast<std::uint64_t>(CoarseNowNs()) * 6364136223846793005ULL ^
             reinterpret_cast<std::uintptr_t>(&random);
  }
  char name[96];
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::snprintf(name, sizeof(name), "%s.%016llx.%d.%016llx", uuid_hex_[device],
                  static_cast<unsigned long long>(task_),
                  static_cast<int>(getpid()), static_cast<unsigned long long>(random + static_cast<unsigned>(attempt)));
    const int fd = openat(dir_fd_, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      (void)fchmod(fd, 0644);  // readable by other users' tasks whatever the umask
      names_[device] = name;
      return fd;
    }
    if (errno != EEXIST) break;
  }
  LogError("activity_publish_failed device=%d errno=%d", device, errno);
  return -2;
}

void DeviceActivity::Touch(int device, std::int64_t now_ns) {
  if (device < 0 || device >= kLedgerDevices) return;
  std::int64_t next = next_write_ns_[device].load(std::memory_order_relaxed);
  if (now_ns < next) return;  // most launches: one load and compare
  if (!next_write_ns_[device].compare_exchange_strong(next, now_ns + kWriteEveryNs, std::memory_order_relaxed)) {
    return;  // another thread writes this time
  }
  int fd = fd_[device].load(std::memory_order_acquire);
  if (fd == -1) {
    std::lock_guard lock(mu_);
    fd = fd_[device].load(std::memory_order_relaxed);
    if (fd == -1) {
      fd = CreateLocked(device);
      fd_[device].store(fd, std::memory_order_release);
    }
  }
  if (fd < 0) return;
  // The worker sweeps files nobody wrote for a long while (a killed
  // process's): after a long pause this process may be the one swept, and
  // must publish again under a new name or look idle to its neighbours.
  const std::int64_t last = last_write_ns_[device].exchange(now_ns, std::memory_order_relaxed);
  struct stat st {};
  if (last != 0 && now_ns - last > recheck_after_idle_ns_ && fstat(fd, &st) == 0 && st.st_nlink == 0) {
    std::lock_guard lock(mu_);
    // dup2 swaps the file under the same descriptor number, so a thread
    // that loaded it a moment ago writes to one file or the other, never to
    // a closed or reused descriptor.
    const int fresh = CreateLocked(device);
    if (fresh < 0) return;
    (void)dup2(fresh, fd);
    (void)close(fresh);
  }
  Record r{kRecordMagic, sizeof(Record), task_, now_ns, 0};
  r.check = Check(r);
  const ssize_t n = pwrite(fd, &r, sizeof(r), 0);
  (void)n;  // a failed write leaves the task looking idle a while: nothing to do about it here
}

bool DeviceActivity::OthersActive(int device, std::int64_t now_ns) {
  if (device < 0 || device >= kLedgerDevices) return true;
  if (now_ns < next_scan_ns_[device].load(std::memory_order_acquire)) {
    return others_[device].load(std::memory_order_relaxed);
  }
  // One thread scans; the others take the last answer rather than wait.
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || now_ns < next_scan_ns_[device].load(std::memory_order_relaxed)) {
    return others_[device].load(std::memory_order_relaxed);
  }
  const bool active = ScanLocked(device, now_ns);
  others_[device].store(active, std::memory_order_relaxed);
  next_scan_ns_[device].store(now_ns + kScanEveryNs, std::memory_order_release);
  return active;
}

bool DeviceActivity::ScanLocked(int device, std::int64_t now_ns) {
  if (!UuidLocked(device)) return true;
  const char* uuid = uuid_hex_[device];
  // A descriptor of its own: fdopendir owns it, and its offset starts at 0.
  const int fd = openat(dir_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = fd >= 0 ? fdopendir(fd) : nullptr;
  if (dir == nullptr) {
    if (fd >= 0) close(fd);
    return true;
  }
  bool active = false;
  bool bounded = false;
  int entries = 0, files = 0;
  while (const dirent* e = readdir(dir)) {
    if (++entries > kMaxEntries) {
      bounded = true;
      break;
    }
    if (std::strncmp(e->d_name, uuid, 32) != 0 || e->d_name[32] != '.') continue;
    if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) continue;  // a FIFO, a symlink...
    if (++files > kMaxFiles) {
      bounded = true;
      break;
    }
    // O_NONBLOCK: a FIFO swapped in after readdir opens without waiting for
    // a writer; fstat then turns away all but regular files.
    const int f = openat(dir_fd_, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) continue;
    struct stat st {};
    Record r{};
    const bool read_ok = fstat(f, &st) == 0 && S_ISREG(st.st_mode) && pread(f, &r, sizeof(r), 0) == sizeof(r);
    close(f);
    // Short, foreign or torn: not active (a lie can only say "busy").
    if (!read_ok || r.magic != kRecordMagic || r.size != sizeof(Record) || r.check != Check(r)) continue;
    if (r.task != task_ && r.last_ns > now_ns - kActiveWindowNs) {
      active = true;
      break;
    }
  }
  closedir(dir);
  if (bounded) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) LogError("activity_scan_bounded entries=%d files=%d reading=busy", entries, files);
    return true;
  }
  return active;
}

void DeviceActivity::RemoveOwnFiles() {
  std::lock_guard lock(mu_);
  for (int d = 0; d < kLedgerDevices; ++d) {
    // Launches from threads still running during exit write to the
    // unlinked file (harmless) and never make a new one.
    fd_[d].store(-2, std::memory_order_release);
    if (!names_[d].empty()) (void)unlinkat(dir_fd_, names_[d].c_str(), 0);
    names_[d].clear();
  }
}

void DeviceActivity::AfterForkInChild() {
  new (&mu_) std::mutex;
  for (int d = 0; d < kLedgerDevices; ++d) {
    const int fd = fd_[d].exchange(-1);
    if (fd >= 0) close(fd);
    names_[d].clear();  // the parent removes its own files
    next_write_ns_[d].store(0);
  }
}

}  // namespace gpool::cuda
