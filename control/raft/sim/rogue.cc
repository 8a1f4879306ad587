// The simulator's rogue peer: someone on the peer network who is not an
// honest replica. Defined here, apart from the honest events in cluster.cc.
//
// What it sends, and what Raft must do with it:
//   - numbers beyond the bounds (terms at or near 2^64, indexes past
//     kMaxIndex, term jumps past kMaxTermJump), any message type, from any
//     id: refused by validation (a non-OK Step) and nothing changes;
//   - pre-vote requests and pre-vote answers with random terms and logs,
//     under members' ids: a pre-vote binds nothing, so at worst they make
//     someone start a real election, whose votes are checked for real;
//   - answers, TimeoutNow and reads with random terms and contents from an
//     id outside the configuration: dropped, and nothing changes (requests
//     from outsiders are not sent with plausible numbers: they get through,
//     since a node that missed configuration changes must hear a leader or
//     candidate it does not know; see "what it does not send");
//   - honest messages captured earlier, delivered again verbatim long after
//     (old terms, old indexes, stale snapshots): handled as Raft handles any
//     duplicate, without an error.
// What it does not send: state-carrying messages (appends, heartbeats,
// votes, vote grants) with plausible numbers, under a member's id or (for
// requests) any other. Raft has
// no defence against a peer that lies with a valid identity; authenticated
// peer channels are that defence. A node with no configuration yet (one
// waiting to be added) is not targeted by the outsider either: it must
// follow whichever leader adds it.
#include <cstdint>
#include <iterator>
#include <string>

#include "control/raft/config.h"
#include "control/raft/sim/cluster.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

namespace gpool::raft::sim {
namespace {

constexpr size_t kRememberedMessages = 64;

// What a dropped or refused message must leave untouched.
struct Observable {
  uint64_t term, vote, lead, commit, last_index;
  Role role;
  bool operator==(const Observable&) const = default;
};

Observable Observe(const RawNode& node) {
  const NodeInfo i = node.info();
  return {i.term, i.vote, i.lead, i.commit, i.last_index, i.role};
}

MessageType AnyType(Rng& rng) { return static_cast<MessageType>(1 + rng.Uniform(kMaxMessageType)); }

}  // namespace

void SimCluster::Remember(const Message& m) {
  // Keep a spread-out sample: mostly overwrite, so old messages survive.
  if (delivered_.size() < kRememberedMessages) {
    delivered_.push_back(m);
  } else if (rng_.Chance(100)) {
    delivered_[rng_.Uniform(delivered_.size())] = m;
  }
}

Status SimCluster::Forge() {
  Node* target = RandomLiveNode();
  if (target == nullptr) return Status::Ok();
  switch (rng_.Uniform(4)) {
    case 0: return ForgeBeyondBounds(*target);
    case 1: return ForgePreVote(*target);
    case 2: return ForgeFromOutsider(*target);
    default: return Replay();
  }
}

Status SimCluster::ForgeBeyondBounds(Node& target) {
  const NodeInfo info = target.raw->info();
  Message m;
  m.type = AnyType(rng_);
  m.to = target.id;
  m.from = 1 + rng_.Uniform(nodes_.size() + 1);  // a member's id, or the outsider's
  if (m.from == target.id) m.from = nodes_.size() + 1;
  const uint64_t huge_terms[] = {UINT64_MAX, UINT64_MAX - 1, kMaxTerm + 1, info.term + kMaxTermJump + 1};
  const uint64_t huge_indexes[] = {UINT64_MAX, kMaxIndex + 1};
  m.term = rng_.Chance(800) ? huge_terms[rng_.Uniform(4)] : info.term;
  m.log_term = rng_.Chance(500) ? m.term : info.term;
  m.index = rng_.Chance(500) ? huge_indexes[rng_.Uniform(2)] : info.last_index;
  m.commit = rng_.Chance(300) ? huge_indexes[rng_.Uniform(2)] : info.commit;
  if (m.term <= kMaxTerm && m.term - info.term <= kMaxTermJump && m.index <= kMaxIndex && m.commit <= kMaxIndex) {
    m.term = UINT64_MAX;  // every forgery of this kind breaks at least one bound
  }
  if (m.type == MessageType::kAppend && m.index < UINT64_MAX) {
    m.entries.push_back(LogEntry{m.index + 1, m.term, "forged"});
  }
  if (m.type == MessageType::kSnapshot) m.snapshot = Snapshot{m.index, m.log_term, ConfState{{m.from}}, "0 0"};
  const Observable before = Observe(*target.raw);
  Status s = target.raw->Step(m);
  ++stats_.forged;
  Trace('F', target.id, s.ok() ? 0 : 1, 0, &m);
  if (s.ok()) return Status::Internal("rogue: node " + std::to_string(target.id) + " accepted " + m.DebugString());
  if (!(Observe(*target.raw) == before)) {
    return Status::Internal("rogue: node " + std::to_string(target.id) + " refused " + m.DebugString() +
                            " but changed its state");
  }
  return Status::Ok();
}

Status SimCluster::ForgePreVote(Node& target) {
  const NodeInfo info = target.raw->info();
  Message m;
  m.type = rng_.Chance(700) ? MessageType::kPreVote : MessageType::kPreVoteResponse;
  m.to = target.id;
  m.from = 1 + rng_.Uniform(nodes_.size());
  if (m.from == target.id) return Status::Ok();
  m.term = info.term + (rng_.Chance(900) ? rng_.Uniform(4) : rng_.Uniform(kMaxTermJump));
  m.log_term = rng_.Uniform(m.term + 1);
  m.index = rng_.Uniform(info.last_index + 4);
  m.reject = rng_.Chance(300);
  if (m.type == MessageType::kPreVoteResponse && m.reject) {
    // A rejection with a higher term lifts the receiver's term (that is how
    // Raft spreads terms), so it carries state: only an ordinary term. One
    // lifted far past the others' bound would cut that node off from them
    // for good, as a peer lying under a member's id can. (No extra draw:
    // the same seed stays the same run.)
    m.term = info.term + m.term % 4;
  }
  Status s = target.raw->Step(m);
  ++stats_.forged;
  Trace('F', target.id, s.ok() ? 0 : 1, 0, &m);
  if (!s.ok()) return Status::Internal("rogue: node " + std::to_string(target.id) + " failed on a pre-vote: " + s.ToString());
  return Status::Ok();
}

Status SimCluster::ForgeFromOutsider(Node& target) {
  const NodeInfo info = target.raw->info();
  if (info.voters.empty() && info.learners.empty()) return Status::Ok();
  Message m;
  static constexpr MessageType kOutsiderTypes[] = {
      MessageType::kAppendResponse,  MessageType::kVoteResponse, MessageType::kPreVoteResponse,
      MessageType::kHeartbeatResponse, MessageType::kTimeoutNow, MessageType::kReadIndex,
      MessageType::kReadIndexResponse};
  m.type = kOutsiderTypes[rng_.Uniform(std::size(kOutsiderTypes))];
  m.to = target.id;
  m.from = nodes_.size() + 1;  // never a member: the spare is nodes_.size()
  m.term = info.term + rng_.Uniform(3);
  m.log_term = rng_.Uniform(m.term + 1);
  m.index = rng_.Uniform(info.last_index + 3);
  m.commit = rng_.Uniform(info.last_index + 3);
  m.reject = rng_.Chance(500);
  const Observable before = Observe(*target.raw);
  Status s = target.raw->Step(m);
  ++stats_.forged;
  Trace('F', target.id, s.ok() ? 0 : 1, 0, &m);
  if (!(Observe(*target.raw) == before)) {
    return Status::Internal("rogue: node " + std::to_string(target.id) + " acted on " + m.DebugString() +
                            " from outside its configuration");
  }
  return Status::Ok();
}

Status SimCluster::Replay() {
  if (delivered_.empty()) return Status::Ok();
  const Message& m = delivered_[rng_.Uniform(delivered_.size())];
  Node& to = *nodes_[m.to - 1];
  if (!to.up()) return Status::Ok();
  ++stats_.replayed;
  Trace('r', m.to, 0, 0, &m);
  // As any honest message: a replay may carry a term a forged message lifted.
  return StepHonest(to, m);
}

}  // namespace gpool::raft::sim
