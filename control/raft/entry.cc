#include "control/raft/entry.h"

namespace gpool::raft {
namespace {

constexpr char kNormalTag = 0x01;
constexpr char kConfChangeTag = 0x02;

// Wire form of a ConfChangeEntry; the enum travels as its number.
struct WireConfChange {
  uint32_t type = 0;
  uint64_t node_id = 0;
  wire::Bytes context;
  ConfState result;
  template <typename V>
  void Fields(V& v) {
    v.Required("type", type);
    v.Required("node", node_id);
    v.Optional("context", context);
    v.Required("result", result);
  }
};

}  // namespace

void ConfState::Normalize() {
  std::sort(voters.begin(), voters.end());
  voters.erase(std::unique(voters.begin(), voters.end()), voters.end());
  std::sort(learners.begin(), learners.end());
  learners.erase(std::unique(learners.begin(), learners.end()), learners.end());
  std::erase_if(learners, [this](uint64_t id) { return Contains(id); });
}

std::string_view ConfChangeTypeName(ConfChangeType type) {
  switch (type) {
    case ConfChangeType::kAddVoter: return "AddVoter";
    case ConfChangeType::kRemoveVoter: return "RemoveVoter";
    case ConfChangeType::kAddLearner: return "AddLearner";
  }
  return "Unknown";
}

std::string EncodeNormal(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 1);
  out.push_back(kNormalTag);
  out.append(payload);
  return out;
}

std::string EncodeConfChange(const ConfChangeEntry& cc) {
  WireConfChange w{static_cast<uint32_t>(cc.change.type), cc.change.node_id, cc.change.context, cc.result};
  return std::string(1, kConfChangeTag) + wire::PackToString(w);
}

EntryType TypeOf(const LogEntry& entry) {
  if (entry.data.empty()) return EntryType::kEmpty;
  switch (entry.data[0]) {
    case kNormalTag: return EntryType::kNormal;
    case kConfChangeTag: return EntryType::kConfChange;
    default: return EntryType::kUnknown;
  }
}

std::string_view NormalPayload(const LogEntry& entry) {
  if (TypeOf(entry) != EntryType::kNormal) return {};
  return std::string_view(entry.data).substr(1);
}

Result<ConfChangeEntry> DecodeConfChange(const LogEntry& entry) {
  if (TypeOf(entry) != EntryType::kConfChange) {
    return Status::Malformed("entry " + std::to_string(entry.index) + " is not a configuration change");
  }
  auto w = wire::UnpackFromString<WireConfChange>(std::string_view(entry.data).substr(1));
  if (!w.ok()) return w.status().WithContext("entry " + std::to_string(entry.index));
  if (w->type != static_cast<uint32_t>(ConfChangeType::kAddVoter) &&
      w->type != static_cast<uint32_t>(ConfChangeType::kRemoveVoter) &&
      w->type != static_cast<uint32_t>(ConfChangeType::kAddLearner)) {
    return Status::Malformed("entry " + std::to_string(entry.index) + ": unknown change type " +
                             std::to_string(w->type));
  }
  ConfChangeEntry out;
  out.change = {static_cast<ConfChangeType>(w->type), w->node_id, std::move(w->context)};
  out.result = std::move(w->result);
  out.result.Normalize();
  return out;
}

}  // namespace gpool::raft
