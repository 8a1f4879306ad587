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
//   "grant-class", "revoke-class" (issue 50)  open or close priority class
//             `priority_class` ("high" or "system") to the jobs of queue
//             spec.name and its subtree; only spec.name is read. Low and
//             medium are open to every queue and are not granted.
// Answered with the queue as it is once the change is committed (for a
// delete, as it was).
enum class QueueOp : uint8_t { kCreate, kUpdate, kDelete, kGrantClass, kRevokeClass };
template <>
struct EnumNames<QueueOp> {
  static constexpr std::array<std::string_view, 5> kNames = {"create", "update", "delete", "grant-class",
                                                             "revoke-class"};
};

struct UpdateQueue {
  static constexpr MessageType kType = MessageType::kUpdateQueue;
  QueueOp op = QueueOp::kCreate;  // by name on the wire
  QueueSpec spec;
  std::string priority_class;  // grant-class, revoke-class: the class; absent otherwise
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("spec", spec);
    v.Optional("class", priority_class);
  }
};

}  // namespace gpool
