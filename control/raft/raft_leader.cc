// Raft, leader side: its step function and the answers it handles, log
// replication (appends, snapshots, heartbeats, commitment), progress per
// voter across configuration changes, the client calls that need a leader
// (Propose, ProposeConfChange, TransferLeadership) and ReadIndex.
#include "control/raft/raft.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/model/users.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace gpool::raft {

// --- Leader step function --------------------------------------------------

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
  uint64_t bytes = 0;
  for (const LogEntry& e : *entries) bytes += e.ByteSize();
  Send({.type = MessageType::kAppend,
        .to = to,
        .log_term = *prev_term,
        .index = prev,
        .entries = std::move(*entries),
        .commit = log_.committed()});
  pr.SentEntries(last, count, bytes);
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
    Message m{.type = MessageType::kHeartbeat, .to = peer, .commit = std::min(pr.match, log_.committed())};
    // Set apart: with the context copied inside the initializer, GCC 12 at -O3
    // (this file alone, not inlining Send) reports a false -Wmaybe-uninitialized.
    m.context = context;
    Send(std::move(m));
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
    if (peer != id_ && conf().Contains(peer) && pr.match == log_.last_index()) {
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
  // A removed node keeps getting appends until its removal commits, so it
  // learns it was removed (and stops campaigning) rather than time out.
  if (log_.conf().LatestIndex() <= log_.committed()) {
    for (auto it = prs_.begin(); it != prs_.end();) {
      if (conf().IsMember(it->first)) {
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
  // Learners get the log like voters; only the quorum counts leave them out.
  for (const auto* members : {&conf().voters, &conf().learners}) {
    for (uint64_t v : *members) {
      if (prs_.count(v)) continue;
      auto [it, inserted] = prs_.emplace(v, Progress(log_.last_index() + 1, cfg_.max_inflight, cfg_.max_inflight_bytes));
      if (v == id_) it->second.match = log_.last_index();
    }
  }
}

// --- Client calls a leader serves ------------------------------------------

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

Status Raft::CheckUncommitted(uint64_t bytes) {
  while (!uncommitted_.empty() && uncommitted_.front().first <= log_.committed()) {
    uncommitted_bytes_ -= uncommitted_.front().second;
    uncommitted_.pop_front();
  }
  if (cfg_.max_uncommitted_bytes == 0 || uncommitted_.empty() ||
      uncommitted_bytes_ + bytes <= cfg_.max_uncommitted_bytes) {
    return Status::Ok();
  }
  return Status::ResourceExhausted("raft: the leader is busy: " + std::to_string(uncommitted_bytes_) +
                                   " bytes of proposals are waiting for a quorum to commit them (at most " +
                                   std::to_string(cfg_.max_uncommitted_bytes) + "); retry shortly");
}

Result<uint64_t> Raft::Propose(std::string_view payload) {
  GPOOL_RETURN_IF_ERROR(CheckCanPropose());
  GPOOL_RETURN_IF_ERROR(CheckUncommitted(payload.size()));
  GPOOL_RETURN_IF_ERROR(AppendEntries({LogEntry{0, 0, EncodeNormal(payload)}}));
  const uint64_t index = log_.last_index();
  if (cfg_.max_uncommitted_bytes != 0 && index > log_.committed()) {
    uncommitted_.emplace_back(index, payload.size());
    uncommitted_bytes_ += payload.size();
  }
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
    case ConfChangeType::kAddVoter:  // a new voter, or a learner's promotion
      if (next.Contains(change.node_id)) return Status::AlreadyExists(who + " is already a voter");
      std::erase(next.learners, change.node_id);
      next.voters.push_back(change.node_id);
      break;
    case ConfChangeType::kAddLearner:
      if (next.Contains(change.node_id)) return Status::AlreadyExists(who + " is already a voter");
      if (next.IsLearner(change.node_id)) return Status::AlreadyExists(who + " is already a learner");
      next.learners.push_back(change.node_id);
      break;
    case ConfChangeType::kRemoveVoter:
      if (next.IsLearner(change.node_id)) {
        std::erase(next.learners, change.node_id);
        break;
      }
      if (!next.Contains(change.node_id)) return Status::NotFound(who + " is neither a voter nor a learner");
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

}  // namespace gpool::raft
