// Raft, common part: construction, role transitions and elections, ticks, the
// rules Step() applies to every role (term comparison, vote requests), and
// plumbing. The role step functions live in raft_follower.cc (follower and
// candidate) and raft_leader.cc (leader, replication, client calls, ReadIndex).
#include "control/raft/raft.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

#include <algorithm>
#include <utility>

namespace gpool::raft {
namespace {

// Context of the vote requests of an election forced by TimeoutNow: voters
// skip the leader-lease check for it, since the leader itself asked for it.
constexpr char kTransferContext[] = "transfer";

bool IsAnswer(MessageType type) {
  return type == MessageType::kAppendResponse || type == MessageType::kHeartbeatResponse ||
         type == MessageType::kVoteResponse || type == MessageType::kPreVoteResponse;
}

MessageType ResponseTo(MessageType type) {
  return type == MessageType::kPreVote ? MessageType::kPreVoteResponse : MessageType::kVoteResponse;
}

}  // namespace

Result<std::unique_ptr<Raft>> Raft::Create(const Config& config, InitialState state) {
  GPOOL_RETURN_IF_ERROR(config.Validate());
  Snapshot base = std::move(state.snapshot);
  if (base.empty()) {
    // No snapshot: the bootstrap peers are the configuration at index 0.
    base = Snapshot{0, 0, ConfState{config.peers}, {}};
  }
  GPOOL_ASSIGN_OR_RETURN(RaftLog log, RaftLog::Open(std::move(base), std::move(state.entries),
                                                    state.hard_state.commit, state.applied));
  if (state.hard_state.term < log.last_term()) {
    return Status::InvalidArgument("raft: hard state term " + std::to_string(state.hard_state.term) +
                                   " is older than the last log term " + std::to_string(log.last_term()));
  }
  std::unique_ptr<Raft> r(new Raft(config, std::move(log)));
  r->term_ = state.hard_state.term;
  r->vote_ = state.hard_state.vote;
  r->BecomeFollower(r->term_, 0);
  return r;
}

Raft::Raft(const Config& config, RaftLog log)
    : cfg_(config),
      id_(config.id),
      rng_(config.seed ^ (config.id * 0x9E3779B97F4A7C15ULL)),
      log_(std::move(log)),
      seen_conf_version_(log_.conf().version()) {}

// --- Role transitions ------------------------------------------------------

void Raft::Reset(uint64_t term) {
  if (term_ != term) {
    term_ = term;
    vote_ = 0;
  }
  lead_ = 0;
  election_elapsed_ = 0;
  heartbeat_elapsed_ = 0;
  ResetRandomizedElectionTimeout();
  votes_.clear();
  prs_.clear();
  lead_transferee_ = 0;
  pending_conf_index_ = 0;
  uncommitted_.clear();
  uncommitted_bytes_ = 0;
  read_only_.Clear();
  pending_reads_.clear();
}

void Raft::BecomeFollower(uint64_t term, uint64_t lead) {
  Reset(term);
  lead_ = lead;
  role_ = Role::kFollower;
}

void Raft::BecomePreCandidate() {
  // A pre-candidate keeps its term and vote: it only asks.
  votes_.clear();
  prs_.clear();
  lead_ = 0;
  role_ = Role::kPreCandidate;
}

void Raft::BecomeCandidate() {
  Reset(term_ + 1);
  vote_ = id_;
  role_ = Role::kCandidate;
}

void Raft::BecomeLeader() {
  Reset(term_);
  lead_ = id_;
  role_ = Role::kLeader;
  SyncProgress();
  // The empty entry lets the leader commit entries of earlier terms (which it
  // may only do indirectly, paper 5.4.2) and is the first commit a ReadIndex
  // or a configuration change waits for.
  Status s = AppendEntries({LogEntry{}});
  (void)s;  // appending at last_index() + 1 with an empty entry cannot fail
  pending_conf_index_ = log_.last_index();
  BcastAppend();
}

bool Raft::Promotable() const { return conf().Contains(id_) && !log_.pending_snapshot().has_value(); }

void Raft::StartElection(ElectionKind kind, bool transfer) {
  if (!Promotable()) return;
  if (term_ >= kMaxTerm) return;  // unreachable honestly; never wrap to term 0
  MessageType type;
  uint64_t term;
  if (kind == ElectionKind::kPreElection) {
    BecomePreCandidate();
    type = MessageType::kPreVote;
    term = term_ + 1;  // the term it would campaign in; its own stays put
  } else {
    BecomeCandidate();
    type = MessageType::kVote;
    term = term_;
  }
  if (Poll(id_, true) == VoteResult::kWon) {
    // A single voter wins at once.
    if (kind == ElectionKind::kPreElection) {
      StartElection(ElectionKind::kElection, transfer);
    } else {
      BecomeLeader();
    }
    return;
  }
  for (uint64_t v : conf().voters) {
    if (v == id_) continue;
    Message m{.type = type, .to = v, .term = term, .log_term = log_.last_term(), .index = log_.last_index()};
    if (transfer) m.context = kTransferContext;
    Send(std::move(m));
  }
}

Raft::VoteResult Raft::Poll(uint64_t from, bool granted) {
  if (conf().Contains(from)) votes_.emplace(from, granted);
  size_t yes = 0, no = 0;
  for (uint64_t v : conf().voters) {
    auto it = votes_.find(v);
    if (it == votes_.end()) continue;
    (it->second ? yes : no)++;
  }
  if (yes >= Quorum()) return VoteResult::kWon;
  if (no > conf().voters.size() - Quorum()) return VoteResult::kLost;
  return VoteResult::kPending;
}

// --- Ticks -----------------------------------------------------------------

void Raft::Tick() {
  if (role_ == Role::kLeader) {
    TickHeartbeat();
  } else {
    TickElection();
  }
}

int Raft::TicksUntilDue() const {
  if (role_ == Role::kLeader) return std::max(1, cfg_.heartbeat_tick - heartbeat_elapsed_);
  if (!Promotable()) return 1 << 20;
  return std::max(1, randomized_election_timeout_ - election_elapsed_);
}

void Raft::TickElection() {
  ++election_elapsed_;
  if (Promotable() && election_elapsed_ >= randomized_election_timeout_) {
    election_elapsed_ = 0;
    StartElection(cfg_.pre_vote ? ElectionKind::kPreElection : ElectionKind::kElection, false);
  }
}

void Raft::TickHeartbeat() {
  ++heartbeat_elapsed_;
  ++election_elapsed_;
  if (election_elapsed_ >= cfg_.election_tick) {
    election_elapsed_ = 0;
    if (cfg_.check_quorum) {
      if (!QuorumActive()) {
        // Cut off from a quorum: a new leader may exist, so stop serving.
        BecomeFollower(term_, 0);
        return;
      }
      for (auto& [peer, pr] : prs_) {
        if (peer != id_) pr.recent_active = false;
      }
    }
    lead_transferee_ = 0;  // a transfer that took a whole election timeout failed
  }
  // A snapshot message may have been lost; after a while, probe again (which
  // sends a fresh snapshot if the follower still needs one).
  for (auto& [peer, pr] : prs_) {
    if (pr.state == ProgressState::kSnapshot && ++pr.snapshot_ticks > 2 * cfg_.election_tick) pr.BecomeProbe();
  }
  if (heartbeat_elapsed_ >= cfg_.heartbeat_tick) {
    heartbeat_elapsed_ = 0;
    BcastHeartbeat(read_only_.LastContext());
  }
}

bool Raft::QuorumActive() const {
  size_t active = 0;
  for (uint64_t v : conf().voters) {
    if (v == id_) {
      ++active;
      continue;
    }
    auto it = prs_.find(v);
    if (it != prs_.end() && it->second.recent_active) ++active;
  }
  return active >= Quorum();
}

// --- Step ------------------------------------------------------------------

Status Raft::ValidateMessage(const Message& m) const {
  if (m.type == MessageType::kSnapshotChunk || m.type == MessageType::kSnapshotChunkAck) {
    // The actor reassembles chunks into the kSnapshot they carry, and its
    // sender takes their acknowledgements.
    return Status::InvalidArgument("raft: a snapshot chunk or its acknowledgement is not a message for the core");
  }
  if (m.to != id_) {
    return Status::InvalidArgument("raft: message for node " + std::to_string(m.to) + " stepped into node " +
                                   std::to_string(id_));
  }
  if (m.from == 0) return Status::InvalidArgument("raft: message without a sender");
  const auto beyond = [&](const char* field, uint64_t value, uint64_t bound) {
    return Status::InvalidArgument("raft: " + std::string(MessageTypeName(m.type)) + " from " +
                                   std::to_string(m.from) + " refused: " + field + " " + std::to_string(value) +
                                   " is beyond " + std::to_string(bound));
  };
  if (m.term > kMaxTerm) return beyond("term", m.term, kMaxTerm);
  if (m.term > term_ && m.term - term_ > kMaxTermJump) return beyond("term", m.term, term_ + kMaxTermJump);
  if (m.log_term > kMaxTerm) return beyond("log_term", m.log_term, kMaxTerm);
  if (m.snapshot.term > kMaxTerm) return beyond("snapshot term", m.snapshot.term, kMaxTerm);
  if (m.index > kMaxIndex) return beyond("index", m.index, kMaxIndex);
  if (m.commit > kMaxIndex) return beyond("commit", m.commit, kMaxIndex);
  if (m.reject_hint > kMaxIndex) return beyond("reject_hint", m.reject_hint, kMaxIndex);
  if (m.snapshot.index > kMaxIndex) return beyond("snapshot index", m.snapshot.index, kMaxIndex);
  if (m.entries.size() > kMaxIndex - m.index) return beyond("last entry index", m.index + m.entries.size(), kMaxIndex);
  if (m.type == MessageType::kAppend) {
    uint64_t prev_term = m.log_term;
    for (size_t i = 0; i < m.entries.size(); ++i) {
      const LogEntry& e = m.entries[i];
      if (e.index != m.index + 1 + i || e.term < prev_term || e.term > m.term) {
        return Status::InvalidArgument("raft: append from " + std::to_string(m.from) +
                                       " carries a malformed entry at position " + std::to_string(i));
      }
      prev_term = e.term;
    }
  }
  if (m.type == MessageType::kSnapshot && (m.snapshot.index == 0 || m.snapshot.term > m.term)) {
    return Status::InvalidArgument("raft: malformed snapshot message from " + std::to_string(m.from));
  }
  return Status::Ok();
}

Status Raft::Step(const Message& m) {
  GPOOL_RETURN_IF_ERROR(ValidateMessage(m));
  if (FromOutsider(m)) {
    ++dropped_messages_;
    return Status::Ok();
  }
  if (m.type == MessageType::kReadIndex || m.type == MessageType::kReadIndexResponse) {
    return StepReadIndexMessage(m);
  }
  const bool pre_vote_grant = m.type == MessageType::kPreVoteResponse && !m.reject;
  if (m.term > term_ && IsAnswer(m.type) && !pre_vote_grant) {
    // An answer of a higher term deposes a leader without the lease's
    // protection, so only a voter may send one (a learner or a stranger has
    // no term we must learn: the voters that elected a newer leader tell
    // us), and only within the answer bound (config.h). A pre-vote grant
    // carries the term asked about and never changes ours.
    if (!AnswerFromVoter(m.from)) {
      ++dropped_messages_;
      return Status::Ok();
    }
    if (m.term - term_ > kMaxAnswerTermJump) {
      return Status::InvalidArgument("raft: " + std::string(MessageTypeName(m.type)) + " from " +
                                     std::to_string(m.from) + " refused: term " + std::to_string(m.term) +
                                     " is beyond " + std::to_string(term_ + kMaxAnswerTermJump) +
                                     " (an answer may raise the term by at most " +
                                     std::to_string(kMaxAnswerTermJump) + ")");
    }
  }
  if (m.term > term_) {
    // The leader lease: a node that heard from a leader within the minimum
    // election timeout ignores candidates and would-be leaders of higher
    // terms, so a node that was cut off or removed, or a forged message,
    // cannot depose a working leader. Ignoring a message is always safe in
    // Raft. A real new leader is heard once the old one's lease runs out:
    // it had a quorum of votes, so some voter of that quorum answers the old
    // leader with the higher term (answers are not ignored), and it steps
    // down. A transfer (the leader itself asked) is exempt.
    const bool request = m.type == MessageType::kVote || m.type == MessageType::kPreVote;
    const bool from_a_leader =
        m.type == MessageType::kAppend || m.type == MessageType::kHeartbeat || m.type == MessageType::kSnapshot;
    const bool forced = request && m.context == kTransferContext;
    if (((request && !forced) || (from_a_leader && m.from != lead_)) && InLeaderLease()) {
      ++dropped_messages_;
      return Status::Ok();
    }
    if (m.type == MessageType::kPreVote) {
      // Answering a pre-vote never changes our term.
    } else if (m.type == MessageType::kPreVoteResponse && !m.reject) {
      // A grant carries the future term the pre-candidate asked about.
    } else if (m.type == MessageType::kAppend || m.type == MessageType::kHeartbeat ||
               m.type == MessageType::kSnapshot) {
      BecomeFollower(m.term, m.from);
    } else {
      BecomeFollower(m.term, 0);
    }
  } else if (m.term < term_) {
    if ((cfg_.check_quorum || cfg_.pre_vote) &&
        (m.type == MessageType::kHeartbeat || m.type == MessageType::kAppend)) {
      // A stale leader. With check-quorum or pre-vote our higher term may
      // never reach it otherwise (we would not win an election with a shorter
      // log, and its followers ignore us), so tell it; it steps down.
      Send({.type = MessageType::kAppendResponse, .to = m.from});
    } else if (m.type == MessageType::kPreVote || m.type == MessageType::kVote) {
      // Reject with our term so the candidate catches up (paper Figure 2).
      // Staying silent can livelock: a candidate whose configuration does
      // not include us never hears our term any other way, while we keep
      // losing elections for want of its vote.
      Send({.type = ResponseTo(m.type), .to = m.from, .reject = true});
    }
    return Status::Ok();
  }

  if (m.type == MessageType::kVote || m.type == MessageType::kPreVote) return HandleVoteRequest(m);
  switch (role_) {
    case Role::kLeader: return StepLeader(m);
    case Role::kPreCandidate:
    case Role::kCandidate: return StepCandidate(m);
    case Role::kFollower: return StepFollower(m);
  }
  return Status::Ok();
}

bool Raft::AnswerFromVoter(uint64_t from) const {
  // The committed configuration counts too: a voter that the latest,
  // uncommitted change removes still takes part until the change commits.
  return conf().Contains(from) || log_.conf().At(log_.committed()).Contains(from);
}

bool Raft::InLeaderLease() const {
  return cfg_.check_quorum && lead_ != 0 && election_elapsed_ < cfg_.election_tick;
}

bool Raft::FromOutsider(const Message& m) const {
  // A node that has no configuration yet (one joining) must listen to the
  // leader that adds it, whoever that is.
  if (conf().empty()) return false;
  if (conf().IsMember(m.from) || m.from == lead_ || prs_.count(m.from) > 0) return false;
  // A member of the committed configuration that the latest (uncommitted)
  // one drops may still be needed to settle the change.
  if (log_.conf().At(log_.committed()).IsMember(m.from)) return false;
  // A node that follows a live leader needs no one else.
  if (lead_ != 0 && election_elapsed_ < cfg_.election_tick) return true;
  switch (m.type) {
    case MessageType::kVote:
    case MessageType::kPreVote:
    case MessageType::kAppend:
    case MessageType::kHeartbeat:
    case MessageType::kSnapshot:
      // Without a live leader, requests get through. A node that missed
      // configuration changes (cut off, or removed and added again) can be
      // asked for its vote, or led, by a replica it has never heard of, and
      // may be a voter that replica cannot win without: dropping them left
      // such nodes stuck for good (the simulator found both).
      return false;
    default:
      // Answers, TimeoutNow and reads come only from peers this node
      // talks to; from anyone else they are forged or stale.
      return true;
  }
}

Status Raft::HandleVoteRequest(const Message& m) {
  // We may vote again for the node we already voted for (a retry), or for
  // anyone if we have not voted and know no leader in this term; a pre-vote
  // for a later term is hypothetical and binds nothing.
  const bool can_vote = vote_ == m.from || (vote_ == 0 && lead_ == 0) ||
                        (m.type == MessageType::kPreVote && m.term > term_);
  if (can_vote && log_.IsUpToDate(m.index, m.log_term)) {
    Send({.type = ResponseTo(m.type), .to = m.from, .term = m.term});
    if (m.type == MessageType::kVote) {
      election_elapsed_ = 0;
      vote_ = m.from;
    }
  } else {
    Send({.type = ResponseTo(m.type), .to = m.from, .term = term_, .reject = true});
  }
  return Status::Ok();
}

// --- Client calls any role serves ------------------------------------------

Status Raft::Campaign() {
  if (role_ == Role::kLeader) return Status::Ok();
  if (!Promotable()) {
    return Status::FailedPrecondition("node " + std::to_string(id_) + " is not a voter and cannot campaign");
  }
  StartElection(cfg_.pre_vote ? ElectionKind::kPreElection : ElectionKind::kElection, false);
  return Status::Ok();
}

Result<Snapshot> Raft::Compact(uint64_t index, std::string data) {
  if (index > log_.applied()) {
    return Status::InvalidArgument("raft: cannot compact to " + std::to_string(index) +
                                   ", past the applied index " + std::to_string(log_.applied()));
  }
  auto term = log_.Term(index);
  if (!term.has_value() || index <= log_.snapshot().index) {
    return Status::FailedPrecondition("raft: index " + std::to_string(index) + " is already compacted");
  }
  Snapshot s{index, *term, log_.conf().At(index), std::move(data)};
  GPOOL_RETURN_IF_ERROR(log_.Compact(s));
  return s;
}

// --- Plumbing --------------------------------------------------------------

void Raft::Send(Message m) {
  m.from = id_;
  const bool termless = m.type == MessageType::kReadIndex || m.type == MessageType::kReadIndexResponse;
  if (termless) {
    m.term = 0;
  } else if (m.term == 0) {
    m.term = term_;
  }
  msgs_.push_back(std::move(m));
}

void Raft::ResetRandomizedElectionTimeout() {
  randomized_election_timeout_ =
      cfg_.election_tick + static_cast<int>(rng_() % static_cast<uint64_t>(cfg_.election_tick));
}

std::vector<Message> Raft::TakeMessages() {
  std::vector<Message> out;
  out.swap(msgs_);
  return out;
}

std::vector<ReadState> Raft::TakeReadStates() {
  std::vector<ReadState> out;
  out.swap(read_states_);
  return out;
}

NodeInfo Raft::info() const {
  NodeInfo n;
  n.id = id_;
  n.term = term_;
  n.vote = vote_;
  n.lead = lead_;
  n.role = role_;
  n.commit = log_.committed();
  n.applied = log_.applied();
  n.first_index = log_.first_index();
  n.last_index = log_.last_index();
  n.snapshot_index = log_.snapshot().index;
  n.voters = conf().voters;
  n.learners = conf().learners;
  n.dropped_messages = dropped_messages_;
  n.lead_transferee = lead_transferee_;
  for (const auto& [peer, pr] : prs_) {
    n.progress[peer] = {pr.match, pr.next, pr.state, pr.inflights.Count(), pr.recent_active};
  }
  return n;
}

}  // namespace gpool::raft
