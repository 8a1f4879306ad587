// UpdateQueue's reading and its `keep` (model/queue_update.h): the model is a
// plain struct; what needs the msgpack reader is here.
#include <algorithm>
#include <string_view>

#include "protocol/model/queue_update.h"
#include "protocol/wire.h"

namespace gpool {
namespace {

// The optional keys a Fields() walk names, in order.
struct QueueSpecOptionalKeyLister {
  std::vector<std::string>* keys;
  template <typename T>
  void Required(std::string_view, const T&) {}
  template <typename T>
  void Optional(std::string_view key, const T&) {
    keys->emplace_back(key);
  }
};

// The optional keys a message's spec map leaves out (read from "spec"
// beside the spec itself).
struct AbsentQueueSpecKeys {
  std::vector<std::string> absent;
  void Unpack(wire::ObjectReader& reader) {
    for (const std::string& key : QueueSpecOptionalKeys()) {
      if (!reader.Has(key)) absent.push_back(key);
    }
  }
};

// Copying the kept fields walks Fields() of two specs in step: the same
// type lists the same keys, in the same order, with the same member types,
// so the n-th address the source walk records is the n-th member the sink
// walk meets, of its type. Generic, so a field added to QueueSpec is kept
// like the others without a line here.
struct QueueSpecFieldAddresses {
  std::vector<const void*> fields;
  template <typename T>
  void Required(std::string_view, const T& value) {
    fields.push_back(&value);
  }
  template <typename T>
  void Optional(std::string_view, const T& value) {
    fields.push_back(&value);
  }
};

struct QueueSpecKeptFieldCopier {
  const std::vector<const void*>& from;
  const std::vector<std::string>& keep;
  size_t at = 0;
  template <typename T>
  void Required(std::string_view, T&) {
    ++at;  // the name: never kept
  }
  template <typename T>
  void Optional(std::string_view key, T& value) {
    const void* source = from[at++];
    if (std::find(keep.begin(), keep.end(), key) != keep.end()) value = *static_cast<const T*>(source);
  }
};

}  // namespace

const std::vector<std::string>& QueueSpecOptionalKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    QueueSpec spec;
    QueueSpecOptionalKeyLister lister{&out};
    spec.Fields(lister);
    return out;
  }();
  return keys;
}

void UpdateQueue::Unpack(wire::ObjectReader& reader) {
  wire::FieldReader fields{reader};
  Fields(fields);
  if (!reader.status().ok() || op != QueueOp::kUpdate) return;
  AbsentQueueSpecKeys absent;
  reader.Required("spec", &absent);
  for (std::string& key : absent.absent) {
    if (std::find(keep.begin(), keep.end(), key) == keep.end()) keep.push_back(std::move(key));
  }
}

QueueSpec QueueSpecAfterUpdate(const QueueSpec& current, const UpdateQueue& update) {
  QueueSpec spec = update.spec;
  if (update.keep.empty()) return spec;
  QueueSpecFieldAddresses addresses;
  const_cast<QueueSpec&>(current).Fields(addresses);  // Fields() is shared with reading; this only takes addresses
  QueueSpecKeptFieldCopier copier{addresses.fields, update.keep};
  spec.Fields(copier);
  return spec;
}

}  // namespace gpool
