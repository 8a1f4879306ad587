#include "control/session_view.h"

#include <string>

#include "control/state/usage_weight.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "topology/pending_reason.h"

namespace gpool::control {
namespace {

std::string Seconds(uint64_t ms) { return std::to_string(ms / 1000) + " s"; }

void SetEnded(const state::JobRecord& job, const state::TaskRecord& task, SessionInfo& s) {
  const state::SessionRuntime* runtime = job.session();
  if (runtime != nullptr && !runtime->close_reason.empty()) {
    s.state = "Expired";
    s.reason = runtime->close_reason;
  } else if (task.evicted) {
    s.state = "Preempted";
    s.reason = "preempted for job " + std::to_string(task.evicted_for()) +
               (task.message().empty() ? "" : ": " + task.message());
  } else if (job.cancel_requested) {
    s.state = "Closed";
    s.reason = task.start_ms == 0 ? "closed before it was placed" : "closed by its owner";
  } else if (task.state == TaskState::kLost) {
    s.state = "Failed";
    s.reason = job.failure().empty() ? "lost with node " + task.node : job.failure();
  } else if (task.state == TaskState::kFailed && task.signal == 0 && task.exit_code == kRgpuIdleExitCode) {
    s.state = "Expired";
    s.reason = "idle: no driver call for " + Seconds(job.spec.session.idle_timeout_ms);
  } else if (task.message().rfind("time limit", 0) == 0 || StoppedForTimeLimit(task.message())) {
    // Stopped at its max_runtime: a server that exits cleanly on SIGTERM
    // ends Succeeded, so the worker's word is what says why.
    s.state = "Expired";
    s.reason = "its TTL of " + Seconds(job.spec.max_runtime_ms) + " passed";
  } else if (task.state == TaskState::kSucceeded) {
    s.state = "Closed";
    s.reason = "its server ended";
  } else {
    s.state = "Failed";
    s.reason = job.failure().empty() ? task.message() : job.failure();
  }
}

}  // namespace

SessionInfo ToSessionInfo(const state::JobRecord& job, int64_t now_ms) {
  SessionInfo s;
  if (!job.spec.session.enabled || job.tasks.empty() || job.spec.tasks.empty()) return s;
  const state::TaskRecord& task = job.tasks.front();
  const state::SessionRuntime* runtime = job.session();
  s.owner_key = job.spec.session.owner_key;
  s.lease_ms = job.spec.session.LeaseMs();
  s.idle_timeout_ms = job.spec.session.idle_timeout_ms;
  s.ttl_ms = job.spec.max_runtime_ms;
  s.node = task.node;
  if (runtime != nullptr) s.renew_ms = runtime->renew_ms;
  const bool listening = runtime != nullptr && !runtime->endpoint.empty();
  if (IsTerminal(job.state)) {
    SetEnded(job, task, s);
  } else if (job.cancel_requested) {
    s.state = "Closing";
    s.reason = runtime != nullptr && !runtime->close_reason.empty() ? runtime->close_reason : "closed by its owner";
  } else if (task.state == TaskState::kPending) {
    s.state = "Queued";
    if (!job.reasons().empty()) {
      s.reason = topology::RenderPendingReason(job.reasons().front());
    } else if (!job.legacy_reasons().empty()) {
      s.reason = job.legacy_reasons().front();
    } else {
      s.reason = "waiting for the next scheduling cycle";
    }
  } else if (task.state == TaskState::kRunning && listening) {
    s.state = "Open";
    s.endpoint = runtime->endpoint;
    s.server_key = runtime->server_key;
  } else {
    s.state = "Placed";
    s.reason = "its server is starting on node " + task.node;
  }
  const int64_t end = task.finish_ms != 0 ? task.finish_ms : now_ms;
  if (task.start_ms != 0 && end > task.start_ms) {
    // The same weight as the job's usage records (state/usage_weight.h).
    s.gpu_ms = uint64_t{state::GpuMilli(job.spec.tasks.front().resources)} * static_cast<uint64_t>(end - task.start_ms) / 1000;
  }
  return s;
}

}  // namespace gpool::control
