// ExecManager: commands run inside running tasks (`gpool exec`,
// messages_exec.h), on the worker that runs the task.
//
// A command starts in its task's context, taken from the task's first
// process (/proc/<pid>): its environment (CUDA_VISIBLE_DEVICES, GPOOL_*,
// the MPI variables), working directory, mount namespace (the job's
// /etc/hosts), cgroup (so its CPU and memory limits hold, and the task's end
// ends it) and CPU affinity (task_exec.h ForkExec). Its stdout and stderr go
// to pipes this manager reads on every Tick into a buffer per stream of at
// most `buffer_bytes`; a full buffer is not read, so a command whose reader
// falls behind blocks on its pipe rather than growing the worker.
//
// A poll's offsets acknowledge the bytes before them (they are dropped) and
// the reply carries what follows; once the command's first process has
// ended (what is left of its process group is killed then, as with tasks)
// and both pipes are drained, the reply that empties the buffers says
// exited, with the exit status. A command nobody polls (or signals) for its
// lease is killed, and so is every command of a task that stops running;
// a finished command is forgotten one lease after its end or its last poll,
// whichever came later (so its client can still collect the exit).
//
// Thread-safety: one thread (the agent's loop). The task lookup, clock and
// logger are not owned and must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "protocol/base/clock.h"
#include "protocol/base/status.h"
#include "protocol/messages_exec.h"

namespace gpool::worker {

struct ExecManagerOptions {
  // The pid of the task's first process while it runs; an error (NotFound,
  // FailedPrecondition) saying why not otherwise. Required.
  std::function<Result<int64_t>(const TaskId&)> task_pid;
  const Clock* clock = nullptr;            // required
  std::shared_ptr<spdlog::logger> logger;  // nullptr: spdlog's default
  size_t max_commands = 256;               // live and finished ones kept; beyond: ResourceExhausted
  size_t buffer_bytes = 1 << 20;           // per stream
  std::string proc_root = "/proc";         // where the task's context is read
  std::string cgroup_root = "/sys/fs/cgroup";  // a cgroup v2 mount; the command joins the task's cgroup there
  int64_t drain_after_exit_ms = 2000;      // pipes still open this long after the exit are closed
};

class ExecManager {
 public:
  static Result<std::unique_ptr<ExecManager>> Open(ExecManagerOptions options);
  ~ExecManager();
  ExecManager(const ExecManager&) = delete;
  ExecManager& operator=(const ExecManager&) = delete;

  // Starts `request.command` in the task's context; a start whose key a
  // command of the task already has is answered with that command. FailedPrecondition /
  // NotFound when the task is not running here, InvalidArgument /
  // ResourceExhausted for a bad command or too many, the launch's error
  // when it cannot exec (e.g. NotFound: no such command).
  Result<ExecStartReply> Start(const TaskExecStart& request);
  // Output from the poll's offsets on, and the exit once drained. NotFound
  // for an unknown exec id or one of another task; InvalidArgument for an
  // offset outside what is buffered.
  Result<ExecPollReply> Poll(const TaskExecPoll& request);
  // Signals the command's process group; Ok for one that already ended.
  Status Signal(const TaskExecSignal& request);

  // Reads pipes, reaps, kills commands past their lease or whose task
  // ended, forgets finished ones. Call every loop turn.
  void Tick();

  size_t live() const;
  size_t size() const { return sessions_.size(); }

 private:
  struct Stream {
    int fd = -1;
    std::string buffer;
    uint64_t base = 0;  // offset of buffer[0] in the whole output
    bool eof() const { return fd < 0; }
  };
  struct Session {
    TaskId task;
    int64_t pid = 0;
    Stream out;
    Stream err;
    bool reaped = false;
    int32_t exit_code = 0;
    int32_t signal = 0;
    std::string message;
    uint32_t lease_ms = 0;
    std::string key;  // TaskExecStart.key: a retried start finds this command
    int64_t last_poll_ms = 0;
    int64_t reaped_ms = 0;
    bool Done() const { return reaped && out.eof() && err.eof(); }
  };

  explicit ExecManager(ExecManagerOptions options);
  Result<Session*> Find(const TaskId& task, uint64_t exec_id);
  void ReadStream(Stream& stream);
  void Kill(uint64_t id, Session& session, const std::string& why);
  static void Close(Stream& stream);

  ExecManagerOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<uint64_t, Session> sessions_;  // by exec id
  uint64_t next_id_ = 1;
};

}  // namespace gpool::worker
