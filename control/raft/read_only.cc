#include "control/raft/read_only.h"
#include "protocol/messages_common.h"

#include <algorithm>

namespace gpool::raft {

bool ReadOnly::Add(uint64_t index, uint64_t from, std::string context) {
  for (const auto& r : pending_) {
    if (r.context == context) return false;
  }
  pending_.push_back({index, from, std::move(context), {}});
  return true;
}

const std::set<uint64_t>* ReadOnly::Ack(uint64_t from, const std::string& context) {
  for (auto& r : pending_) {
    if (r.context == context) {
      r.acks.insert(from);
      return &r.acks;
    }
  }
  return nullptr;
}

std::vector<ReadRequest> ReadOnly::Release(const std::string& context) {
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [&](const ReadRequest& r) { return r.context == context; });
  if (it == pending_.end()) return {};
  std::vector<ReadRequest> out(std::make_move_iterator(pending_.begin()), std::make_move_iterator(it + 1));
  pending_.erase(pending_.begin(), it + 1);
  return out;
}

}  // namespace gpool::raft
