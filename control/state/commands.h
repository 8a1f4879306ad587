// The commands of the coordinator's replicated log.
//
// Every state change is one of these, encoded into a log entry, committed, and
// applied by ClusterState::Apply in log order on every replica. Commands carry
// everything apply needs (including the proposer's wall time), so applying the
// same log always yields the same state. The encoding is versioned by name:
// never change a field's meaning, only add optional fields.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "protocol/messages.h"
#include "topology/pending_reason.h"

namespace gpool::state {

struct RegisterNodeCmd {
  NodeSpec node;
  std::vector<TaskReport> tasks;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Optional("tasks", tasks);
  }
};

struct NodeStateCmd {
  std::string node;
  std::string state;  // NodeState name
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Required("state", state);
  }
};

struct SubmitJobCmd {
  JobSpec spec;
  std::string idempotency_key;
  template <typename V>
  void Fields(V& v) {
    v.Required("spec", spec);
    v.Optional("key", idempotency_key);
  }
};

struct CancelJobCmd {
  uint64_t job_id = 0;
  uint32_t grace_ms = 0;  // SIGTERM-to-SIGKILL time for running tasks; 0: the coordinator's default
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job_id);
    v.Optional("grace_ms", grace_ms);
  }
};

struct PlanBind {
  uint64_t job_id = 0;
  uint32_t task_index = 0;
  std::string node;
  std::vector<uint32_t> gpu_indices;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  DeviceGrant grant;
  int32_t numa_node = -1;
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job_id);
    v.Required("task", task_index);
    v.Required("node", node);
    v.Optional("gpus", gpu_indices);
    v.Optional("cpu", cpu_milli);
    v.Optional("mem", memory_mib);
    v.Optional("grant", grant);
    v.Optional("numa", numa_node);
  }
};

// Why a job is still pending. Entries written before reason codes carry
// text in "reasons"; they still replay (as text), new ones carry codes.
struct PlanReasons {
  uint64_t job_id = 0;
  std::vector<topology::PendingReason> reasons;
  std::vector<std::string> legacy_reasons;
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job_id);
    v.Optional("why", reasons);
    v.Optional("reasons", legacy_reasons);
  }
};

// Stop a running task so `for_job` can run; the task is requeued when it exits.
struct PlanEviction {
  uint64_t job_id = 0;
  uint32_t task_index = 0;
  uint64_t for_job = 0;
  std::string reason;
  template <typename V>
  void Fields(V& v) {
    v.Required("job", job_id);
    v.Required("task", task_index);
    v.Required("for", for_job);
    v.Optional("reason", reason);
  }
};

struct ApplyPlanCmd {
  std::vector<PlanBind> binds;
  std::vector<PlanReasons> reasons;
  std::vector<PlanEviction> evictions;
  template <typename V>
  void Fields(V& v) {
    v.Optional("binds", binds);
    v.Optional("reasons", reasons);
    v.Optional("evictions", evictions);
  }
};

struct TaskEventCmd {
  TaskEvent event;
  template <typename V>
  void Fields(V& v) {
    v.Required("event", event);
  }
};

// The coordinator's own decision that a bind cannot run as placed: the node
// it went to refused it (its GPUs changed, say). The task fails rather than
// the bind being resent forever. Not a task event: the worker said no such
// thing, and the log says who decided.
struct RefuseBindCmd {
  TaskId task;
  std::string node;
  std::string message;  // the worker's error
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Required("node", node);
    v.Optional("message", message);
  }
};

// An operator's change to a node (UpdateNode on the wire, validated there
// and again on apply).
struct UpdateNodeCmd {
  UpdateNode update;
  template <typename V>
  void Fields(V& v) {
    v.Required("update", update);
  }
};

// An operator's change to the queue tree (UpdateQueue on the wire).
struct UpdateQueueCmd {
  UpdateQueue update;
  template <typename V>
  void Fields(V& v) {
    v.Required("update", update);
  }
};

using CommandBody = std::variant<RegisterNodeCmd, NodeStateCmd, SubmitJobCmd, CancelJobCmd, ApplyPlanCmd,
                                 TaskEventCmd, UpdateNodeCmd, UpdateQueueCmd, RefuseBindCmd>;

struct Command {
  int64_t time_ms = 0;  // the proposer's wall clock; apply never reads a clock
  CommandBody body;
};

std::string EncodeCommand(const Command& command);
Result<Command> DecodeCommand(std::string_view bytes);
std::string_view CommandName(const CommandBody& body);

}  // namespace gpool::state
