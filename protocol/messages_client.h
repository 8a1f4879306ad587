// Client API messages about jobs and their tasks (client -> coordinator, port
// 7400): submit, list, get, cancel, and a task's log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/bytes.h"
#include "protocol/messages_common.h"
#include "protocol/types.h"

namespace gpool {

// --- Client API ------------------------------------------------------------

struct SubmitJob {
  static constexpr MessageType kType = MessageType::kSubmitJob;
  JobSpec spec;
  // Client-chosen; a retried submission with the same key returns the first
  // job's id instead of creating a second job. Empty: no deduplication.
  std::string idempotency_key;
  template <typename V>
  void Fields(V& v) {
    v.Required("spec", spec);
    v.Optional("idempotency_key", idempotency_key);
  }
};

struct SubmitJobReply {
  static constexpr MessageType kType = MessageType::kSubmitJobReply;
  uint64_t job_id = 0;
  bool duplicate = false;  // true when the idempotency key matched an earlier job
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Optional("duplicate", duplicate);
  }
};

struct ListJobs {
  static constexpr MessageType kType = MessageType::kListJobs;
  bool include_finished = true;
  uint32_t limit = 1000;  // newest jobs first; 0 means all
  bool sessions_only = false;  // only rGPU sessions (the limit counts those)
  template <typename V>
  void Fields(V& v) {
    v.Optional("include_finished", include_finished);
    v.Optional("limit", limit);
    v.Optional("sessions_only", sessions_only);
  }
};

struct JobSummary {
  uint64_t job_id = 0;
  std::string name;
  std::string queue;
  int32_t priority = 0;
  std::string state;  // JobState name
  uint32_t tasks_total = 0;
  uint32_t tasks_running = 0;
  uint32_t tasks_finished = 0;
  uint32_t gpus = 0;  // GPUs the whole job asks for
  int64_t submit_ms = 0;
  int64_t start_ms = 0;   // 0: not started
  int64_t finish_ms = 0;  // 0: not finished
  std::string reason;     // first pending reason, or the failure reason
  std::string priority_class;  // high, medium or low
  uint32_t restarts = 0;       // requeues under its restart policy so far
  std::string restart_reason;  // why the last one happened
  SessionInfo session;         // state empty: not an rGPU session
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Required("name", name);
    v.Optional("queue", queue);
    v.Optional("priority", priority);
    v.Required("state", state);
    v.Optional("tasks_total", tasks_total);
    v.Optional("tasks_running", tasks_running);
    v.Optional("tasks_finished", tasks_finished);
    v.Optional("gpus", gpus);
    v.Optional("submit_ms", submit_ms);
    v.Optional("start_ms", start_ms);
    v.Optional("finish_ms", finish_ms);
    v.Optional("reason", reason);
    v.Optional("priority_class", priority_class);
    v.Optional("restarts", restarts);
    v.Optional("restart_reason", restart_reason);
    v.Optional("session", session);
  }
};

struct ListJobsReply {
  static constexpr MessageType kType = MessageType::kListJobsReply;
  std::vector<JobSummary> jobs;
  template <typename V>
  void Fields(V& v) {
    v.Required("jobs", jobs);
  }
};

struct GetJob {
  static constexpr MessageType kType = MessageType::kGetJob;
  uint64_t job_id = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
  }
};

struct TaskInfo {
  uint32_t index = 0;
  uint32_t attempt = 0;
  std::string group;
  std::string state;  // TaskState name
  std::string node;   // empty while pending
  std::vector<uint32_t> gpu_indices;
  std::vector<std::string> gpu_uuids;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  int64_t pid = 0;
  int32_t exit_code = 0;  // valid in Succeeded/Failed
  int32_t signal = 0;     // non-zero when killed by a signal
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  std::string message;
  DeviceGrant grant;                 // its share of the GPUs, MIG instance or cores; empty: whole GPUs
  int64_t gpu_memory_used_mib = -1;  // as its worker last measured it; -1 unknown
  template <typename V>
  void Fields(V& v) {
    v.Required("index", index);
    v.Optional("attempt", attempt);
    v.Optional("group", group);
    v.Required("state", state);
    v.Optional("node", node);
    v.Optional("gpu_indices", gpu_indices);
    v.Optional("gpu_uuids", gpu_uuids);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("pid", pid);
    v.Optional("exit_code", exit_code);
    v.Optional("signal", signal);
    v.Optional("start_ms", start_ms);
    v.Optional("grant", grant);
    v.Optional("gpu_memory_used_mib", gpu_memory_used_mib);
    v.Optional("finish_ms", finish_ms);
    v.Optional("message", message);
  }
};

struct GetJobReply {
  static constexpr MessageType kType = MessageType::kGetJobReply;
  JobSummary summary;
  JobSpec spec;
  std::vector<TaskInfo> tasks;
  std::vector<std::string> reasons;  // why the job is pending, aggregated over nodes
  // Issue 50: each group with scale rules, in spec order; empty for a job
  // without them (and from a coordinator that predates them).
  std::vector<GroupScaleStatus> scale;
  template <typename V>
  void Fields(V& v) {
    v.Required("summary", summary);
    v.Required("spec", spec);
    v.Required("tasks", tasks);
    v.Optional("reasons", reasons);
    v.Optional("scale", scale);
  }
};

struct CancelJob {
  static constexpr MessageType kType = MessageType::kCancelJob;
  uint64_t job_id = 0;
  uint32_t grace_ms = 10'000;  // SIGTERM, then SIGKILL after this long
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Optional("grace_ms", grace_ms);
  }
};

struct CancelJobReply {
  static constexpr MessageType kType = MessageType::kCancelJobReply;
  uint64_t job_id = 0;
  std::string state;  // the job's state after the cancel was committed
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Required("state", state);
  }
};

struct GetTaskLog {
  static constexpr MessageType kType = MessageType::kGetTaskLog;
  uint64_t job_id = 0;
  uint32_t task_index = 0;
  uint32_t max_bytes = 64 * 1024;  // the tail of the log, at most this many bytes
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Required("task_index", task_index);
    v.Optional("max_bytes", max_bytes);
  }
};

struct GetTaskLogReply {
  static constexpr MessageType kType = MessageType::kGetTaskLogReply;
  wire::Bytes data;  // the tail of the task's stdout+stderr, raw bytes (msgpack bin)
  uint64_t size = 0;  // full size of the log file
  bool truncated = false;
  uint64_t dropped = 0;  // bytes the node's log cap moved out of the file before `data`
  template <typename V>
  void Fields(V& v) {
    v.Required("data", data);
    v.Optional("size", size);
    v.Optional("truncated", truncated);
    v.Optional("dropped", dropped);
  }
};

// Keeps an rGPU session's lease (SessionSpec::lease_ms) alive: its owner's
// client sends it while the session is in use.
struct RenewSession {
  static constexpr MessageType kType = MessageType::kRenewSession;
  uint64_t job_id = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
  }
};

struct RenewSessionReply {
  static constexpr MessageType kType = MessageType::kRenewSessionReply;
  uint64_t job_id = 0;
  SessionInfo session;  // as it is after the renewal
  template <typename V>
  void Fields(V& v) {
    v.Required("job_id", job_id);
    v.Optional("session", session);
  }
};

}  // namespace gpool
