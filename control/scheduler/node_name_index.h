// NodeNameIndex: a node's position in the view by its name.
//
// A session resolves every running task's node (and every claimed node) by
// name once per cycle. With 100,000 nodes a std::unordered_map of names
// costs a heap node per entry and several cache misses per lookup (bucket,
// node, then the name in the view), which made it a tenth of the cycle.
// This table is one flat array probed linearly whose slots hold the start
// of the name itself: a lookup of a name up to kHead bytes long (hostnames
// mostly are) reads one slot and nothing else.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "topology/cluster_view.h"

namespace gpool::scheduler {

class NodeNameIndex {
 public:
  // Indexes `nodes` (which must outlive it); a name given twice resolves to
  // its first node, as std::unordered_map::emplace would keep it.
  explicit NodeNameIndex(const std::vector<topology::NodeView>& nodes) : nodes_(nodes) {
    size_t capacity = 16;
    while (capacity < nodes.size() * 2) capacity *= 2;  // at most half full: short probes
    slots_.resize(capacity);
    mask_ = capacity - 1;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string_view name = nodes[i].name;
      size_t at = std::hash<std::string_view>{}(name) & mask_;
      for (; slots_[at].position != 0 && !Matches(slots_[at], name); at = (at + 1) & mask_) {
      }
      if (slots_[at].position != 0) continue;  // a duplicate: the first one stays
      Slot& slot = slots_[at];
      slot.position = static_cast<uint32_t>(i + 1);
      slot.size = static_cast<uint32_t>(name.size());
      std::memcpy(slot.head, name.data(), std::min(name.size(), kHead));
    }
  }

  std::optional<size_t> Find(std::string_view name) const {
    for (size_t at = std::hash<std::string_view>{}(name) & mask_; slots_[at].position != 0; at = (at + 1) & mask_) {
      if (Matches(slots_[at], name)) return slots_[at].position - 1;
    }
    return std::nullopt;
  }

 private:
  static constexpr size_t kHead = 24;
  struct Slot {
    uint32_t position = 0;  // 1 + index in the view; 0 for an empty slot
    uint32_t size = 0;      // of the name
    char head[kHead] = {};  // its first kHead bytes
  };
  bool Matches(const Slot& slot, std::string_view name) const {
    if (slot.size != name.size() || std::memcmp(slot.head, name.data(), std::min(name.size(), kHead)) != 0) {
      return false;
    }
    // Only a longer name needs the rest of it, from the view.
    return name.size() <= kHead ||
           std::string_view(nodes_[slot.position - 1].name).substr(kHead) == name.substr(kHead);
  }

  const std::vector<topology::NodeView>& nodes_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace gpool::scheduler
