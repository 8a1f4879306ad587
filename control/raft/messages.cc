#include "control/raft/messages.h"
#include "protocol/message_type.h"
#include "protocol/messages_worker.h"

#include <sstream>
#include <utility>

namespace gpool::raft {
namespace {

// Wire mirrors: data travels as msgpack bin, the enum as its number.
struct WireEntry {
  uint64_t index = 0;
  uint64_t term = 0;
  wire::Bytes data;
  template <typename V>
  void Fields(V& v) {
    v.Required("i", index);
    v.Required("t", term);
    v.Optional("d", data);
  }
};

struct WireSnapshot {
  uint64_t index = 0;
  uint64_t term = 0;
  ConfState conf;
  wire::Bytes data;
  template <typename V>
  void Fields(V& v) {
    v.Required("index", index);
    v.Required("term", term);
    v.Required("conf", conf);
    v.Optional("data", data);
  }
};

// The snapshot is packed only for kSnapshot (see Message::Pack).
struct WireMessage {
  uint32_t type = 0;
  uint64_t from = 0;
  uint64_t to = 0;
  uint64_t term = 0;
  uint64_t log_term = 0;
  uint64_t index = 0;
  std::vector<WireEntry> entries;
  uint64_t commit = 0;
  bool reject = false;
  uint64_t reject_hint = 0;
  wire::Bytes context;
  uint32_t state_version = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("type", type);
    v.Required("from", from);
    v.Required("to", to);
    v.Required("term", term);
    v.Optional("log_term", log_term);
    v.Optional("index", index);
    v.Optional("entries", entries);
    v.Optional("commit", commit);
    v.Optional("reject", reject);
    v.Optional("hint", reject_hint);
    v.Optional("context", context);
    v.Optional("sv", state_version);  // older replicas ignore the key (wire.h)
  }
};

WireMessage ToWire(const Message& m) {
  WireMessage w;
  w.type = static_cast<uint32_t>(m.type);
  w.from = m.from;
  w.to = m.to;
  w.term = m.term;
  w.log_term = m.log_term;
  w.index = m.index;
  w.entries.reserve(m.entries.size());
  for (const auto& e : m.entries) w.entries.push_back({e.index, e.term, e.data});
  w.commit = m.commit;
  w.reject = m.reject;
  w.reject_hint = m.reject_hint;
  w.context = m.context;
  w.state_version = m.state_version;
  return w;
}

}  // namespace

std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kAppend: return "Append";
    case MessageType::kAppendResponse: return "AppendResponse";
    case MessageType::kVote: return "Vote";
    case MessageType::kVoteResponse: return "VoteResponse";
    case MessageType::kPreVote: return "PreVote";
    case MessageType::kPreVoteResponse: return "PreVoteResponse";
    case MessageType::kSnapshot: return "Snapshot";
    case MessageType::kHeartbeat: return "Heartbeat";
    case MessageType::kHeartbeatResponse: return "HeartbeatResponse";
    case MessageType::kTimeoutNow: return "TimeoutNow";
    case MessageType::kReadIndex: return "ReadIndex";
    case MessageType::kReadIndexResponse: return "ReadIndexResponse";
    case MessageType::kSnapshotChunk: return "SnapshotChunk";
    case MessageType::kSnapshotChunkAck: return "SnapshotChunkAck";
  }
  return "Unknown";
}

std::string Message::DebugString() const {
  std::ostringstream os;
  os << MessageTypeName(type) << " " << from << "->" << to << " t" << term;
  switch (type) {
    case MessageType::kAppend:
      os << " prev=" << index << "/" << log_term << " n=" << entries.size() << " commit=" << commit;
      break;
    case MessageType::kAppendResponse:
      os << " index=" << index;
      if (reject) os << " reject hint=" << reject_hint << "/" << log_term;
      break;
    case MessageType::kVote:
    case MessageType::kPreVote:
      os << " last=" << index << "/" << log_term;
      break;
    case MessageType::kVoteResponse:
    case MessageType::kPreVoteResponse:
      os << (reject ? " reject" : " grant");
      break;
    case MessageType::kSnapshot:
      os << " snap=" << snapshot.index << "/" << snapshot.term;
      break;
    case MessageType::kSnapshotChunk:
      os << " snap=" << snapshot.index << "/" << snapshot.term << " offset=" << index << " attempt=" << log_term;
      break;
    case MessageType::kSnapshotChunkAck:
      os << " snap=" << snapshot.index << "/" << snapshot.term << " next=" << index << " attempt=" << log_term;
      if (reject) os << " reject";
      break;
    case MessageType::kHeartbeat:
      os << " commit=" << commit;
      break;
    case MessageType::kReadIndexResponse:
      os << " index=" << index;
      break;
    default:
      break;
  }
  if (!context.empty()) os << " ctx=" << context.size() << "B";
  return os.str();
}

void Message::Pack(wire::Packer& p) const {
  WireMessage w = ToWire(*this);
  wire::FieldCounter counter;
  w.Fields(counter);
  const bool with_snapshot = type == MessageType::kSnapshot || type == MessageType::kSnapshotChunk ||
                             type == MessageType::kSnapshotChunkAck;
  p.BeginMap(counter.count + (with_snapshot ? 1 : 0));
  wire::FieldWriter writer{p};
  w.Fields(writer);
  if (with_snapshot) {
    p.Field("snapshot", WireSnapshot{snapshot.index, snapshot.term, snapshot.conf, snapshot.data});
  }
}

void Message::Unpack(wire::ObjectReader& r) {
  WireMessage w;
  wire::FieldReader reader{r};
  w.Fields(reader);
  WireSnapshot snap;
  r.Optional("snapshot", &snap);
  if (!r.status().ok()) return;
  if (w.type == 0 || w.type > kMaxMessageType) {
    r.Fail(Status::Malformed(r.path().Key("type").str() + ": unknown raft message type " + std::to_string(w.type)));
    return;
  }
  type = static_cast<MessageType>(w.type);
  from = w.from;
  to = w.to;
  term = w.term;
  log_term = w.log_term;
  index = w.index;
  entries.clear();
  entries.reserve(w.entries.size());
  for (auto& e : w.entries) entries.push_back({e.index, e.term, std::move(e.data)});
  commit = w.commit;
  reject = w.reject;
  reject_hint = w.reject_hint;
  snapshot = {snap.index, snap.term, std::move(snap.conf), std::move(snap.data)};
  snapshot.conf.Normalize();
  context = std::move(w.context);
  state_version = w.state_version;
}

std::string EncodeMessage(const Message& m) { return wire::PackToString(m); }

Result<Message> DecodeMessage(std::string_view bytes, const wire::DecodeLimits& limits) {
  return wire::UnpackFromString<Message>(bytes, limits);
}

}  // namespace gpool::raft
