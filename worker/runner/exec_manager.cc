#include "worker/runner/exec_manager.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "protocol/base/text.h"
#include "protocol/messages_exec.h"
#include "worker/log.h"
#include "worker/runner/proc_stat.h"
#include "worker/runner/task_exec.h"

namespace gpool::worker {
namespace {

constexpr size_t kMaxEnvironBytes = 4 << 20;

// Descriptors opened from the task's /proc entry, closed when it goes.
struct OpenedContext {
  std::vector<std::string> env;
  ExecContext exec;
  std::vector<int> cgroup_fds;
  OpenedContext() = default;
  OpenedContext(const OpenedContext&) = delete;
  OpenedContext& operator=(const OpenedContext&) = delete;
  ~OpenedContext() {
    for (int fd : {exec.cwd_fd, exec.mnt_ns_fd, exec.pid_ns_fd}) {
      if (fd >= 0) close(fd);
    }
    for (int fd : cgroup_fds) close(fd);
  }
};

Result<std::string> ReadSmallFile(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FailedPrecondition("cannot read " + path + ": " + std::strerror(errno));
  std::string data(limit, '\0');
  in.read(data.data(), static_cast<std::streamsize>(limit));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

// The cgroup v2 path of `pid` ("0::/path" in /proc/<pid>/cgroup); empty when none.
std::string CgroupV2Path(const std::string& proc, int64_t pid) {
  auto text = ReadSmallFile(proc + "/" + std::to_string(pid) + "/cgroup", 64 * 1024);
  if (!text.ok()) return {};
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

// The v1 cgroups of `pid` by hierarchy ("4:memory:/path" in
// /proc/<pid>/cgroup; named hierarchies such as name=systemd left out).
std::map<std::string, std::string> CgroupV1Paths(const std::string& proc, int64_t pid) {
  std::map<std::string, std::string> out;
  auto text = ReadSmallFile(proc + "/" + std::to_string(pid) + "/cgroup", 64 * 1024);
  if (!text.ok()) return out;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos || b == a + 1 || line.compare(a + 1, 5, "name=") == 0) continue;
    out[line.substr(a + 1, b - a - 1)] = line.substr(b + 1);
  }
  return out;
}

// The first field of the "Uid:" / "Gid:" line of /proc/<pid>/status.
bool ReadIds(const std::string& dir, uint32_t* uid, uint32_t* gid) {
  auto text = ReadSmallFile(dir + "/status", 64 * 1024);
  if (!text.ok()) return false;
  bool have_uid = false, have_gid = false;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "Uid:") have_uid = static_cast<bool>(fields >> *uid);
    if (key == "Gid:") have_gid = static_cast<bool>(fields >> *gid);
  }
  return have_uid && have_gid;
}

// A task in its own PID namespace has its init as first process, a fork of
// its supervisor: the environment the task was started with is its child's.
int64_t FirstChild(const std::string& proc, int64_t pid) {
  std::error_code ec;
  int64_t first = 0;
  for (const auto& entry : std::filesystem::directory_iterator(proc, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int64_t candidate = std::stoll(name);
    auto stat = ReadProcStat(proc, candidate);
    if (stat && stat->ppid == pid && (first == 0 || candidate < first)) first = candidate;
  }
  return first;
}

bool SameNamespace(const std::string& dir, const char* ns) {
  struct stat own {}, theirs {};
  return stat((std::string("/proc/self/ns/") + ns).c_str(), &own) == 0 &&
         stat((dir + "/ns/" + ns).c_str(), &theirs) == 0 && own.st_ino == theirs.st_ino;
}

// What a command needs of its task's context (exec_manager.h). The
// namespaces and the cgroups are entered only where they differ from the
// worker's own: a task that has none of its own shares the worker's. A
// task run as another user (issue 31) has its commands run as that user.
Status OpenContext(const ExecManagerOptions& options, int64_t pid, OpenedContext& out) {
  const std::string dir = options.proc_root + "/" + std::to_string(pid);
  const bool own_pid_ns = geteuid() == 0 && !SameNamespace(dir, "pid");
  int64_t env_pid = pid;
  if (own_pid_ns) {
    env_pid = FirstChild(options.proc_root, pid);
    if (env_pid == 0) return Status::FailedPrecondition("the task's program is not running");
  }
  auto environ = ReadSmallFile(options.proc_root + "/" + std::to_string(env_pid) + "/environ", kMaxEnvironBytes);
  if (!environ.ok()) return Status::FailedPrecondition("cannot read the task's environment: " + environ.status().message());
  for (size_t start = 0; start < environ->size();) {
    size_t end = environ->find('\0', start);
    if (end == std::string::npos) end = environ->size();
    std::string entry = environ->substr(start, end - start);
    if (entry.find('=') != std::string::npos && entry.front() != '=') out.env.push_back(std::move(entry));
    start = end + 1;
  }
  out.exec.cwd_fd = open((dir + "/cwd").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (geteuid() == 0 && !SameNamespace(dir, "mnt")) {
    out.exec.mnt_ns_fd = open((dir + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (own_pid_ns) {
    out.exec.pid_ns_fd = open((dir + "/ns/pid").c_str(), O_RDONLY | O_CLOEXEC);
    if (out.exec.pid_ns_fd < 0) {
      return Status::FailedPrecondition(std::string("cannot open the task's PID namespace: ") + std::strerror(errno));
    }
  }
  uint32_t uid = 0, gid = 0;
  if (geteuid() == 0 && ReadIds(dir, &uid, &gid) && uid != 0) {
    out.exec.identity = TaskIdentity{.set = true, .uid = uid, .gid = gid};
  }
  const std::string cgroup = CgroupV2Path(options.proc_root, pid);
  if (!cgroup.empty() && cgroup != "/" && cgroup != CgroupV2Path(options.proc_root, getpid())) {
    const int fd = open((options.cgroup_root + cgroup + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) out.cgroup_fds.push_back(fd);
  }
  // v1: every hierarchy the task has a cgroup of its own in (its device
  // rules, limits and freezer hold for the command too).
  const auto own_v1 = CgroupV1Paths(options.proc_root, getpid());
  for (const auto& [hierarchy, path] : CgroupV1Paths(options.proc_root, pid)) {
    const auto it = own_v1.find(hierarchy);
    if (path == "/" || (it != own_v1.end() && it->second == path)) continue;
    const int fd = open((options.cgroup_root + "/" + hierarchy + path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) out.cgroup_fds.push_back(fd);
  }
  if (sched_getaffinity(static_cast<pid_t>(pid), sizeof(out.exec.affinity), &out.exec.affinity) == 0) {
    out.exec.has_affinity = true;
  }
  return Status::Ok();
}

std::string Argv0(const std::vector<std::string>& command) { return command.empty() ? "" : command[0].substr(0, 128); }

}  // namespace

Result<std::unique_ptr<ExecManager>> ExecManager::Open(ExecManagerOptions options) {
  if (!options.task_pid) return Status::InvalidArgument("ExecManager: task_pid is required");
  if (options.clock == nullptr) return Status::InvalidArgument("ExecManager: clock is required");
  if (options.buffer_bytes == 0) return Status::InvalidArgument("ExecManager: buffer_bytes must be positive");
  return std::unique_ptr<ExecManager>(new ExecManager(std::move(options)));
}

ExecManager::ExecManager(ExecManagerOptions options)
    : options_(std::move(options)), log_(OrDefault(options_.logger)) {}

ExecManager::~ExecManager() {
  // Commands die with the worker anyway (PR_SET_PDEATHSIG); say so now and reap.
  for (auto& [id, session] : sessions_) {
    if (!session.reaped) {
      kill(-static_cast<pid_t>(session.pid), SIGKILL);
      int status = 0;
      while (waitpid(static_cast<pid_t>(session.pid), &status, 0) < 0 && errno == EINTR) {
      }
    }
    Close(session.out);
    Close(session.err);
  }
}

void ExecManager::Close(Stream& stream) {
  if (stream.fd >= 0) close(stream.fd);
  stream.fd = -1;
}

size_t ExecManager::live() const {
  size_t n = 0;
  for (const auto& [id, session] : sessions_) n += session.reaped ? 0 : 1;
  return n;
}

Result<ExecStartReply> ExecManager::Start(const TaskExecStart& request) {
  GPOOL_RETURN_IF_ERROR(ValidateExecCommand(request.command, request.lease_ms));
  GPOOL_RETURN_IF_ERROR(ValidateExecKey(request.key));
  if (!request.key.empty()) {
    // A client's retry of a start that did run: the same command.
    for (auto& [id, session] : sessions_) {
      if (session.key == request.key && session.task == request.task) {
        session.last_poll_ms = options_.clock->MonoMs();
        log_->info("exec start repeated, same command task={} exec_id={}", request.task.ToString(), id);
        ExecStartReply reply;
        reply.exec_id = id;
        reply.pid = session.pid;
        return reply;
      }
    }
  }
  auto pid = options_.task_pid(request.task);
  if (!pid.ok()) return pid.status();
  if (sessions_.size() >= options_.max_commands) {
    return Status::ResourceExhausted("node already holds " + std::to_string(sessions_.size()) +
                                     " exec commands; wait for some to end");
  }
  OpenedContext context;
  GPOOL_RETURN_IF_ERROR(OpenContext(options_, *pid, context));
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe2: ") + std::strerror(errno));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Status::IoError(std::string("pipe2: ") + std::strerror(err));
  }
  context.exec.stdout_fd = out_pipe[1];
  context.exec.stderr_fd = err_pipe[1];
  LaunchRequest launch;
  launch.argv = request.command;
  launch.env = context.env;
  auto forked = ForkExec(launch, context.exec, context.cgroup_fds);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (!forked.ok()) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    log_->info("exec failed to start task={} argv0={} error={}", request.task.ToString(), Q(Argv0(request.command)),
               Q(forked.status().ToString()));
    return forked.status();
  }
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  const uint64_t id = next_id_++;
  Session& session = sessions_[id];
  session.task = request.task;
  session.pid = forked->pid;
  session.out.fd = out_pipe[0];
  session.err.fd = err_pipe[0];
  session.lease_ms = request.lease_ms;
  session.key = request.key;
  session.last_poll_ms = options_.clock->MonoMs();
  log_->info("exec started task={} exec_id={} pid={} argv0={} args={} lease_ms={} cgroup={} own_mount_ns={} "
             "own_pid_ns={} uid={}",
             request.task.ToString(), id, forked->pid, Q(Argv0(request.command)), request.command.size(),
             request.lease_ms, !context.cgroup_fds.empty(), context.exec.mnt_ns_fd >= 0, context.exec.pid_ns_fd >= 0,
             context.exec.identity.set ? std::to_string(context.exec.identity.uid) : "worker");
  ExecStartReply reply;
  reply.exec_id = id;
  reply.pid = forked->pid;
  return reply;
}

Result<ExecManager::Session*> ExecManager::Find(const TaskId& task, uint64_t exec_id) {
  auto it = sessions_.find(exec_id);
  if (it == sessions_.end() || it->second.task != task) {
    return Status::NotFound("no exec " + std::to_string(exec_id) + " in task " + task.ToString() +
                            " on this node (it ended and was forgotten, or the worker restarted)");
  }
  return &it->second;
}

Result<ExecPollReply> ExecManager::Poll(const TaskExecPoll& request) {
  auto found = Find(request.task, request.exec_id);
  if (!found.ok()) return found.status();
  Session& session = **found;
  session.last_poll_ms = options_.clock->MonoMs();
  ExecPollReply reply;
  bool all = true;
  for (auto [stream, offset, data, at, name] :
       {std::tuple{&session.out, request.stdout_offset, &reply.stdout_data, &reply.stdout_offset, "stdout"},
        std::tuple{&session.err, request.stderr_offset, &reply.stderr_data, &reply.stderr_offset, "stderr"}}) {
    if (offset < stream->base || offset > stream->base + stream->buffer.size()) {
      return Status::InvalidArgument(std::string(name) + "_offset: " + std::to_string(offset) +
                                     " is outside the buffered output [" + std::to_string(stream->base) + ", " +
                                     std::to_string(stream->base + stream->buffer.size()) + "]");
    }
    stream->buffer.erase(0, offset - stream->base);
    stream->base = offset;
    const size_t n = std::min<size_t>(stream->buffer.size(), request.max_bytes);
    *data = wire::Bytes(stream->buffer.substr(0, n));
    *at = offset;
    all = all && n == stream->buffer.size();
  }
  if (session.Done() && all) {
    reply.exited = true;
    reply.exit_code = session.exit_code;
    reply.signal = session.signal;
    reply.message = session.message;
  }
  return reply;
}

Status ExecManager::Signal(const TaskExecSignal& request) {
  GPOOL_RETURN_IF_ERROR(ValidateExecSignal(request.signal));
  auto found = Find(request.task, request.exec_id);
  if (!found.ok()) return found.status();
  Session& session = **found;
  session.last_poll_ms = options_.clock->MonoMs();
  if (session.reaped) return Status::Ok();
  if (kill(-static_cast<pid_t>(session.pid), request.signal) != 0 && errno != ESRCH) {
    return Status::Internal(std::string("kill: ") + std::strerror(errno));
  }
  log_->info("exec signalled task={} exec_id={} pid={} signal={}", request.task.ToString(), request.exec_id,
             session.pid, request.signal);
  return Status::Ok();
}

void ExecManager::ReadStream(Stream& stream) {
  char chunk[16 * 1024];
  while (stream.fd >= 0 && stream.buffer.size() < options_.buffer_bytes) {
    const size_t room = std::min(sizeof(chunk), options_.buffer_bytes - stream.buffer.size());
    const ssize_t n = read(stream.fd, chunk, room);
    if (n > 0) {
      stream.buffer.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    Close(stream);  // EOF or a read error: nothing more will come
  }
}

void ExecManager::Kill(uint64_t id, Session& session, const std::string& why) {
  if (session.reaped || !session.message.empty()) return;
  session.message = why;
  kill(-static_cast<pid_t>(session.pid), SIGKILL);
  log_->warn("exec killed task={} exec_id={} pid={} reason={}", session.task.ToString(), id, session.pid, Q(why));
}

void ExecManager::Tick() {
  const int64_t now = options_.clock->MonoMs();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const uint64_t id = it->first;
    Session& session = it->second;
    ReadStream(session.out);
    ReadStream(session.err);
    if (!session.reaped) {
      int status = 0;
      const pid_t done = waitpid(static_cast<pid_t>(session.pid), &status, WNOHANG);
      if (done == static_cast<pid_t>(session.pid)) {
        session.reaped = true;
        session.reaped_ms = now;
        session.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        session.exit_code = WIFSIGNALED(status) ? 128 + session.signal : WEXITSTATUS(status);
        // A command ends with its first process, as a task does: what it
        // left in its process group would hold the pipes open.
        kill(-static_cast<pid_t>(session.pid), SIGKILL);
        log_->info("exec exited task={} exec_id={} pid={} exit_code={} signal={}", session.task.ToString(), id,
                   session.pid, session.exit_code, session.signal);
      } else if (now - session.last_poll_ms > session.lease_ms) {
        Kill(id, session, "lease expired: nobody polled the command for " + std::to_string(session.lease_ms) + " ms");
      } else if (!options_.task_pid(session.task).ok()) {
        Kill(id, session, "the task ended");
      }
    }
    if (session.reaped && !session.Done() && now - session.reaped_ms >= options_.drain_after_exit_ms) {
      Close(session.out);  // something escaped its process group and holds the pipe
      Close(session.err);
    }
    if (session.Done() && now - std::max(session.last_poll_ms, session.reaped_ms) > session.lease_ms) {
      log_->debug("exec forgotten task={} exec_id={}", session.task.ToString(), id);
      it = sessions_.erase(it);
      continue;
    }
    ++it;
  }
}

}  // namespace gpool::worker
