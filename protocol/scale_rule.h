// Elastic scaling by signal (issue 50): an elastic task group (min_replicas
// below replicas) may declare rules that move its replica target between its
// minimum and its replicas; the coordinator's leader evaluates them and
// commits each change (control/scale_driver.h), so every replica agrees.
//
//   queue-depth      jobs pending in a queue (the job's own unless `queue`
//                    names another): one step up above grow_above, one step
//                    down below shrink_below.
//   gpu-utilisation  mean utilisation (%) of the GPUs the group's running
//                    replicas hold, as their workers measure it: one step up
//                    at or above grow_above, one down below shrink_below;
//                    GPUs nobody measures hold the target where it is.
//   time-window      "HH:MM-HH:MM" UTC (wrapping past midnight when the end
//                    comes first): all replicas inside, the minimum outside.
//
// Several rules: the largest target any of them asks for (so a group
// shrinks only when every rule agrees), within [min, replicas). No change
// is taken within cooldown_ms of the last one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/base/status.h"

namespace gpool {

struct ScaleRule {
  std::string trigger;         // queue-depth, gpu-utilisation or time-window
  uint64_t grow_above = 0;     // queue-depth: pending jobs; gpu-utilisation: percent
  uint64_t shrink_below = 0;   // 0: this rule never shrinks the group
  std::string queue;           // queue-depth: the queue counted; "": the job's own
  std::string window;          // time-window: "HH:MM-HH:MM", UTC
  uint32_t step = 1;           // replicas per change

  template <typename V>
  void Fields(V& v) {
    v.Required("trigger", trigger);
    v.Optional("grow_above", grow_above);
    v.Optional("shrink_below", shrink_below);
    v.Optional("queue", queue);
    v.Optional("window", window);
    v.Optional("step", step);
  }
  bool operator==(const ScaleRule&) const = default;
};

struct ScaleSpec {
  std::vector<ScaleRule> rules;    // empty: no scaling; elastic replicas grow into idle capacity
  uint64_t cooldown_ms = 60'000;   // the least time between two changes of the group's target

  bool Enabled() const { return !rules.empty(); }
  template <typename V>
  void Fields(V& v) {
    v.Optional("rules", rules);
    v.Optional("cooldown_ms", cooldown_ms);
  }
  bool operator==(const ScaleSpec&) const = default;
};

// One committed change of an elastic group's replica target, as the job
// keeps it and GetJob shows it (`gpool job`). time_ms 0: it never scaled.
struct ScaleChange {
  int64_t time_ms = 0;   // when the coordinator committed it (wall clock, UTC)
  uint32_t from = 0;     // the target before
  uint32_t to = 0;       // and after
  std::string trigger;   // the rule that decided it ("queue-depth")
  std::string reason;    // what the rule saw ("queue default: 1 pending"), at most 256 bytes

  template <typename V>
  void Fields(V& v) {
    v.Optional("time_ms", time_ms);
    v.Optional("from", from);
    v.Optional("to", to);
    v.Optional("trigger", trigger);
    v.Optional("reason", reason);
  }
  bool operator==(const ScaleChange&) const = default;
};

// Where the coordinator has an elastic group with scale rules now (GetJob's
// `scale`, one per such group): its bounds, the replicas it may run, its
// last change and how long the cool-down still holds the next one back.
// The rules themselves are in the job's spec.
struct GroupScaleStatus {
  std::string group;
  uint32_t min = 0;                // its minimum replicas
  uint32_t max = 0;                // its replicas
  uint32_t target = 0;             // the replicas the coordinator lets it run now
  uint64_t cooldown_ms = 0;        // its spec's cool-down
  uint64_t cooldown_left_ms = 0;   // 0: a rule may change the target now
  ScaleChange last;                // its last change; time_ms 0: none yet

  template <typename V>
  void Fields(V& v) {
    v.Required("group", group);
    v.Optional("min", min);
    v.Optional("max", max);
    v.Optional("target", target);
    v.Optional("cooldown_ms", cooldown_ms);
    v.Optional("cooldown_left_ms", cooldown_left_ms);
    v.Optional("last", last);
  }
  bool operator==(const GroupScaleStatus&) const = default;
};

// The triggers' names, in the order of the list in messages.
inline constexpr std::string_view kScaleTriggers[] = {"queue-depth", "gpu-utilisation", "time-window"};

// A time window's start and end, minutes into the UTC day; nullopt when the
// text is not "HH:MM-HH:MM" with two different times.
std::optional<std::pair<uint32_t, uint32_t>> ParseScaleWindow(std::string_view text);

// InvalidArgument naming the field (`where` + ".scale...") for a bad spec;
// `min` and `replicas` are the group's bounds.
Status ValidateScaleSpec(const std::string& where, const ScaleSpec& spec, uint32_t min, uint32_t replicas);

}  // namespace gpool
