// An operator's change to one node, as the replicated log keeps it
// (UpdateNodeCmd); it travels as it is on the client API.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/enum_names.h"
#include "protocol/message_type.h"

namespace gpool {

// An operator's change to one node. op:
//   "cordon"   place no new tasks here (running ones keep running)
//   "uncordon" place tasks here again
//   "label"    set `labels` and remove the keys in `remove_labels`
//              (operator labels overlay the node spec's and survive
//              re-registration)
//   "pool"     move the node to `pool`: public, pooled or exclusive; an
//              exclusive node may belong to `queue` (only its jobs, and
//              other queues' low jobs while it is idle, are placed there)
//   "taint"    set `taints` and remove the keys in `remove_taints`; only
//              jobs that tolerate every taint of a node are placed there
// Answered with the node as it is once the change is committed.
enum class NodeUpdateOp : uint8_t { kCordon, kUncordon, kLabel, kPool, kTaint, kWorkerKey };
template <>
struct EnumNames<NodeUpdateOp> {
  static constexpr std::array<std::string_view, 6> kNames = {"cordon", "uncordon", "label",
                                                             "pool",   "taint",    "worker-key"};
};

struct UpdateNode {
  static constexpr MessageType kType = MessageType::kUpdateNode;
  std::string node;
  NodeUpdateOp op = NodeUpdateOp::kCordon;  // by name on the wire
  std::map<std::string, std::string> labels;
  std::vector<std::string> remove_labels;
  std::string pool;
  std::string queue;
  std::map<std::string, std::string> taints;
  std::vector<std::string> remove_taints;
  // op "worker-key": the node's new CurveZMQ public key (Z85), replacing the
  // one its name is bound to (a key rotation, docs/operations.md 2.1).
  std::string key;
  // op "worker-key" on a bound node: how long the key it replaces is still
  // admitted as the node (handshake and frames), so its running worker is
  // not cut off while it is moved to the new key. The deadline is the
  // command's time (the proposer's clock) plus this, so every replica agrees.
  // 0 (and every entry logged before issue 48): the old key is refused at once.
  uint64_t grace_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Required("op", op);
    v.Optional("key", key);
    v.Optional("labels", labels);
    v.Optional("remove_labels", remove_labels);
    v.Optional("pool", pool);
    v.Optional("queue", queue);
    v.Optional("taints", taints);
    v.Optional("remove_taints", remove_taints);
    v.Optional("grace_ms", grace_ms);
  }
};

}  // namespace gpool
