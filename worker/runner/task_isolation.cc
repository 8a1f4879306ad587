#include "worker/runner/task_isolation.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <set>

#include "protocol/messages_worker.h"
#include "protocol/model/run_as.h"
#include "worker/runner/task_cgroup.h"
#include "worker/runner/vendor_device_nodes.h"

namespace gpool::worker {
namespace {

constexpr uint32_t kNobody = 65534;
// How many /dev/nvidia<i> nodes are looked for beyond the spec's GPUs.
constexpr uint32_t kMaxGpuNodes = 64;

bool ParseId(std::string_view text, uint32_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Creates `path` as a directory if missing and makes it `mode`, owned by
// uid:gid. The chown and chmod go through a descriptor opened without
// following links, so a link planted in the tasks directory cannot point
// them elsewhere.
Status OwnDir(const std::string& path, mode_t mode, uint32_t uid, uint32_t gid) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return Status::IoError("cannot create " + path + ": " + std::strerror(errno));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  const bool ok = fchown(fd, uid, gid) == 0 && fchmod(fd, mode) == 0;
  const int err = errno;
  close(fd);
  if (!ok) return Status::IoError("cannot give " + path + " to uid " + std::to_string(uid) + ": " + std::strerror(err));
  return Status::Ok();
}

Status OwnFile(const std::string& path, mode_t mode, uint32_t uid, uint32_t gid) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return Status::IoError("cannot create " + path + ": " + std::strerror(errno));
  const bool ok = fchown(fd, uid, gid) == 0 && fchmod(fd, mode) == 0;
  const int err = errno;
  close(fd);
  if (!ok) return Status::IoError("cannot give " + path + " to uid " + std::to_string(uid) + ": " + std::strerror(err));
  return Status::Ok();
}

}  // namespace

Result<TaskIdentity> ParseTaskUser(const std::string& value, bool* allow_root) {
  TaskIdentity id;
  id.set = true;
  const std::string user = value.substr(0, value.find(':'));
  const std::string group = value.find(':') == std::string::npos ? "" : value.substr(value.find(':') + 1);
  if (ParseId(user, &id.uid)) {
    id.gid = id.uid;
    if (!group.empty() && !ParseId(group, &id.gid)) {
      return Status::InvalidArgument("--task-user: '" + group + "' is not a group number");
    }
    id.user = user;
  } else {
    if (user.empty() || !group.empty()) {
      return Status::InvalidArgument("--task-user: '" + value + "' is neither a user name nor UID[:GID]");
    }
    struct passwd pw {};
    struct passwd* found = nullptr;
    char buffer[4096];
    if (getpwnam_r(user.c_str(), &pw, buffer, sizeof(buffer), &found) == 0 && found != nullptr) {
      id.uid = found->pw_uid;
      id.gid = found->pw_gid;
    } else if (user == "nobody") {
      id.uid = id.gid = kNobody;  // a minimal image without /etc/passwd
    } else {
      return Status::NotFound("--task-user: no user '" + user + "' in the passwd database");
    }
    id.user = user;
  }
  *allow_root = id.uid == 0;
  return id;
}

Result<TaskIdentity> IdentityFor(const RunAs& run_as, const TaskIsolationOptions& options) {
  // Issue 48: nobody is never a task owner. The coordinator maps a user
  // without a uid of its own (one from before uids were allocated) to it.
  if (run_as.set() && run_as.uid == kNobody) {
    return Status::FailedPrecondition("the task's owner " + run_as.user +
                                      " has no uid of its own (it maps to 65534, nobody, never a task owner); an "
                                      "admin gives it one: gpool admin user update " + run_as.user);
  }
  TaskIdentity id = options.default_identity;
  if (run_as.set()) id = TaskIdentity{.set = true, .uid = run_as.uid, .gid = run_as.gid, .user = run_as.user};
  if ((id.uid == 0 || id.gid == 0) && !options.allow_root) {
    return Status::FailedPrecondition("task would run as uid " + std::to_string(id.uid) + " gid " +
                                    std::to_string(id.gid) + " (" + id.user +
                                    "): this worker runs tasks as root only with --task-user root");
  }
  return id;
}

std::string TaskWorkDir(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".work";
}

Status ApplyTaskIsolation(const TaskIsolationOptions& options, const std::string& log_dir, const TaskId& task,
                          const BindTask& bind, const NodeSpec& node, const std::vector<std::string>& owned_files,
                          LaunchRequest& request) {
  if (!options.enabled) return Status::Ok();
  auto id = IdentityFor(bind.run_as, options);
  if (!id.ok()) return id.status();
  request.identity = *id;
  request.own_pid_namespace = options.pid_namespace;
  // The tasks directory: reachable, not listable, by tasks.
  if (chmod(log_dir.c_str(), 0711) != 0) {
    return Status::IoError("cannot make " + log_dir + " 0711: " + std::strerror(errno));
  }
  request.work_dir = TaskWorkDir(log_dir, task);
  GPOOL_RETURN_IF_ERROR(OwnDir(request.work_dir, 0700, id->uid, id->gid));
  // A temp dir of its own: tasks of one owner on a node would otherwise
  // share /tmp, and each task's PID namespace numbers its processes from 1,
  // so names made from a pid collide there (Open MPI's session directories
  // did: "File exists" when two tasks' orteds had the same pid).
  const std::string tmp = request.work_dir + "/tmp";
  GPOOL_RETURN_IF_ERROR(OwnDir(tmp, 0700, id->uid, id->gid));
  std::erase_if(request.env, [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; });
  request.env.push_back("TMPDIR=" + tmp);
  for (const std::string& path : owned_files) GPOOL_RETURN_IF_ERROR(OwnFile(path, 0600, id->uid, id->gid));
  // The state directory holds the job's env (its secrets): root's alone.
  if (!request.state_dir.empty() && chmod(request.state_dir.c_str(), 0700) != 0) {
    return Status::IoError("cannot make " + request.state_dir + " 0700: " + std::strerror(errno));
  }
  std::vector<DeviceNodeAccess> device_nodes;
  if (!options.gpu_device_nodes.empty()) {
    // Every GPU node the pattern names, not only the spec's GPUs: a GPU
    // left out of the node spec (or not reported) must not be reachable
    // either. Indices past kMaxGpuNodes are the spec's only.
    std::set<uint32_t> indices;
    for (uint32_t i = 0; i < kMaxGpuNodes; ++i) indices.insert(i);
    for (const GpuInfo& gpu : node.gpus) {
      if (gpu.vendor == "nvidia") indices.insert(gpu.index);
    }
    const std::set<uint32_t> granted(bind.gpu_indices.begin(), bind.gpu_indices.end());
    for (uint32_t i : indices) {
      device_nodes.push_back({GpuDeviceNodePath(options.gpu_device_nodes, i), granted.count(i) > 0});
    }
  }
  if (!options.vendor_device_root.empty()) {
    for (DeviceNodeAccess& access : VendorDeviceNodes(bind, node, options.vendor_device_root)) {
      device_nodes.push_back(std::move(access));
    }
  }
  if (!device_nodes.empty()) request.limits.deny_devices = DenyRulesForNodes(device_nodes);
  return Status::Ok();
}

}  // namespace gpool::worker
