// LabelOverlay: the node's labels as the worker reads them itself: its
// spec's labels (discovered or --spec) overlaid with the labels an operator
// set on the node (`gpool node label`), which the leader pushes whenever a
// heartbeat shows the worker holds others (NodeLabels; control's
// NodeLabelSync). The same overlay the coordinator's view of the node makes
// (the operator's value wins), so a switch such as
// repair.gpool.io/gpu-reset=off means the same on both sides, and a label
// set or removed at runtime is read by the next check that asks.
//
// Thread-safety: one thread (the agent's loop), like everything that reads it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::worker {

class LabelOverlay {
 public:
  // Labels the worker takes from the coordinator at most: far above any real
  // node's, well below what a frame may carry.
  static constexpr size_t kMaxOperatorLabels = 1024;

  explicit LabelOverlay(std::map<std::string, std::string> spec_labels = {});

  // Replaces the operator's labels; InvalidArgument (nothing changed) for
  // more than kMaxOperatorLabels or an empty key.
  Status SetOperatorLabels(std::map<std::string, std::string> labels);

  // The label's value, the operator's over the spec's; nullopt: not set.
  std::optional<std::string_view> Get(std::string_view key) const;
  // A self-repair switch (repair.gpool.io/<action>) set to "off".
  bool Off(std::string_view key) const { return Get(key) == std::optional<std::string_view>("off"); }

  // What heartbeats carry (Heartbeat.labels_digest): LabelsDigest of the
  // operator's labels held.
  uint64_t digest() const { return digest_; }
  const std::map<std::string, std::string>& operator_labels() const { return operator_; }

 private:
  std::map<std::string, std::string, std::less<>> spec_;
  std::map<std::string, std::string> operator_;
  uint64_t digest_;
};

}  // namespace gpool::worker
