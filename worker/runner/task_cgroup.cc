#include "worker/runner/task_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "topology/cpulist.h"

namespace gpool::worker {
namespace fs = std::filesystem;

namespace {

// Never creates: a control file that is not there is the kernel's refusal.
// `truncate` for a value that replaces a longer one: cgroupfs ignores it,
// but a plain file (the tests' fake roots) would keep the old tail.
bool WriteFile(const std::string& path, const std::string& value, bool truncate = false) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | (truncate ? O_TRUNC : 0));
  if (fd < 0) return false;
  const ssize_t n = write(fd, value.data(), value.size());
  close(fd);
  return n == static_cast<ssize_t>(value.size());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

bool HasWord(const std::string& text, std::string_view word) {
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (w == word) return true;
  }
  return false;
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Status::Unavailable("cannot create " + path + ": " + ec.message());
  return Status::Ok();
}

// The v2 hierarchy under `mount_root`: the root itself (a pure v2 host) or
// its "unified" mount (a hybrid host), when it holds our controllers.
std::string FindV2(const std::string& mount_root, std::string* why) {
  for (const std::string& dir : {mount_root, mount_root + "/unified"}) {
    const std::string controllers = ReadFile(dir + "/cgroup.controllers");
    if (controllers.empty() && !fs::exists(dir + "/cgroup.controllers")) continue;
    for (std::string_view need : {"memory", "cpu", "pids"}) {
      if (!HasWord(controllers, need)) {
        *why = "the v2 hierarchy at " + dir + " lacks the " + std::string(need) + " controller";
        return "";
      }
    }
    return dir;
  }
  *why = "no v2 hierarchy under " + mount_root;
  return "";
}

constexpr uint64_t kCpuPeriodUs = 100'000;

// A task cgroup's name is one directory: never a path out of the subtree.
bool IsTaskCgroupName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

std::string TrimmedCgroupValue(const std::string& text) {
  const size_t end = text.find_last_not_of(" \n");
  return end == std::string::npos ? "" : text.substr(0, end + 1);
}

// v1 cpusets start with no cpus and no mems, and a process cannot join one
// so: each level from the hierarchy's root down to `base` takes its
// parent's, unless it has its own already. Why not, on failure.
std::string FillV1CpusetLevels(const std::string& root, const std::string& base) {
  std::string parent = root;
  std::string rest = base.substr(root.size());  // "/gpool/<scope>"
  size_t at = 0;
  while (at < rest.size()) {
    const size_t next = rest.find('/', at + 1);
    const std::string dir = root + rest.substr(0, next);
    for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
      if (!TrimmedCgroupValue(ReadFile(dir + "/" + file)).empty()) continue;
      const std::string value = TrimmedCgroupValue(ReadFile(parent + "/" + file));
      if (value.empty() || !WriteFile(dir + "/" + file, value)) {
        return std::string("cannot copy ") + file + " from " + parent + " to " + dir;
      }
    }
    parent = dir;
    at = next == std::string::npos ? rest.size() : next;
  }
  return "";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> CgroupLimitFiles(CgroupLayout layout, const CgroupLimits& limits) {
  std::vector<std::pair<std::string, std::string>> files;
  const uint64_t quota_us = limits.cpu_milli * kCpuPeriodUs / 1000;
  if (layout == CgroupLayout::kV2) {
    if (limits.memory_mib > 0) files.emplace_back("memory.max", std::to_string(limits.memory_mib << 20));
    if (limits.cpu_milli > 0) files.emplace_back("cpu.max", std::to_string(quota_us) + " " + std::to_string(kCpuPeriodUs));
  } else {
    if (limits.memory_mib > 0) files.emplace_back("memory/memory.limit_in_bytes", std::to_string(limits.memory_mib << 20));
    if (limits.cpu_milli > 0) {
      files.emplace_back("cpu/cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
      files.emplace_back("cpu/cpu.cfs_quota_us", std::to_string(quota_us));
    }
    for (const std::string& line : V1DenyLines(limits.deny_devices)) files.emplace_back("devices/devices.deny", line);
  }
  const std::vector<uint32_t>& cpus = limits.cpuset_cpus.empty() ? limits.shared_cpus : limits.cpuset_cpus;
  if (!cpus.empty()) {
    const std::string prefix = layout == CgroupLayout::kV2 ? "" : "cpuset/";
    files.emplace_back(prefix + "cpuset.cpus", topology::FormatCpuList(cpus));
    if (!limits.cpuset_mems.empty()) files.emplace_back(prefix + "cpuset.mems", limits.cpuset_mems);
  }
  return files;
}

TaskCgroup::TaskCgroup(std::string name, CgroupLayout layout, std::vector<std::string> dirs, std::string tracker)
    : name_(std::move(name)), layout_(layout), dirs_(std::move(dirs)), tracker_(std::move(tracker)) {}

TaskCgroup::~TaskCgroup() { CloseJoinFds(); }

void TaskCgroup::CloseJoinFds() {
  for (int fd : join_fds_) close(fd);
  join_fds_.clear();
}

std::vector<int64_t> TaskCgroup::Pids() const {
  std::vector<int64_t> pids;
  std::istringstream in(ReadFile(tracker_ + "/cgroup.procs"));
  int64_t pid = 0;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

void TaskCgroup::SignalAll(int signal, int64_t already_signalled_group) const {
  for (int64_t pid : Pids()) {
    const auto p = static_cast<pid_t>(pid);
    if (already_signalled_group != 0 && getpgid(p) == static_cast<pid_t>(already_signalled_group)) continue;
    kill(p, signal);
  }
}

void TaskCgroup::KillAll() const {
  if (layout_ == CgroupLayout::kV2 && WriteFile(tracker_ + "/cgroup.kill", "1")) return;
  // Frozen, no process can fork a child that the kill loop would miss.
  const bool v2 = layout_ == CgroupLayout::kV2;
  const std::string freeze = tracker_ + (v2 ? "/cgroup.freeze" : "/freezer.state");
  const bool frozen = WriteFile(freeze, v2 ? "1" : "FROZEN");
  if (frozen && !v2) {
    // v1 freezes asynchronously: FREEZING until every task has stopped.
    for (int i = 0; i < 200 && ReadFile(freeze).rfind("FROZEN", 0) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  SignalAll(SIGKILL);
  if (frozen) WriteFile(freeze, v2 ? "0" : "THAWED");  // killed processes die as they thaw
}

Status TaskCgroup::Remove() {
  CloseJoinFds();
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    if (rmdir(it->c_str()) != 0 && errno != ENOENT) {
      return Status::FailedPrecondition("cannot remove cgroup " + *it + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

Status TaskCgroup::Drain() {
  for (int round = 0; round < 1000 && !Empty(); ++round) {
    KillAll();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Remove();
}

CgroupTree::CgroupTree(CgroupLayout layout, std::string mount_root, std::string scope, std::vector<std::string> bases,
                       std::string tracker_base)
    : layout_(layout),
      mount_root_(std::move(mount_root)),
      scope_(std::move(scope)),
      bases_(std::move(bases)),
      tracker_base_(std::move(tracker_base)) {}

CgroupTree::~CgroupTree() {
  if (keep_subtree_) return;
  for (const auto& base : bases_) rmdir(base.c_str());  // fails, harmlessly, while task cgroups remain
}

Result<std::unique_ptr<CgroupTree>> CgroupTree::Open(const std::string& mount_root, const std::string& scope) {
  const std::string sub = "/gpool/" + scope;
  std::string why_not_v2;
  if (const std::string v2 = FindV2(mount_root, &why_not_v2); !v2.empty()) {
    // Controllers are enabled level by level down to the tasks' parent.
    std::string at = v2;
    for (const std::string& level : {std::string("/gpool"), "/" + scope}) {
      WriteFile(at + "/cgroup.subtree_control", "+memory +cpu +pids");
      at += level;
      GPOOL_RETURN_IF_ERROR(MakeDirs(at));
    }
    if (!WriteFile(at + "/cgroup.subtree_control", "+memory +cpu +pids") && !fs::exists(at)) {
      return Status::Unavailable("cannot enable controllers under " + at);
    }
    auto tree = std::unique_ptr<CgroupTree>(new CgroupTree(CgroupLayout::kV2, mount_root, scope, {at}, at));
    // cpuset apart: a kernel or a parent without it must not cost the
    // other controllers, and only tasks with exclusive cores need it.
    // The kernel refuses "+cpuset" where the level itself lacks it, so the
    // last write succeeding means the tasks' directories have cpuset files.
    std::string level = v2;
    bool enabled = false;
    for (const std::string& sub_level : {std::string("/gpool"), "/" + scope, std::string()}) {
      enabled = WriteFile(level + "/cgroup.subtree_control", "+cpuset");
      level += sub_level;
    }
    if (!enabled) tree->cpuset_why_not_ = "the cpuset controller cannot be enabled under " + at + " (v2)";
    return tree;
  }
  const std::string freezer = mount_root + "/freezer";
  if (!fs::exists(freezer + "/cgroup.procs")) {
    return Status::Unavailable(why_not_v2 + ", and no v1 freezer hierarchy at " + freezer);
  }
  if (access(freezer.c_str(), W_OK) != 0) return Status::Unavailable(freezer + " is not writable (run as root)");
  std::vector<std::string> bases = {freezer + sub};
  for (const char* controller : {"pids", "memory", "cpu", "devices", "cpuset"}) {
    const std::string root = mount_root + "/" + controller;
    if (fs::exists(root + "/cgroup.procs") && access(root.c_str(), W_OK) == 0) bases.push_back(root + sub);
  }
  for (const auto& base : bases) GPOOL_RETURN_IF_ERROR(MakeDirs(base));
  auto tree = std::unique_ptr<CgroupTree>(new CgroupTree(CgroupLayout::kV1, mount_root, scope, bases, bases.front()));
  const std::string cpuset = tree->CpusetBase();
  if (cpuset.empty()) {
    tree->cpuset_why_not_ = "no writable v1 cpuset hierarchy at " + mount_root + "/cpuset";
  } else {
    tree->cpuset_why_not_ = FillV1CpusetLevels(mount_root + "/cpuset", cpuset);
  }
  return tree;
}

std::string CgroupTree::CpusetBase() const {
  if (layout_ != CgroupLayout::kV1) return "";
  for (const auto& base : bases_) {
    if (base.rfind(mount_root_ + "/cpuset/", 0) == 0) return base;
  }
  return "";
}

Result<std::vector<uint32_t>> CgroupTree::AllowedCpus() const {
  if (!cpuset_available()) return Status::FailedPrecondition("no cpusets: " + cpuset_why_not_);
  const std::string file =
      layout_ == CgroupLayout::kV2 ? tracker_base_ + "/cpuset.cpus.effective" : CpusetBase() + "/cpuset.cpus";
  const std::string text = TrimmedCgroupValue(ReadFile(file));
  auto cpus = topology::ParseCpuList(text);
  if (!cpus.has_value() || cpus->empty()) {
    return Status::Unavailable("cannot read the CPUs of " + file + " ('" + text + "')");
  }
  return *cpus;
}

Status CgroupTree::SetTaskCpus(const std::string& name, const std::vector<uint32_t>& cpus) {
  if (!IsTaskCgroupName(name)) {
    return Status::InvalidArgument("cgroup name '" + name + "' is not a file name");
  }
  if (cpus.empty()) return Status::InvalidArgument("an empty cpuset would stop task " + name);
  const std::string base = layout_ == CgroupLayout::kV2 ? tracker_base_ : CpusetBase();
  const std::string file = base + "/" + name + "/cpuset.cpus";
  if (base.empty() || !cpuset_available() || !fs::exists(file)) {
    return Status::NotFound("task " + name + " has no cpuset");
  }
  const std::string value = topology::FormatCpuList(cpus);
  if (!WriteFile(file, value, /*truncate=*/true)) {
    return Status::Unavailable("cannot set " + file + " to " + value + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

std::string CgroupTree::Describe() const {
  if (layout_ == CgroupLayout::kV2) return "v2 under " + tracker_base_;
  std::string controllers;
  for (const auto& base : bases_) {
    const std::string rest = base.substr(mount_root_.size() + 1);
    controllers += (controllers.empty() ? "" : ", ") + rest.substr(0, rest.find('/'));
  }
  return "v1 (" + controllers + ") under " + mount_root_;
}

Result<std::unique_ptr<TaskCgroup>> CgroupTree::Create(const std::string& name, const CgroupLimits& limits) {
  if (!IsTaskCgroupName(name)) {
    return Status::InvalidArgument("cgroup name '" + name + "' is not a file name");
  }
  if (fs::exists(tracker_base_ + "/" + name)) return Status::AlreadyExists("cgroup " + name + " exists");
  if (!limits.deny_devices.empty() && layout_ == CgroupLayout::kV1 &&
      std::none_of(bases_.begin(), bases_.end(),
                   [&](const std::string& b) { return b.rfind(mount_root_ + "/devices/", 0) == 0; })) {
    // Fail closed: a task must not get GPUs it was not granted.
    return Status::Unavailable("the task's GPU device grant cannot be enforced: no writable v1 devices hierarchy under " +
                               mount_root_);
  }
  CgroupLimits effective = limits;
  if (!limits.cpuset_cpus.empty() || !cpuset_available()) effective.shared_cpus.clear();
  const bool wants_cpuset = (!limits.cpuset_cpus.empty() || !effective.shared_cpus.empty()) && cpuset_available();
  if (!limits.cpuset_cpus.empty() && !cpuset_available()) {
    // Fail closed, as for devices: cores promised exclusive must be.
    if (limits.cpuset_required) {
      return Status::FailedPrecondition("exclusive cores " + topology::FormatCpuList(limits.cpuset_cpus) +
                                        " cannot be enforced: " + cpuset_why_not_);
    }
    effective.cpuset_cpus.clear();  // the operator's fallback: affinity alone (the launcher pins)
  }
  const std::string cpuset_base = CpusetBase();
  if (wants_cpuset && !cpuset_base.empty() && effective.cpuset_mems.empty()) {
    effective.cpuset_mems = TrimmedCgroupValue(ReadFile(cpuset_base + "/cpuset.mems"));
  }
  std::vector<std::string> dirs;
  for (const auto& base : bases_) {
    // A v1 cpuset directory only for a task with cores to be held to
    // (exclusive or the shared pool): an empty one could not be joined, and
    // the others run in the worker's.
    if (base == cpuset_base && !wants_cpuset) continue;
    dirs.push_back(base + "/" + name);
  }
  auto cgroup = std::unique_ptr<TaskCgroup>(new TaskCgroup(name, layout_, dirs, dirs.front()));
  for (const auto& dir : dirs) {
    if (mkdir(dir.c_str(), 0755) != 0) {
      const int err = errno;
      (void)cgroup->Remove();  // best effort: the error below is what the caller needs
      return Status::Unavailable("cannot create cgroup " + dir + ": " + std::strerror(err));
    }
  }
  for (const auto& [file, value] : CgroupLimitFiles(layout_, effective)) {
    // v1 files name their hierarchy ("memory/..."); it may not be mounted.
    std::string path;
    if (layout_ == CgroupLayout::kV2) {
      path = dirs.front() + "/" + file;
    } else {
      const std::string hierarchy = file.substr(0, file.find('/'));
      for (const auto& dir : dirs) {
        if (dir.rfind(mount_root_ + "/" + hierarchy + "/", 0) == 0) path = dir + file.substr(file.find('/'));
      }
      if (path.empty()) continue;  // not mounted; device rules were checked above
    }
    if (!WriteFile(path, value)) {
      const int err = errno;
      (void)cgroup->Remove();  // best effort: the error below is what the caller needs
      return Status::Unavailable("cannot set " + path + " to " + value + ": " + std::strerror(err));
    }
  }
  if (layout_ == CgroupLayout::kV2 && !limits.deny_devices.empty()) {
    if (Status attached = AttachV2DeviceProgram(dirs.front(), V2DeviceProgram(limits.deny_devices)); !attached.ok()) {
      (void)cgroup->Remove();  // best effort: the error below is what the caller needs
      return attached.WithContext("the task's GPU device grant");
    }
  }
  for (const auto& dir : dirs) {
    const int fd = open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      (void)cgroup->Remove();  // best effort: the error below is what the caller needs
      return Status::Unavailable("cannot open " + dir + "/cgroup.procs: " + std::strerror(err));
    }
    cgroup->join_fds_.push_back(fd);
  }
  return cgroup;
}

Result<std::unique_ptr<TaskCgroup>> CgroupTree::CreateReplacing(const std::string& name, const CgroupLimits& limits,
                                                                size_t* killed) {
  *killed = 0;
  auto cgroup = Create(name, limits);
  if (cgroup.ok() || cgroup.status().code() != StatusCode::kAlreadyExists) return cgroup;
  auto old = Adopt(name);
  if (old != nullptr) {
    *killed = old->Pids().size();
    GPOOL_RETURN_IF_ERROR(old->Drain());
  }
  return Create(name, limits);
}

std::unique_ptr<TaskCgroup> CgroupTree::Adopt(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || !fs::is_directory(tracker_base_ + "/" + name)) {
    return nullptr;
  }
  std::vector<std::string> dirs;
  for (const auto& base : bases_) {
    if (fs::is_directory(base + "/" + name)) dirs.push_back(base + "/" + name);
  }
  return std::unique_ptr<TaskCgroup>(new TaskCgroup(name, layout_, dirs, tracker_base_ + "/" + name));
}

std::vector<std::pair<std::string, size_t>> CgroupTree::KillLeftovers(
    const std::function<bool(const std::string& name)>& keep) {
  std::vector<std::pair<std::string, size_t>> emptied;
  for (const auto& name : List()) {
    if (keep && keep(name)) continue;
    auto cgroup = Adopt(name);
    if (cgroup == nullptr) continue;
    const size_t left = cgroup->Pids().size();
    (void)cgroup->Drain();  // a cgroup still busy is found again at the next start
    emptied.emplace_back(name, left);
  }
  return emptied;
}

std::vector<std::string> CgroupTree::List() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(tracker_base_, ec)) {
    if (entry.is_directory(ec)) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace gpool::worker
