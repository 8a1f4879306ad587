#include "control/replication/raft_log.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "control/log/image_file.h"
#include "control/replication/stored_snapshot.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

namespace gpool::replication {

std::string RoleText(raft::Role role) {
  switch (role) {
    case raft::Role::kLeader: return "leader";
    case raft::Role::kFollower: return "follower";
    case raft::Role::kPreCandidate: return "precandidate";
    case raft::Role::kCandidate: return "candidate";
  }
  return "unknown";
}

namespace {

// About 4 ms of applying at 10,000 GPUs (17 us an entry).
constexpr uint64_t kMaxCommittedPerReady = 256;

// A normal entry's command, as the caller proposed it.
storage::LogEntry Unwrap(const raft::LogEntry& entry) {
  return storage::LogEntry{entry.index, entry.term, std::string(raft::NormalPayload(entry))};
}

}  // namespace

RaftLog::RaftLog(const RaftLogOptions& options, storage::LogStore* store, PeerTransport* transport)
    : options_(options),
      store_(store),
      transport_(transport),
      // Live: heard within one election timeout.
      guard_(options.tick_ms * options.election_ticks) {
  limits_.max_frame_bytes = options.max_frame_bytes;
  limits_.max_string_bytes = options.max_frame_bytes;
  if (!options.snapshot_dir.empty()) {
    sender_ = std::make_unique<SnapshotSender>(options.snapshot_dir, options.snapshot_chunk_bytes);
    receiver_ = std::make_unique<SnapshotReceiver>(options.snapshot_dir);
  }
}

Result<std::string> RaftLog::ImageState(SnapshotImage& image) const {
  if (image.file.empty()) return std::move(image.state);
  if (options_.snapshot_dir.empty()) {
    return Status::FailedPrecondition("the snapshot's image is the file " + image.file.name +
                                      " but this replica was given no directory for snapshot images");
  }
  return ReadImageFile(options_.snapshot_dir, image.file);
}

Result<std::unique_ptr<RaftLog>> RaftLog::Open(const RaftLogOptions& options, storage::LogStore* store,
                                               PeerTransport* transport) {
  if (options.id == 0) return Status::InvalidArgument("raft: replica id must be positive");
  if (!options.join && std::find(options.voters.begin(), options.voters.end(), options.id) == options.voters.end()) {
    return Status::InvalidArgument("raft: replica id " + std::to_string(options.id) + " is not one of the voters");
  }
  if (options.tick_ms <= 0) return Status::InvalidArgument("raft: tick_ms must be positive");
  std::unique_ptr<RaftLog> log(new RaftLog(options, store, transport));

  raft::InitialState initial;
  initial.hard_state = store->hard_state();
  auto stored = store->LoadSnapshot();
  if (!stored.ok()) return stored.status().WithContext("loading snapshot");
  if (stored->has_value()) {
    auto& [meta, bytes] = **stored;
    GPOOL_ASSIGN_OR_RETURN(StoredSnapshot snapshot, DecodeStoredSnapshot(bytes));
    GPOOL_ASSIGN_OR_RETURN(SnapshotImage image, DecodeSnapshotImage(snapshot.state));
    log->directory_.Merge(image.replicas);
    const std::string file = image.file.name;
    // A missing or altered image file stops the start here, naming the file.
    GPOOL_ASSIGN_OR_RETURN(std::string state, log->ImageState(image));
    initial.snapshot = raft::Snapshot{meta.index, meta.term, std::move(snapshot.conf), std::move(snapshot.state)};
    log->recovered_.snapshot = log::StateSnapshot{meta.index, meta.term, std::move(state)};
    if (!options.snapshot_dir.empty()) RemoveImageFilesExcept(options.snapshot_dir, file);
  } else if (!options.snapshot_dir.empty()) {
    RemoveImageFilesExcept(options.snapshot_dir, "");
  }
  if (store->FirstIndex() != initial.snapshot.index + 1) {
    return Status::Malformed("raft: the log starts at " + std::to_string(store->FirstIndex()) +
                             " but the snapshot ends at " + std::to_string(initial.snapshot.index));
  }
  if (store->LastIndex() >= store->FirstIndex()) {
    auto entries = store->Entries(store->FirstIndex(), store->LastIndex() + 1);
    if (!entries.ok()) return entries.status().WithContext("loading the raft log");
    initial.entries = std::move(entries).value();
  }
  for (const auto& entry : initial.entries) {
    if (raft::TypeOf(entry) == raft::EntryType::kUnknown) {
      return Status::Malformed("raft: log entry " + std::to_string(entry.index) +
                               " is not a replicated coordinator's (was this data dir written without --peers?)");
    }
  }
  // A crash between saving a snapshot and the hard state leaves the commit
  // index behind the snapshot; the snapshot itself proves that much committed.
  const uint64_t commit = std::max(initial.hard_state.commit, initial.snapshot.index);
  initial.hard_state.commit = commit;
  // The caller replays everything known committed (Recover), so the core
  // starts with it applied and hands out only what commits from now on.
  initial.applied = commit;
  for (const auto& entry : initial.entries) {
    if (entry.index > commit) break;
    if (raft::TypeOf(entry) == raft::EntryType::kNormal) log->recovered_.entries.push_back(Unwrap(entry));
  }
  // The command line first; what the snapshot and the log say wins.
  ReplicaDirectory from_flags;
  from_flags.Merge(options.directory);
  from_flags.Merge(log->directory_.List());
  log->directory_ = std::move(from_flags);
  for (const auto& entry : initial.entries) GPOOL_RETURN_IF_ERROR(log->Learn(entry, entry.index <= commit));
  for (const auto& address : log->directory_.List()) GPOOL_RETURN_IF_ERROR(log->Connect(address));
  log->committed_changes_.clear();  // history, not news

  raft::Config config;
  config.id = options.id;
  // A joining replica has no configuration until the cluster's log (or a
  // snapshot) gives it one; without a stored one the core starts from this.
  if (!options.join) config.peers = options.voters;
  config.election_tick = options.election_ticks;
  config.heartbeat_tick = options.heartbeat_ticks;
  // A backlog (a replica catching up) is applied over several turns, each
  // Ready a slice; MsUntilDue has the loop come straight back for the rest.
  config.max_committed_per_ready = kMaxCommittedPerReady;
  config.seed = options.seed != 0
                    ? options.seed
                    : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  auto node = raft::RawNode::Restart(config, std::move(initial));
  if (!node.ok()) return node.status().WithContext("restarting raft");
  log->node_ = std::move(node).value();
  log->soft_ = log->node_->soft_state();
  log->last_tick_ms_ = options.clock->MonoMs();
  spdlog::info("raft started id={} term={} commit={} last_index={} snapshot_index={} voters={} join={}", options.id,
               log->term(), commit, store->LastIndex(), log->node_->log().snapshot().index,
               log->node_->info().voters.size(), options.join);
  return log;
}

Result<log::Committed> RaftLog::Recover() { return std::exchange(recovered_, log::Committed{}); }

Result<uint64_t> RaftLog::Propose(std::string data) { return node_->Propose(data); }

void RaftLog::Pump() {
  for (const auto& frame : transport_->Drain()) Receive(frame.bytes, frame.sender);
  Tick();
  MaybePromoteLearner();
  TrimCompacted();
}

Status RaftLog::Learn(const raft::LogEntry& entry, bool committed) {
  if (raft::TypeOf(entry) != raft::EntryType::kConfChange) return Status::Ok();
  GPOOL_ASSIGN_OR_RETURN(raft::ConfChangeEntry cc, raft::DecodeConfChange(entry));
  const uint64_t id = cc.change.node_id;
  if (cc.change.type != raft::ConfChangeType::kRemoveVoter) {
    // Added by id alone (or promoted): the flags or the earlier entry say where.
    if (cc.change.context.empty()) return Status::Ok();
    GPOOL_ASSIGN_OR_RETURN(ReplicaAddress address, DecodeReplicaAddress(cc.change.context));
    address.id = id;
    return LearnDirectory({address});
  }
  if (!committed || id == options_.id) return Status::Ok();
  directory_.Erase(id);
  guard_.Forget(id);
  peer_state_versions_.erase(id);
  transport_->RemovePeer(id);
  return Status::Ok();
}

void RaftLog::Receive(std::string_view frame, uint64_t sender) {
  ++stats_.frames_received;
  auto message = raft::DecodeMessage(frame, limits_);
  if (!message.ok()) {
    if (stats_.frames_malformed++ % 1000 == 0) {
      spdlog::warn("raft frame dropped bytes={} error=\"{}\" dropped_so_far={}", frame.size(),
                   message.status().ToString(), stats_.frames_malformed);
    }
    return;
  }
  if (message->to != options_.id) {
    ++stats_.frames_misaddressed;
    return;
  }
  if (sender != 0 && message->from != sender) {
    // An admitted replica's key speaks for that replica only: a frame in
    // another's name (a compromised or misconfigured replica) is dropped
    // before it can depose a leader or vote twice.
    if (stats_.frames_impersonated++ % 1000 == 0) {
      spdlog::warn("raft frame dropped: from={} but the connection is replica={} type={} dropped_so_far={}",
                   message->from, sender, raft::MessageTypeName(message->type), stats_.frames_impersonated);
    }
    return;
  }
  // Only members and replicas of the directory are remembered: without
  // CurveZMQ anyone may send frames to the peer port, and made-up ids must
  // not grow these.
  if (directory_.Find(message->from) != nullptr || node_->log().conf().Latest().IsMember(message->from)) {
    guard_.Heard(message->from, options_.clock->MonoMs());
    peer_state_versions_[message->from] = message->state_version;
  }
  if (message->type == raft::MessageType::kSnapshotChunk) {
    ReceiveChunk(*message);
    return;
  }
  if (message->type == raft::MessageType::kSnapshotChunkAck) {
    if (sender_ != nullptr && IsLeader()) sender_->Acked(*message, options_.clock->MonoMs());
    return;
  }
  Status status = node_->Step(*message);
  if (!status.ok()) {
    if (stats_.step_errors++ % 1000 == 0) {
      spdlog::warn("raft message refused from={} type={} error=\"{}\"", message->from,
                   raft::MessageTypeName(message->type), status.ToString());
    }
  }
}

void RaftLog::ReceiveChunk(const raft::Message& chunk) {
  if (receiver_ == nullptr) {
    ++stats_.step_errors;
    return;
  }
  // Every chunk is answered, so the leader's window moves (or it stops).
  const auto answer = [&](bool rejected) {
    raft::Message ack = receiver_->AckFor(chunk, rejected);
    ack.state_version = options_.state_version;
    transport_->Send(chunk.from, raft::EncodeMessage(ack));
  };
  if (chunk.snapshot.index <= commit_index()) {
    // The core would not install it: let it answer the leader (with its
    // commit index) instead of receiving the whole image for nothing.
    if (chunk.index == 0) {
      raft::Message stale = chunk;
      stale.type = raft::MessageType::kSnapshot;
      stale.context.clear();
      (void)node_->Step(stale);
    }
    answer(/*rejected=*/true);
    return;
  }
  auto taken = receiver_->Take(chunk);
  if (!taken.ok()) {
    spdlog::warn("snapshot chunk refused from={} index={} offset={} error=\"{}\"", chunk.from, chunk.snapshot.index,
                 chunk.index, taken.status().ToString());
    answer(/*rejected=*/true);
    return;
  }
  answer(/*rejected=*/false);
  if (!taken->has_value()) return;
  Status status = node_->Step(**taken);
  if (!status.ok()) {
    ++stats_.step_errors;
    spdlog::warn("received snapshot refused from={} index={} error=\"{}\"", chunk.from, chunk.snapshot.index,
                 status.ToString());
  }
}

int64_t RaftLog::MsUntilDue() const {
  // Committed entries left for a later turn (config.max_committed_per_ready).
  if (write_error_.ok() && node_->log().HasNextCommitted()) return 0;
  // Chunks to send and room in a window: the next turn sends more of them.
  // A full window waits for acks (which wake the loop) or the next tick.
  if (sender_ != nullptr && sender_->ready()) return 1;
  const int64_t due_at = last_tick_ms_ + int64_t{node_->TicksUntilDue()} * options_.tick_ms;
  return std::max<int64_t>(1, due_at - options_.clock->MonoMs());
}

void RaftLog::Tick() {
  if (sender_ != nullptr && sender_->busy()) {
    if (IsLeader()) {
      const int64_t now = options_.clock->MonoMs();
      sender_->Pump([this](uint64_t to, std::string frame) { return transport_->Send(to, frame); }, now,
                    [this, now](uint64_t follower) { return guard_.HeardMsAgo(follower, now); });
    } else {
      sender_->Clear();
    }
  }
  const int64_t now = options_.clock->MonoMs();
  int64_t due = (now - last_tick_ms_) / options_.tick_ms;
  if (due <= 0) return;
  const int64_t max_catchup_ticks = std::max<int64_t>(1, options_.max_catchup_ms / options_.tick_ms);
  last_tick_ms_ = due > max_catchup_ticks ? now : last_tick_ms_ + due * options_.tick_ms;
  due = std::min<int64_t>(due, max_catchup_ticks);
  for (int64_t i = 0; i < due; ++i) node_->Tick();
}

Status RaftLog::Persist(const raft::Ready& rd) {
  if (rd.snapshot.has_value()) {
    const raft::Snapshot& s = *rd.snapshot;
    GPOOL_RETURN_IF_ERROR(store_->SaveSnapshot(storage::SnapshotMeta{s.index, s.term},
                                               EncodeStoredSnapshot(StoredSnapshot{s.conf, s.data}),
                                               /*sync=*/true));
  }
  if (!rd.hard_state.has_value() && rd.entries.empty()) return Status::Ok();
  const storage::HardState before = store_->hard_state();
  const storage::HardState hard = rd.hard_state.value_or(before);
  const bool sync = !rd.entries.empty() || hard.term != before.term || hard.vote != before.vote;
  if (sync) ++stats_.synced_writes;
  return store_->Save(hard, rd.entries, sync);
}

size_t DropCoveredAppendResponses(std::vector<raft::Message>& messages) {
  auto covered = [&](size_t i) {
    const raft::Message& m = messages[i];
    if (m.type != raft::MessageType::kAppendResponse || m.reject) return false;
    for (size_t j = i + 1; j < messages.size(); ++j) {
      const raft::Message& later = messages[j];
      if (later.type == raft::MessageType::kAppendResponse && !later.reject && later.to == m.to &&
          later.term == m.term && later.index >= m.index) {
        return true;
      }
    }
    return false;
  };
  size_t kept = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (covered(i)) continue;
    if (kept != i) messages[kept] = std::move(messages[i]);
    ++kept;
  }
  const size_t dropped = messages.size() - kept;
  messages.resize(kept);
  return dropped;
}

size_t MergeContiguousAppends(std::vector<raft::Message>& messages, uint64_t max_entries, uint64_t max_bytes) {
  std::map<uint64_t, size_t> last_to;  // replica -> position (in the kept prefix) of the last message to it
  std::map<uint64_t, uint64_t> bytes_of;  // kept position -> its entries' bytes, once merged into
  size_t kept = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    raft::Message& m = messages[i];
    auto last = last_to.find(m.to);
    if (m.type == raft::MessageType::kAppend && last != last_to.end()) {
      raft::Message& into = messages[last->second];
      const bool follows = into.type == raft::MessageType::kAppend && into.term == m.term && !into.entries.empty() &&
                           m.index == into.index + into.entries.size() && m.log_term == into.entries.back().term;
      uint64_t& bytes = bytes_of[last->second];
      if (bytes == 0) {
        for (const auto& e : into.entries) bytes += e.ByteSize();
      }
      uint64_t more = 0;
      for (const auto& e : m.entries) more += e.ByteSize();
      if (follows && into.entries.size() + m.entries.size() <= max_entries && bytes + more <= max_bytes) {
        into.entries.insert(into.entries.end(), std::make_move_iterator(m.entries.begin()),
                            std::make_move_iterator(m.entries.end()));
        into.commit = std::max(into.commit, m.commit);
        bytes += more;
        continue;
      }
    }
    if (kept != i) messages[kept] = std::move(m);
    last_to[messages[kept].to] = kept;
    ++kept;
  }
  const size_t merged = messages.size() - kept;
  messages.resize(kept);
  return merged;
}

void RaftLog::Send(std::vector<raft::Message>& messages) {
  stats_.appends_merged += MergeContiguousAppends(messages, kMaxMergedEntries, kMaxMergedBytes);
  stats_.responses_coalesced += DropCoveredAppendResponses(messages);
  for (raft::Message& m : messages) {
    m.state_version = options_.state_version;
    if (m.type == raft::MessageType::kSnapshot && SendAsChunks(m)) continue;
    transport_->Send(m.to, raft::EncodeMessage(m));
  }
}

bool RaftLog::SendAsChunks(const raft::Message& m) {
  // A reference is a few hundred bytes; anything much larger is an inline
  // image (stored before issue 49), sent whole as before, not decoded here.
  constexpr size_t kMaxReferenceBytes = 1 << 20;
  if (sender_ == nullptr || m.snapshot.data.size() > kMaxReferenceBytes) return false;
  auto image = DecodeSnapshotImage(m.snapshot.data);
  if (!image.ok() || image->file.empty()) return false;
  Status started = sender_->Start(m, image->file, options_.clock->MonoMs());
  if (!started.ok()) {
    spdlog::warn("snapshot not sent to={} index={} error=\"{}\"", m.to, m.snapshot.index, started.ToString());
  }
  return true;
}

Status RaftLog::Collect(const raft::Ready& rd, log::Committed& out) {
  if (rd.snapshot.has_value()) {
    ++stats_.snapshots_installed;
    GPOOL_ASSIGN_OR_RETURN(SnapshotImage image, DecodeSnapshotImage(rd.snapshot->data));
    GPOOL_RETURN_IF_ERROR(LearnDirectory(image.replicas));
    const std::string file = image.file.name;
    // A received image file is read here, once, on the loop: the follower's
    // restore, not the leader's.
    GPOOL_ASSIGN_OR_RETURN(std::string state, ImageState(image));
    out.snapshot = log::StateSnapshot{rd.snapshot->index, rd.snapshot->term, std::move(state)};
    // Persist stored the reference: older images are unreferenced now.
    if (!options_.snapshot_dir.empty()) RemoveImageFilesExcept(options_.snapshot_dir, file);
  }
  for (const raft::LogEntry& entry : rd.committed_entries) {
    switch (raft::TypeOf(entry)) {
      case raft::EntryType::kNormal:
        out.entries.push_back(Unwrap(entry));
        break;
      case raft::EntryType::kEmpty:
        break;  // a new leader's no-op
      case raft::EntryType::kConfChange: {
        GPOOL_ASSIGN_OR_RETURN(raft::ConfChangeEntry cc, raft::DecodeConfChange(entry));
        GPOOL_RETURN_IF_ERROR(Learn(entry, /*committed=*/true));
        spdlog::info("raft configuration committed index={} change={} replica={} voters={}", entry.index,
                     raft::ConfChangeTypeName(cc.change.type), cc.change.node_id, cc.result.voters.size());
        committed_changes_.push_back(
            CommittedConfChange{entry.index, entry.term, cc.change, cc.result.voters, cc.result.learners});
        break;
      }
      case raft::EntryType::kUnknown:
        spdlog::error("raft entry of unknown kind skipped index={} term={}", entry.index, entry.term);
        break;
    }
  }
  return Status::Ok();
}

Result<log::Committed> RaftLog::Sync() {
  log::Committed out;
  while (write_error_.ok() && (held_.has_value() || node_->HasReady())) {
    // A Ready whose persistence failed is held and persisted again, unsent
    // and unapplied, once the disk takes writes (ResumeWrites): for Raft that
    // is only a very slow fsync, so nothing it promises is lost or broken.
    // Tick and Step may go on meanwhile (raw_node.h); their effects come in
    // the next Ready.
    const bool fresh = !held_.has_value();
    raft::Ready rd = fresh ? node_->GetReady() : std::move(*held_);
    held_.reset();
    bool early = held_sent_early_;
    if (fresh) {
      ++stats_.readies;
      if (rd.soft_state.has_value()) {
        if (rd.soft_state->lead != soft_.lead) ++stats_.leader_changes;
        spdlog::info("raft role changed id={} role={} leader={} term={}", options_.id,
                     RoleText(rd.soft_state->role), rd.soft_state->lead, term());
        soft_ = *rd.soft_state;
      }
      // A leader may send its appends before its own fsync (Raft thesis
      // 10.2.1; etcd does the same), so the followers' disks work in parallel
      // with its own: it counts itself toward a commit only in a later Ready,
      // after this one is durable. Everyone else sends only what is durable,
      // and so does a leader whose term or vote is not yet on disk.
      // New replicas must be reachable before this Ready's appends go out.
      for (const auto& entry : rd.entries) {
        Status learned = Learn(entry, /*committed=*/false);
        if (!learned.ok()) spdlog::warn("configuration entry not understood index={} error=\"{}\"", entry.index,
                                        learned.ToString());
      }
      const storage::HardState durable = store_->hard_state();
      early = soft_.role == raft::Role::kLeader &&
              (!rd.hard_state || (rd.hard_state->term == durable.term && rd.hard_state->vote == durable.vote));
      if (early) Send(rd.messages);
    }
    Status persisted = Persist(rd);
    if (!persisted.ok()) {
      // A full disk (control/disk_full_mode.h): keep the Ready and report;
      // the caller stops syncing until the disk takes writes again.
      write_error_ = persisted.WithContext("persisting raft state");
      held_sent_early_ = early;
      held_ = std::move(rd);
      spdlog::error("raft state not persisted; the Ready waits for the disk id={} term={} error=\"{}\"",
                    options_.id, term(), write_error_.ToString());
      break;
    }
    if (!early) Send(rd.messages);
    Status collected = Collect(rd, out);
    if (!collected.ok()) return collected.WithContext("applying raft output");
    for (auto& read : rd.read_states) ready_reads_.push_back(std::move(read.context));
    node_->Advance(rd);
    // One snapshot per call: what came before it and what follows it stay in
    // the order Committed documents.
    if (rd.snapshot.has_value()) break;
    // One slice of a backlog per call (config.max_committed_per_ready): the
    // caller applies it and decides whether this turn takes another.
    if (!rd.committed_entries.empty() && node_->log().HasNextCommitted()) break;
  }
  return out;
}

Status RaftLog::ResumeWrites() {
  write_error_ = Status::Ok();
  return Status::Ok();
}

}  // namespace gpool::replication
