// An operator's change to the queue tree, as the replicated log keeps it
// (UpdateQueueCmd); it travels as it is on the client API.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "protocol/base/enum_names.h"
#include "protocol/message_type.h"
#include "protocol/types.h"

namespace gpool {

// An operator's change to the queue hierarchy. op:
//   "create"  add `spec` under spec.parent (which must exist)
//   "update"  replace the quotas of queue spec.name (its parent stays)
//   "delete"  remove queue spec.name; it must have no children and no
//             unfinished jobs. "root" and "default" always exist.
// Answered with the queue as it is once the change is committed (for a
// delete, as it was).
enum class QueueOp : uint8_t { kCreate, kUpdate, kDelete };
template <>
struct EnumNames<QueueOp> {
  static constexpr std::array<std::string_view, 3> kNames = {"create", "update", "delete"};
};

struct UpdateQueue {
  static constexpr MessageType kType = MessageType::kUpdateQueue;
  QueueOp op = QueueOp::kCreate;  // by name on the wire
  QueueSpec spec;
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("spec", spec);
  }
};

}  // namespace gpool
