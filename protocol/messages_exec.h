// Exec messages: running a command inside a running task's context
// (`gpool exec`, and `gpool exec-rsh`, MPI's remote agent).
//
//   client --ExecStart{task}-->  coordinator --TaskExecStart{TaskId}--> worker
//   client --ExecPoll-->         coordinator --TaskExecPoll-->          worker
//   client --ExecSignal-->       coordinator --TaskExecSignal-->        worker
//
// The client names the task as the user does (its stable name or
// JOBID.INDEX); the coordinator resolves it, checks the caller may exec into
// that job, and relays to the node running it with the resolved TaskId. The
// worker answers with ExecStartReply / ExecPollReply / Ack, which the
// coordinator passes back. The coordinator keeps nothing per command: every
// poll and signal is resolved and authorised again, and the worker checks the
// exec id belongs to that task.
//
// Output is buffered on the worker per stream (bounded; a command whose
// reader falls behind blocks on its pipe). A poll's offsets acknowledge
// everything before them; the reply carries the bytes from there on and,
// once the command has ended and both streams are drained, its exit. A
// command nobody polls for lease_ms is killed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/bytes.h"
#include "protocol/messages_common.h"
#include "protocol/types.h"

namespace gpool {

// Limits every side enforces (InvalidArgument / ResourceExhausted beyond).
inline constexpr size_t kMaxExecArgs = 4096;
inline constexpr size_t kMaxExecCommandBytes = 256 * 1024;  // all of argv together
inline constexpr uint32_t kMinExecLeaseMs = 1000;
inline constexpr uint32_t kMaxExecLeaseMs = 600'000;

struct ExecStart {
  static constexpr MessageType kType = MessageType::kExecStart;
  std::string task;                  // "<job-name>-<group>-<index>" or "JOBID.INDEX"
  uint64_t job_id = 0;               // scopes a stable name to one job; 0: any job
  std::vector<std::string> command;  // argv; command[0] is looked up in the task's PATH
  uint32_t lease_ms = 10'000;        // killed when not polled for this long
  // Makes a retried start (the client resends after a timeout) the same
  // command: the node answers a start whose key it has seen for the task
  // with that command's exec id. Empty: no retry protection.
  std::string key;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Optional("job_id", job_id);
    v.Required("command", command);
    v.Optional("lease_ms", lease_ms);
    v.Optional("key", key);
  }
};

struct ExecStartReply {
  static constexpr MessageType kType = MessageType::kExecStartReply;
  uint64_t exec_id = 0;  // per worker process; names the command in polls and signals
  std::string task;      // the resolved TaskId as text, "JOB.INDEX" (filled by the coordinator)
  std::string node;      // where it runs (filled by the coordinator)
  int64_t pid = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("exec_id", exec_id);
    v.Optional("task", task);
    v.Optional("node", node);
    v.Optional("pid", pid);
  }
};

struct ExecPoll {
  static constexpr MessageType kType = MessageType::kExecPoll;
  std::string task;  // as in ExecStart
  uint64_t job_id = 0;
  uint64_t exec_id = 0;
  uint64_t stdout_offset = 0;  // bytes of stdout the client already has
  uint64_t stderr_offset = 0;
  uint32_t max_bytes = 256 * 1024;  // per stream
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Optional("job_id", job_id);
    v.Required("exec_id", exec_id);
    v.Optional("stdout_offset", stdout_offset);
    v.Optional("stderr_offset", stderr_offset);
    v.Optional("max_bytes", max_bytes);
  }
};

struct ExecPollReply {
  static constexpr MessageType kType = MessageType::kExecPollReply;
  wire::Bytes stdout_data;  // from stdout_offset on
  wire::Bytes stderr_data;  // from stderr_offset on
  uint64_t stdout_offset = 0;  // where stdout_data starts (the poll's offset)
  uint64_t stderr_offset = 0;
  bool exited = false;  // the command ended and both streams are drained
  int32_t exit_code = 0;  // 128+signal when killed
  int32_t signal = 0;
  std::string message;  // why the worker ended it, if it did ("lease expired", "the task ended")
  template <typename V>
  void Fields(V& v) {
    v.Optional("stdout", stdout_data);
    v.Optional("stderr", stderr_data);
    v.Optional("stdout_offset", stdout_offset);
    v.Optional("stderr_offset", stderr_offset);
    v.Optional("exited", exited);
    v.Optional("exit_code", exit_code);
    v.Optional("signal", signal);
    v.Optional("message", message);
  }
};

struct ExecSignal {
  static constexpr MessageType kType = MessageType::kExecSignal;
  std::string task;
  uint64_t job_id = 0;
  uint64_t exec_id = 0;
  int32_t signal = 15;  // SIGINT, SIGTERM, SIGKILL or SIGHUP
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Optional("job_id", job_id);
    v.Required("exec_id", exec_id);
    v.Optional("signal", signal);
  }
};

// Worker channel: the same requests with the task resolved.
struct TaskExecStart {
  static constexpr MessageType kType = MessageType::kTaskExecStart;
  TaskId task;
  std::vector<std::string> command;
  uint32_t lease_ms = 10'000;
  std::string key;  // ExecStart.key
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Required("command", command);
    v.Optional("lease_ms", lease_ms);
    v.Optional("key", key);
  }
};

struct TaskExecPoll {
  static constexpr MessageType kType = MessageType::kTaskExecPoll;
  TaskId task;
  uint64_t exec_id = 0;
  uint64_t stdout_offset = 0;
  uint64_t stderr_offset = 0;
  uint32_t max_bytes = 256 * 1024;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Required("exec_id", exec_id);
    v.Optional("stdout_offset", stdout_offset);
    v.Optional("stderr_offset", stderr_offset);
    v.Optional("max_bytes", max_bytes);
  }
};

struct TaskExecSignal {
  static constexpr MessageType kType = MessageType::kTaskExecSignal;
  TaskId task;
  uint64_t exec_id = 0;
  int32_t signal = 15;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Required("exec_id", exec_id);
    v.Optional("signal", signal);
  }
};

// Checks a command and lease as every side does: InvalidArgument for an
// empty command, an empty argv[0], a NUL byte or a lease out of range;
// ResourceExhausted for more than kMaxExecArgs arguments or
// kMaxExecCommandBytes bytes.
Status ValidateExecCommand(const std::vector<std::string>& command, uint32_t lease_ms);
// InvalidArgument for a start key longer than 128 bytes.
Status ValidateExecKey(const std::string& key);
// Whether `signal` is one exec forwards (SIGINT, SIGTERM, SIGKILL, SIGHUP).
Status ValidateExecSignal(int32_t signal);

}  // namespace gpool
