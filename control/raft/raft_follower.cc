// Raft, follower and candidate side: their step functions and the handlers
// for what a leader sends (Append, Heartbeat, InstallSnapshot). Elections
// themselves (StartElection, Poll, vote requests) are in raft.cc.
#include "control/raft/raft.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

#include <algorithm>
#include <utility>

namespace gpool::raft {

// --- Candidate and follower step functions ---------------------------------

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
  const bool from_a_leader =
      m.type == MessageType::kAppend || m.type == MessageType::kHeartbeat || m.type == MessageType::kSnapshot;
  if (from_a_leader && lead_ != 0 && m.from != lead_) {
    // One leader per term: a second one is forged (or a bug). Following it
    // could let it overwrite entries the real leader counted as replicated.
    return Status::Internal("raft: node " + std::to_string(m.from) + " claims leadership of term " +
                            std::to_string(term_) + ", which node " + std::to_string(lead_) + " leads");
  }
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

}  // namespace gpool::raft
