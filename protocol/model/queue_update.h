// An operator's change to the queue tree, as the replicated log keeps it
// (UpdateQueueCmd); it travels as it is on the client API.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/enum_names.h"
#include "protocol/message_type.h"
#include "protocol/types.h"

namespace gpool {
namespace wire {
class ObjectReader;
}  // namespace wire

// An operator's change to the queue hierarchy. op:
//   "create"  add `spec` under spec.parent (which must exist)
//   "update"  replace the quotas and policy of queue spec.name (its parent
//             stays); a spec field the message leaves out keeps the
//             queue's value (`keep`)
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
  // "update" (issue 50): the spec's fields that keep the queue's current
  // value, by wire name ("low_reclaimable"). A client that predates a field
  // (the preemption policy, say) writes no key for it, and an update from
  // it must not put the field back to its default: reading a message fills
  // this with every optional key its spec lacks. It is written out under
  // its own key, so the log entry carries it to every replica; an explicit
  // value, the default included, is in the spec and replaces.
  std::vector<std::string> keep;
  template <typename V>
  void Fields(V& v) {
    v.Required("op", op);
    v.Required("spec", spec);
    v.Optional("class", priority_class);
    v.Optional("keep", keep);
  }
  // Reads Fields, then, for "update", adds the spec's absent optional keys
  // to `keep` (protocol/queue_update.cc, which keeps msgpack out of the
  // model; the wire reader calls it instead of Fields).
  void Unpack(wire::ObjectReader& reader);
};

// The optional fields of a QueueSpec, by wire name: what `keep` may name.
const std::vector<std::string>& QueueSpecOptionalKeys();

// `update`'s spec with the fields it keeps taken from `current` (unknown
// names in keep are ignored; ValidateUpdateQueue refuses them at the edge).
QueueSpec QueueSpecAfterUpdate(const QueueSpec& current, const UpdateQueue& update);

}  // namespace gpool
