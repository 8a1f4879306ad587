// TaskManager's wait for an rGPU session's server to report its endpoint
// (rgpu_server.h, issue 47). The server binds a port of its own choice and
// writes the endpoint to a file; the file is read on the loop's turns (one
// open() per waiting session, every poll_ms), never waited on, so the agent
// keeps heartbeating while a server loads its driver. The session's
// "started" event is emitted once the endpoint is known, since clients can
// do nothing with a session before that. A server that reports nothing
// within ready_timeout_ms, or something that is not an endpoint, is stopped
// and its exit event says why.
#include <filesystem>

#include "protocol/base/text.h"
#include "protocol/model/task_report.h"
#include "worker/log.h"
#include "worker/runner/setup/rgpu_server_step.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_exec.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {
namespace {

// The grace of a server stopped for not reporting: it has no client yet,
// so there is little to release, but SIGTERM lets it say so in its log.
constexpr int64_t kNotReadyGraceMs = 2'000;

}  // namespace

std::string TaskManager::RgpuEndpointFile(const TaskId& id) const {
  return RgpuEndpointFileOf(options_.log_dir, options_.isolation.enabled, id);
}

void TaskManager::AwaitRgpuEndpoint(const TaskId& id, Task& task, int64_t started_wall_ms) {
  task.started_wall_ms = started_wall_ms;
  task.rgpu_ready_by_ms = options_.clock->MonoMs() + options_.rgpu.ready_timeout_ms;
  rgpu_waiting_.insert(id);
  log_->info("rgpu session server waits to report its endpoint task={} pid={} endpoint_file={} timeout_ms={}",
             id.ToString(), task.pid, Q(RgpuEndpointFile(id)), options_.rgpu.ready_timeout_ms);
}

void TaskManager::PollRgpuEndpoints() {
  for (auto it = rgpu_waiting_.begin(); it != rgpu_waiting_.end();) {
    auto task = tasks_.find(*it);
    const bool over = task == tasks_.end() || task->second.phase != Phase::kRunning ||
                      TakeRgpuEndpoint(task->first, task->second);
    it = over ? rgpu_waiting_.erase(it) : std::next(it);
  }
}

bool TaskManager::TakeRgpuEndpoint(const TaskId& id, Task& task) {
  if (task.rgpu_ready_by_ms == 0) return true;
  const std::string path = RgpuEndpointFile(id);
  auto endpoint = ReadRgpuEndpoint(path, options_.rgpu.address);
  if (endpoint.ok()) {
    task.rgpu_ready_by_ms = 0;
    task.bind.rgpu.endpoint = *endpoint;
    EmitStarted(id, task);
    log_->info("rgpu session server listening task={} pid={} endpoint={}", id.ToString(), task.pid, *endpoint);
    return true;
  }
  // Stopped before it reported (preempted, shut down): nothing to wait for.
  if (task.preempted) {
    task.rgpu_ready_by_ms = 0;
    return true;
  }
  Status failed = endpoint.status();
  if (failed.code() == StatusCode::kNotFound) {
    if (options_.clock->MonoMs() < task.rgpu_ready_by_ms) return false;
    failed = Status::DeadlineExceeded("the rGPU session server did not report its endpoint within " +
                                      std::to_string(options_.rgpu.ready_timeout_ms) + " ms (" + path + ")");
  }
  task.rgpu_ready_by_ms = 0;
  AppendLine(TaskLogPath(options_.log_dir, id), "gpool-worker: session server stopped: " + failed.message() + "\n");
  log_->warn("rgpu session server stopped, no endpoint reported task={} pid={} error={}", id.ToString(), task.pid,
             Q(failed.ToString()));
  Terminate(id, task, kNotReadyGraceMs, failed.message());
  return true;
}

void TaskManager::EndRgpuWait(const TaskId& id, Task& task, std::string& message) {
  if (task.rgpu_ready_by_ms == 0 || task.preempted) return;
  task.rgpu_ready_by_ms = 0;
  auto endpoint = ReadRgpuEndpoint(RgpuEndpointFile(id), options_.rgpu.address);
  if (endpoint.ok()) {
    task.bind.rgpu.endpoint = *endpoint;
    EmitStarted(id, task);
    return;
  }
  message += (message.empty() ? "" : "; ") +
             std::string("the rGPU session server exited before it reported its endpoint (its log says why)");
}

void TaskManager::EmitStarted(const TaskId& id, Task& task) {
  const uint64_t seq = Emit(id, TaskEventKind::kStarted, task.pid, 0, 0, "");
  TaskEvent& started = outbox_.at(seq);
  if (task.bind.rgpu.owner_key.empty()) return;
  // When the server was launched, not when it reported: usage counts from
  // there, as for any task.
  if (task.started_wall_ms != 0) started.time_ms = task.started_wall_ms;
  started.rgpu_endpoint = task.bind.rgpu.endpoint;
  started.rgpu_server_key = task.bind.rgpu.server_key;
}

}  // namespace gpool::worker
