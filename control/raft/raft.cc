#include "control/raft/raft.h"

#include <algorithm>
#include <utility>

namespace gpool::raft {
namespace {

// Context of the vote requests of an election forced by TimeoutNow: voters
// skip the leader-lease check for it, since the leader itself asked for it.
constexpr char kTransferContext[] = "transfer";

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
  if (m.to != id_) {
    return Status::InvalidArgument("raft: message for node " + std::to_string(m.to) + " stepped into node " +
                                   std::to_string(id_));
  }
  if (m.from == 0) return Status::InvalidArgument("raft: message without a sender");
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
  if (m.type == MessageType::kReadIndex || m.type == MessageType::kReadIndexResponse) {
    return StepReadIndexMessage(m);
  }
  if (m.term > term_) {
    if (m.type == MessageType::kVote || m.type == MessageType::kPreVote) {
      // The leader lease: a node that heard from a leader within the minimum
      // election timeout ignores candidates, so a node that was cut off (or
      // removed) cannot depose a working leader. A transfer is exempt.
      const bool forced = m.context == kTransferContext;
      const bool in_lease = cfg_.check_quorum && lead_ != 0 && election_elapsed_ < cfg_.election_tick;
      if (!forced && in_lease) return Status::Ok();
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

Status Raft::StepLeader(const Message& m) {
  switch (m.type) {
    case MessageType::kAppendResponse: return HandleAppendResponse(m);
    case MessageType::kHeartbeatResponse: return HandleHeartbeatResponse(m);
    case MessageType::kAppend:
    case MessageType::kHeartbeat:
    case MessageType::kSnapshot:
      return Status::Internal("raft: node " + std::to_string(m.from) + " also claims leadership of term " +
                              std::to_string(term_));
    default: return Status::Ok();
  }
}

Status Raft::StepCandidate(const Message& m) {
  const MessageType mine =
      role_ == Role::kPreCandidate ? MessageType::kPreVoteResponse : MessageType::kVoteResponse;
  switch (m.type) {
    case MessageType::kAppend:
      BecomeFollower(m.term, m.from);
      return HandleAppend(m);
    case MessageType::kHeartbeat:
      BecomeFollower(m.term, m.from);
      return HandleHeartbeat(m);
    case MessageType::kSnapshot:
      BecomeFollower(m.term, m.from);
      return HandleSnapshot(m);
    case MessageType::kPreVoteResponse:
    case MessageType::kVoteResponse: {
      if (m.type != mine) return Status::Ok();
      switch (Poll(m.from, !m.reject)) {
        case VoteResult::kWon:
          if (role_ == Role::kPreCandidate) {
            StartElection(ElectionKind::kElection, false);
          } else {
            BecomeLeader();
          }
          break;
        case VoteResult::kLost:
          BecomeFollower(term_, 0);
          break;
        case VoteResult::kPending:
          break;
      }
      return Status::Ok();
    }
    default: return Status::Ok();
  }
}

Status Raft::StepFollower(const Message& m) {
  switch (m.type) {
    case MessageType::kAppend:
      election_elapsed_ = 0;
      lead_ = m.from;
      return HandleAppend(m);
    case MessageType::kHeartbeat:
      election_elapsed_ = 0;
      lead_ = m.from;
      return HandleHeartbeat(m);
    case MessageType::kSnapshot:
      election_elapsed_ = 0;
      lead_ = m.from;
      return HandleSnapshot(m);
    case MessageType::kTimeoutNow:
      StartElection(ElectionKind::kElection, true);
      return Status::Ok();
    default: return Status::Ok();
  }
}

// --- Follower handlers -----------------------------------------------------

Status Raft::HandleAppend(const Message& m) {
  if (m.index < log_.committed()) {
    // Everything up to our commit index already matches; say how far.
    Send({.type = MessageType::kAppendResponse, .to = m.from, .index = log_.committed()});
    return Status::Ok();
  }
  auto appended = log_.MaybeAppend(m.index, m.log_term, m.commit, m.entries);
  OnLogChanged();
  if (!appended.ok()) return appended.status();
  if (appended->has_value()) {
    Send({.type = MessageType::kAppendResponse, .to = m.from, .index = **appended});
    return Status::Ok();
  }
  // Fast backtracking: point the leader at the last index where our log may
  // agree with its, given the term it expected, so it skips a whole
  // conflicting term per round trip instead of one entry.
  auto [hint, hint_term] = log_.FindConflictByTerm(std::min(m.index, log_.last_index()), m.log_term);
  Send({.type = MessageType::kAppendResponse,
        .to = m.from,
        .log_term = hint_term,
        .index = m.index,
        .reject = true,
        .reject_hint = hint});
  return Status::Ok();
}

Status Raft::HandleHeartbeat(const Message& m) {
  // The leader caps the commit index at what it knows we hold, so an index
  // past our log means we lost entries we acknowledged (an empty data dir).
  // Committing what we do hold could commit entries that diverge from the
  // leader's; refuse instead, so the leader probes us from our real end.
  if (m.commit > log_.last_index()) {
    Send({.type = MessageType::kHeartbeatResponse,
          .to = m.from,
          .index = m.commit,
          .reject = true,
          .reject_hint = log_.last_index(),
          .context = m.context});
    return Status::Ok();
  }
  GPOOL_RETURN_IF_ERROR(log_.CommitTo(m.commit));
  Send({.type = MessageType::kHeartbeatResponse, .to = m.from, .context = m.context});
  return Status::Ok();
}

Status Raft::HandleSnapshot(const Message& m) {
  const Snapshot& s = m.snapshot;
  if (s.index <= log_.committed()) {
    Send({.type = MessageType::kAppendResponse, .to = m.from, .index = log_.committed()});
    return Status::Ok();
  }
  if (log_.MatchTerm(s.index, s.term)) {
    // We already hold the entries; the snapshot only tells us they commit.
    GPOOL_RETURN_IF_ERROR(log_.CommitTo(s.index));
  } else {
    log_.Restore(s);
    OnLogChanged();
  }
  Send({.type = MessageType::kAppendResponse, .to = m.from, .index = log_.committed()});
  return Status::Ok();
}

// --- Leader handlers -------------------------------------------------------

Status Raft::HandleAppendResponse(const Message& m) {
  auto it = prs_.find(m.from);
  if (it == prs_.end()) return Status::Ok();
  Progress& pr = it->second;
  pr.recent_active = true;
  if (m.reject) {
    if (m.index >= pr.match && m.reject_hint < pr.match) {
      // It refuses at an index it acknowledged and says its log ends before
      // it: the log is gone, and no reject would ever move `next` below
      // `match`. A late duplicate can land here too; that costs one probe.
      pr.ForgetMatch(m.reject_hint);
      SendAppend(m.from, true);
      return Status::Ok();
    }
    uint64_t next_probe = m.reject_hint;
    if (m.log_term > 0) next_probe = log_.FindConflictByTerm(m.reject_hint, m.log_term).first;
    if (pr.MaybeDecrTo(m.index, next_probe)) {
      if (pr.state == ProgressState::kReplicate) pr.BecomeProbe();
      SendAppend(m.from, true);
    }
    return Status::Ok();
  }
  const bool was_paused = pr.IsPaused();
  if (!pr.MaybeUpdate(m.index)) return Status::Ok();
  switch (pr.state) {
    case ProgressState::kProbe:
      pr.BecomeReplicate();
      break;
    case ProgressState::kSnapshot:
      // Caught up past the snapshot, or the log can take it from here.
      if (pr.match >= pr.pending_snapshot || pr.match + 1 >= log_.first_index()) pr.BecomeProbe();
      break;
    case ProgressState::kReplicate:
      pr.inflights.FreeLE(m.index);
      break;
  }
  if (MaybeCommit()) {
    if (role_ != Role::kLeader) return Status::Ok();  // a removed leader stepped down
    BcastAppend();
  } else if (was_paused) {
    SendAppend(m.from, true);
  }
  // Keep the pipeline to this follower full.
  while (SendAppend(m.from, false)) {
  }
  auto again = prs_.find(m.from);
  if (m.from == lead_transferee_ && again != prs_.end() && again->second.match == log_.last_index()) {
    Send({.type = MessageType::kTimeoutNow, .to = m.from});
  }
  return Status::Ok();
}

Status Raft::HandleHeartbeatResponse(const Message& m) {
  auto it = prs_.find(m.from);
  if (it == prs_.end()) return Status::Ok();
  Progress& pr = it->second;
  pr.recent_active = true;
  pr.probe_sent = false;  // it is alive: a lost probe may be retried
  if (m.reject && m.reject_hint < pr.match) pr.ForgetMatch(m.reject_hint);  // see HandleHeartbeat
  // A full window with a live follower means appends were lost; free a slot
  // so replication can make progress (a gap gets rejected and re-probed).
  if (pr.state == ProgressState::kReplicate && pr.inflights.Full()) pr.inflights.FreeFirstOne();
  if (pr.match < log_.last_index()) SendAppend(m.from, true);
  if (!m.context.empty()) HandleReadAck(m.from, m.context);
  return Status::Ok();
}

// --- Leader replication ----------------------------------------------------

Status Raft::AppendEntries(std::vector<LogEntry> entries) {
  uint64_t index = log_.last_index();
  for (auto& e : entries) {
    e.index = ++index;
    e.term = term_;
  }
  GPOOL_RETURN_IF_ERROR(log_.Append(std::move(entries)));
  OnLogChanged();
  auto self = prs_.find(id_);
  if (self != prs_.end()) self->second.MaybeUpdate(log_.last_index());
  MaybeCommit();  // a single voter commits at once
  return Status::Ok();
}

bool Raft::SendAppend(uint64_t to, bool allow_empty) {
  if (to == id_) return false;
  auto it = prs_.find(to);
  if (it == prs_.end()) return false;
  Progress& pr = it->second;
  if (pr.IsPaused()) return false;
  const uint64_t prev = pr.next - 1;
  auto prev_term = log_.Term(prev);
  auto entries = log_.Entries(pr.next, cfg_.max_msg_entries, cfg_.max_msg_bytes);
  if (!prev_term.has_value() || !entries.has_value()) return SendSnapshot(to, pr);
  if (entries->empty() && !allow_empty) return false;
  const uint64_t count = entries->size();
  const uint64_t last = count > 0 ? entries->back().index : prev;
  Send({.type = MessageType::kAppend,
        .to = to,
        .log_term = *prev_term,
        .index = prev,
        .entries = std::move(*entries),
        .commit = log_.committed()});
  pr.SentEntries(last, count);
  return true;
}

bool Raft::SendSnapshot(uint64_t to, Progress& pr) {
  // Do not push a snapshot at a node that has not answered lately.
  if (!pr.recent_active || log_.snapshot().empty()) return false;
  Send({.type = MessageType::kSnapshot, .to = to, .snapshot = log_.snapshot()});
  pr.BecomeSnapshot(log_.snapshot().index);
  return true;
}

void Raft::BcastAppend() {
  for (auto& [peer, pr] : prs_) SendAppend(peer, true);
}

void Raft::BcastHeartbeat(const std::string& context) {
  for (const auto& [peer, pr] : prs_) {
    if (peer == id_) continue;
    // Never tell a follower to commit past what it is known to hold.
    Send({.type = MessageType::kHeartbeat,
          .to = peer,
          .commit = std::min(pr.match, log_.committed()),
          .context = context});
  }
}

bool Raft::MaybeCommit() {
  if (role_ != Role::kLeader) return false;
  const auto& voters = conf().voters;
  if (voters.empty()) return false;
  std::vector<uint64_t> matches;
  matches.reserve(voters.size());
  for (uint64_t v : voters) {
    auto it = prs_.find(v);
    matches.push_back(it == prs_.end() ? 0 : it->second.match);
  }
  std::sort(matches.begin(), matches.end(), std::greater<>());
  // Only an entry of the current term commits by counting replicas; earlier
  // ones commit with it (paper 5.4.2, Figure 8).
  if (!log_.MaybeCommit(matches[Quorum() - 1], term_)) return false;
  OnCommitted();
  return true;
}

void Raft::OnCommitted() {
  SyncProgress();
  if (!pending_reads_.empty() && CommittedInCurrentTerm()) {
    auto reads = std::move(pending_reads_);
    pending_reads_.clear();
    for (auto& r : reads) HandleReadIndexRequest(r.from, std::move(r.context));
  }
  if (!conf().Contains(id_) && log_.conf().LatestIndex() <= log_.committed()) StepDownAfterRemoval();
}

void Raft::StepDownAfterRemoval() {
  // Tell everyone the removal committed, and hand over to the most
  // up-to-date voter at once rather than wait for an election timeout.
  BcastAppend();
  uint64_t best = 0;
  for (const auto& [peer, pr] : prs_) {
    if (peer != id_ && pr.match == log_.last_index()) {
      best = peer;
      break;
    }
  }
  if (best != 0) Send({.type = MessageType::kTimeoutNow, .to = best});
  BecomeFollower(term_, 0);
}

// --- Configuration ---------------------------------------------------------

void Raft::OnLogChanged() {
  if (log_.conf().version() == seen_conf_version_) return;
  seen_conf_version_ = log_.conf().version();
  if (role_ != Role::kLeader) return;
  SyncProgress();
  if (lead_transferee_ != 0 && !conf().Contains(lead_transferee_)) lead_transferee_ = 0;
  // The quorum changed: a smaller one may commit more.
  if (MaybeCommit() && role_ == Role::kLeader) BcastAppend();
}

void Raft::SyncProgress() {
  const auto& voters = conf().voters;
  // A removed node keeps getting appends until its removal commits, so it
  // learns it was removed (and stops campaigning) rather than time out.
  if (log_.conf().LatestIndex() <= log_.committed()) {
    for (auto it = prs_.begin(); it != prs_.end();) {
      if (conf().Contains(it->first)) {
        ++it;
        continue;
      }
      // A last word, so it can commit its own removal and know it is out:
      // an empty append anchored at the removal entry, which it commits only
      // if its log holds that very entry (a heartbeat's commit would have to
      // be capped at an acknowledgement that may still be on its way).
      if (it->first != id_) {
        const uint64_t anchor = log_.conf().LatestIndex();
        Send({.type = MessageType::kAppend,
              .to = it->first,
              .log_term = log_.Term(anchor).value_or(0),
              .index = anchor,
              .commit = log_.committed()});
      }
      it = prs_.erase(it);
    }
  }
  for (uint64_t v : voters) {
    if (prs_.count(v)) continue;
    auto [it, inserted] = prs_.emplace(v, Progress(log_.last_index() + 1, cfg_.max_inflight));
    if (v == id_) it->second.match = log_.last_index();
  }
}

// --- Client calls ----------------------------------------------------------

std::string Raft::LeaderHint() const {
  if (lead_ == 0 || lead_ == id_) return "node " + std::to_string(id_) + " is not the leader; no leader known";
  return "node " + std::to_string(id_) + " is not the leader; leader is node " + std::to_string(lead_);
}

Status Raft::CheckCanPropose() const {
  if (role_ != Role::kLeader) return Status::NotLeader(LeaderHint());
  if (!conf().Contains(id_)) {
    return Status::NotLeader("node " + std::to_string(id_) + " is leaving the configuration");
  }
  if (lead_transferee_ != 0) {
    return Status::Unavailable("leadership is moving to node " + std::to_string(lead_transferee_));
  }
  return Status::Ok();
}

Result<uint64_t> Raft::Propose(std::string_view payload) {
  GPOOL_RETURN_IF_ERROR(CheckCanPropose());
  GPOOL_RETURN_IF_ERROR(AppendEntries({LogEntry{0, 0, EncodeNormal(payload)}}));
  const uint64_t index = log_.last_index();
  BcastAppend();
  return index;
}

Result<uint64_t> Raft::ProposeConfChange(const ConfChange& change) {
  GPOOL_RETURN_IF_ERROR(CheckCanPropose());
  if (pending_conf_index_ > log_.committed()) {
    return Status::FailedPrecondition("a configuration change (or the leader's first entry) at index " +
                                      std::to_string(pending_conf_index_) + " is not committed yet");
  }
  if (change.node_id == 0) return Status::InvalidArgument("conf change: node id must be nonzero");
  ConfState next = conf();
  const std::string who = "node " + std::to_string(change.node_id);
  switch (change.type) {
    case ConfChangeType::kAddVoter:
      if (next.Contains(change.node_id)) return Status::AlreadyExists(who + " is already a voter");
      next.voters.push_back(change.node_id);
      break;
    case ConfChangeType::kRemoveVoter:
      if (!next.Contains(change.node_id)) return Status::NotFound(who + " is not a voter");
      if (next.voters.size() == 1) return Status::FailedPrecondition("cannot remove the last voter");
      std::erase(next.voters, change.node_id);
      break;
    default: return Status::InvalidArgument("conf change: unknown type");
  }
  next.Normalize();
  GPOOL_RETURN_IF_ERROR(AppendEntries({LogEntry{0, 0, EncodeConfChange({change, std::move(next)})}}));
  const uint64_t index = log_.last_index();
  pending_conf_index_ = index;
  if (role_ == Role::kLeader) BcastAppend();
  return index;
}

Status Raft::TransferLeadership(uint64_t to) {
  if (role_ != Role::kLeader) return Status::NotLeader(LeaderHint());
  if (to == id_) return Status::Ok();
  if (!conf().Contains(to)) return Status::InvalidArgument("node " + std::to_string(to) + " is not a voter");
  if (lead_transferee_ == to) return Status::Ok();
  lead_transferee_ = to;
  election_elapsed_ = 0;  // the transfer gets one election timeout
  if (prs_.at(to).match == log_.last_index()) {
    Send({.type = MessageType::kTimeoutNow, .to = to});
  } else {
    SendAppend(to, true);
  }
  return Status::Ok();
}

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

// --- ReadIndex -------------------------------------------------------------

Status Raft::ReadIndex(std::string context) {
  if (role_ == Role::kLeader) {
    HandleReadIndexRequest(id_, std::move(context));
    return Status::Ok();
  }
  if (role_ != Role::kFollower || lead_ == 0) return Status::NotLeader(LeaderHint());
  Send({.type = MessageType::kReadIndex, .to = lead_, .context = std::move(context)});
  return Status::Ok();
}

Status Raft::StepReadIndexMessage(const Message& m) {
  if (m.type == MessageType::kReadIndex) {
    // Only a leader answers; otherwise the request is dropped and the
    // follower retries (it may have a stale idea of the leader).
    if (role_ == Role::kLeader) HandleReadIndexRequest(m.from, m.context);
  } else {
    read_states_.push_back({m.index, m.context});
  }
  return Status::Ok();
}

bool Raft::CommittedInCurrentTerm() const { return log_.Term(log_.committed()) == term_; }

void Raft::HandleReadIndexRequest(uint64_t from, std::string context) {
  if (conf().voters.size() == 1 && conf().Contains(id_)) {
    RespondToRead(from, log_.committed(), std::move(context));
    return;
  }
  // Until the leader commits an entry of its term it does not know the
  // latest commit index (thesis 6.4 step 1).
  if (!CommittedInCurrentTerm()) {
    pending_reads_.push_back({from, std::move(context)});
    return;
  }
  if (!read_only_.Add(log_.committed(), from, context)) return;
  HandleReadAck(id_, context);
  BcastHeartbeat(context);
}

void Raft::HandleReadAck(uint64_t from, const std::string& context) {
  const std::set<uint64_t>* acks = read_only_.Ack(from, context);
  if (acks == nullptr) return;
  size_t votes = 0;
  for (uint64_t v : conf().voters) votes += acks->count(v);
  if (votes < Quorum()) return;
  for (auto& r : read_only_.Release(context)) RespondToRead(r.from, r.index, std::move(r.context));
}

void Raft::RespondToRead(uint64_t from, uint64_t index, std::string context) {
  if (from == id_) {
    read_states_.push_back({index, std::move(context)});
  } else {
    Send({.type = MessageType::kReadIndexResponse, .to = from, .index = index, .context = std::move(context)});
  }
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
  n.lead_transferee = lead_transferee_;
  for (const auto& [peer, pr] : prs_) {
    n.progress[peer] = {pr.match, pr.next, pr.state, pr.inflights.Count(), pr.recent_active};
  }
  return n;
}

}  // namespace gpool::raft
