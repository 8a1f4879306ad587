#include "worker/runner/supervisor_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include "protocol/wire.h"
#include "worker/runner/atomic_file.h"

namespace gpool::worker {
namespace {

// `sync` false: a record only a restarted worker reads (atomic_file.h).
template <typename T>
Status WriteRecord(const std::string& path, const T& record, bool sync) {
  return WriteFileAtomic(path, wire::PackToString(record), sync);
}

template <typename T>
Result<T> ReadRecord(const std::string& path) {
  auto bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  auto record = wire::UnpackFromString<T>(*bytes);
  if (!record.ok()) return record.status().WithContext(path);
  return record;
}

}  // namespace

std::string SupervisorSpecPath(const std::string& state_dir) { return state_dir + "/launch"; }
std::string SupervisorLockPath(const std::string& state_dir) { return state_dir + "/lock"; }
std::string StartRecordPath(const std::string& state_dir) { return state_dir + "/started"; }
std::string ExitRecordPath(const std::string& state_dir) { return state_dir + "/exit"; }
std::string SupervisorLogPath(const std::string& state_dir) { return state_dir + "/supervisor.log"; }

Status WriteSupervisorSpec(const std::string& state_dir, const SupervisorSpec& spec) {
  return WriteRecord(SupervisorSpecPath(state_dir), spec, kWithinBoot);
}
Result<SupervisorSpec> ReadSupervisorSpec(const std::string& state_dir) {
  return ReadRecord<SupervisorSpec>(SupervisorSpecPath(state_dir));
}
Status WriteStartRecord(const std::string& state_dir, const StartRecord& record) {
  return WriteRecord(StartRecordPath(state_dir), record, kWithinBoot);
}
Result<StartRecord> ReadStartRecord(const std::string& state_dir) {
  return ReadRecord<StartRecord>(StartRecordPath(state_dir));
}
Status WriteExitRecord(const std::string& state_dir, const ExitRecord& record) {
  return WriteRecord(ExitRecordPath(state_dir), record, /*sync=*/true);
}
Result<ExitRecord> ReadExitRecord(const std::string& state_dir) {
  return ReadRecord<ExitRecord>(ExitRecordPath(state_dir));
}

bool SupervisorAlive(const std::string& state_dir) {
  const int fd = open(SupervisorLockPath(state_dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // A shared lock cannot be had while the supervisor holds its exclusive one.
  const bool alive = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // drops the shared lock, if it was taken
  return alive;
}

std::set<std::string> LiveSupervisedCgroups(const std::string& tasks_dir) {
  std::set<std::string> live;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(tasks_dir, ec)) {
    const std::string dir = entry.path().string();
    if (entry.path().extension() != ".state" || !entry.is_directory(ec) || !SupervisorAlive(dir)) continue;
    auto spec = ReadSupervisorSpec(dir);
    if (spec.ok() && !spec->request.cgroup.empty()) live.insert(spec->request.cgroup);
  }
  return live;
}

}  // namespace gpool::worker
