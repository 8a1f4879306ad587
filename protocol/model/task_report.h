// What a worker says about its tasks, as the coordinator's state and its
// replicated log keep it: a task's report on registration and the events of
// its life (started, exited, failed, lost). TaskEvent also travels as it is
// on the worker channel, and so carries its MessageType tag.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/message_type.h"
#include "protocol/types.h"

namespace gpool {

// What a worker knows about one of its tasks; sent on registration so a
// restarted coordinator (or a restarted worker) can reconcile.
struct TaskReport {
  TaskId task;
  // Running or a terminal state; on the wire by name ("Running", "Failed").
  TaskState state = TaskState::kRunning;
  int64_t pid = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
  // The worker's wall times of its start and (terminal) its end, from the
  // events it has not had acknowledged; 0: not known. Usage accounting
  // charges from these when a registration is the first the coordinator
  // hears of them (issue 34).
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("task", task);
    v.Required("state", state);
    v.Optional("pid", pid);
    v.Optional("exit_code", exit_code);
    v.Optional("signal", signal);
    v.Optional("start_ms", start_ms);
    v.Optional("finish_ms", finish_ms);
  }
};

// Worker -> coordinator: a task started, exited or could not start. Sent
// until acknowledged with TaskEventAck carrying the same seq.
struct TaskEvent {
  static constexpr MessageType kType = MessageType::kTaskEvent;
  std::string node;
  uint64_t seq = 0;  // per worker process, increasing
  TaskId task;
  TaskEventKind kind = TaskEventKind::kStarted;  // by name: "started" | "exited" | "failed" | "lost"
  int64_t pid = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
  int64_t time_ms = 0;
  std::string message;
  // "started" of an rGPU session's server: where it listens and its key.
  std::string rgpu_endpoint;
  std::string rgpu_server_key;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Required("seq", seq);
    v.Required("task", task);
    v.Required("kind", kind);
    v.Optional("pid", pid);
    v.Optional("exit_code", exit_code);
    v.Optional("signal", signal);
    v.Optional("time_ms", time_ms);
    v.Optional("message", message);
    v.Optional("rgpu_endpoint", rgpu_endpoint);
    v.Optional("rgpu_server_key", rgpu_server_key);
  }
};

// Why a worker stopped a task that reached its max_runtime_ms; the task's
// exit event says "stopped by the worker: time limit".
inline constexpr char kTimeLimitReason[] = "time limit";
inline bool StoppedForTimeLimit(std::string_view exit_message) {
  constexpr std::string_view kSuffix = "stopped by the worker: time limit";
  return exit_message.size() >= kSuffix.size() && exit_message.substr(exit_message.size() - kSuffix.size()) == kSuffix;
}

// Why a worker refused to start a GPU-share task that nothing on its node
// could hold to its share (worker/runner/share_enforcement.h: the CUDA
// interposer or the intercept library missing, and the operator did not
// allow unenforced shares); the task's failure message starts with it.
inline constexpr char kUnenforceableShareReason[] = "GPU share cannot be enforced on this node";
inline bool RefusedUnenforceableShare(std::string_view message) {
  return message.find(kUnenforceableShareReason) != std::string_view::npos;
}

// Why a worker stopped a GPU-share task whose sampled GPU memory exceeded
// its share (worker/runner/share_enforcement.h); its exit event says
// "stopped by the worker: GPU memory <n> MiB over its share of <m> MiB
// (<why>)". Like a time limit, it would happen again: no restart.
inline bool StoppedOverShare(std::string_view exit_message) {
  constexpr std::string_view kStart = "stopped by the worker: GPU memory ";
  const size_t at = exit_message.find(kStart);
  return at != std::string_view::npos && exit_message.find(" over its share of ", at) != std::string_view::npos;
}

}  // namespace gpool
