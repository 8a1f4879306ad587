// Cluster events: what happened to nodes and tasks that operators and alert
// sinks must hear about. The coordinator commits them into a bounded stream
// (the newest kMaxEvents kept), numbered by `seq` from 1 without gaps, so a
// reader (`gpool events`, a webhook sink on a new leader) resumes after the
// last seq it saw and misses nothing still kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/types.h"

namespace gpool {

// "health-raised", "health-cleared", "node-cordoned", "node-uncordoned",
// "node-not-ready", "node-ready", "node-lost", "task-lost", "task-requeued",
// "task-preempted", "task-reclaimed", "health-breaker-open", "health-breaker-closed",
// "health-fence-suppressed" (a fence the health policy held back: exempt
// node, breaker open), "task-over-share" (a worker killed a GPU-share task
// whose measured GPU memory exceeded its share: it bypassed the interposer),
// "alert-firing" / "alert-resolved" (an alert rule, control/alert_driver.h;
// reason: the rule, dedupe_key: the alert's key), "job-scaled" (a scale
// rule moved an elastic group's replica target, protocol/scale_rule.h;
// reason: the trigger).
enum class EventKind : uint8_t {
  kHealthRaised,
  kHealthCleared,
  kNodeCordoned,
  kNodeUncordoned,
  kNodeNotReady,
  kNodeReady,
  kNodeLost,
  kTaskLost,
  kTaskRequeued,
  kTaskPreempted,
  kTaskReclaimed,
  kHealthBreakerOpen,
  kHealthBreakerClosed,
  kHealthFenceSuppressed,
  kTaskOverShare,
  kAlertFiring,
  kAlertResolved,
  kJobScaled,
};
inline constexpr size_t kEventKindCount = 18;
std::string_view ToString(EventKind k);
std::optional<EventKind> EventKindFromString(std::string_view s);

struct ClusterEvent {
  uint64_t seq = 0;      // 1, 2, ... in commit order
  int64_t time_ms = 0;   // wall clock of the entry that made it
  std::string kind;      // an EventKind name
  std::string node;      // "" when not about a node
  uint64_t job = 0;      // 0 when not about a job
  uint32_t task = 0;     // task index within the job
  uint32_t attempt = 0;
  std::string severity;  // for health events: the condition's severity
  std::string reason;    // condition kind@device, "operator", "health", ...
  std::string actor;     // who did it: a user name, "health-policy", "coordinator"
  std::string message;
  // Equal for every notice about the same occurrence (a raise and its
  // repeats), so an at-least-once sink's receiver can drop repeats.
  std::string dedupe_key;
  template <typename V>
  void Fields(V& v) {
    v.Required("seq", seq);
    v.Optional("time_ms", time_ms);
    v.Required("kind", kind);
    v.Optional("node", node);
    v.Optional("job", job);
    v.Optional("task", task);
    v.Optional("attempt", attempt);
    v.Optional("severity", severity);
    v.Optional("reason", reason);
    v.Optional("actor", actor);
    v.Optional("message", message);
    v.Optional("dedupe_key", dedupe_key);
  }
  bool operator==(const ClusterEvent&) const = default;
};

}  // namespace gpool
