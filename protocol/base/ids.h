// Strong id types. A JobId cannot be passed where a NodeId is expected.
//
// Ids are assigned by the coordinator's state machine (jobs) or chosen by the
// node (node names), and are stable across restarts. Plain values.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace gpool {

template <typename Tag, typename Rep>
class StrongId {
 public:
  StrongId() = default;
  explicit StrongId(Rep value) : value_(std::move(value)) {}
  const Rep& value() const { return value_; }
  auto operator<=>(const StrongId&) const = default;
  bool operator==(const StrongId&) const = default;

 private:
  Rep value_{};
};

struct JobIdTag {};
struct NodeIdTag {};

// Job ids are dense integers starting at 1; 0 means "none".
using JobId = StrongId<JobIdTag, uint64_t>;
// Node ids are the node's name (hostname or --node-name), unique in a cluster.
using NodeId = StrongId<NodeIdTag, std::string>;

// A task is one replica of a job; the attempt distinguishes re-runs of the
// same replica so a late report from an old attempt is never confused with
// the current one.
struct TaskId {
  JobId job;
  uint32_t index = 0;
  uint32_t attempt = 0;
  auto operator<=>(const TaskId&) const = default;
  bool operator==(const TaskId&) const = default;
  // "17.0" (job 17, replica 0); the attempt is shown only when non-zero: "17.0#2".
  std::string ToString() const;
};

}  // namespace gpool

template <typename Tag, typename Rep>
struct std::hash<gpool::StrongId<Tag, Rep>> {
  size_t operator()(const gpool::StrongId<Tag, Rep>& id) const { return std::hash<Rep>{}(id.value()); }
};
