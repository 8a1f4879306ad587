// RaftLog's membership and what it reports of the replicas: changes
// proposed and committed, a learner promoted once caught up, leadership
// handed over, the leader's addresses, replica keys rotated, and the
// replication report and the lowest state version among the members.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "control/replication/raft_log.h"

namespace gpool::replication {

Result<uint64_t> RaftLog::ProposeMembership(raft::ConfChangeType type, const ReplicaAddress& address) {
  raft::ConfChange change{type, address.id, {}};
  if (type != raft::ConfChangeType::kRemoveVoter) change.context = EncodeReplicaAddress(address);
  return node_->ProposeConfChange(change);
}

Result<uint64_t> RaftLog::ProposeMembership(const log::MembershipChange& change) {
  if (!change.add) {
    GPOOL_RETURN_IF_ERROR(
        guard_.CheckRemoval(node_->info(), change.replica_id, change.force, options_.clock->MonoMs()));
  }
  return ProposeMembership(change.add ? raft::ConfChangeType::kAddLearner : raft::ConfChangeType::kRemoveVoter,
                           ReplicaAddress{change.replica_id, change.peer_address, change.client_address,
                                          change.worker_address, change.public_key});
}

Status RaftLog::CheckNotMember(uint64_t replica_id) const {
  const raft::NodeInfo info = node_->info();
  const std::string who = "replica " + std::to_string(replica_id);
  if (std::binary_search(info.voters.begin(), info.voters.end(), replica_id)) {
    return Status::AlreadyExists(who + " is already a voter; nothing was changed");
  }
  if (std::binary_search(info.learners.begin(), info.learners.end(), replica_id)) {
    return Status::AlreadyExists(who + " is already a learner (it is promoted once caught up); nothing was changed");
  }
  return Status::Ok();
}

void RaftLog::MaybePromoteLearner() {
  const raft::NodeInfo info = node_->info();
  if (info.role != raft::Role::kLeader || info.learners.empty()) return;
  const auto learner = guard_.LearnerToPromote(info, options_.clock->MonoMs());
  if (!learner.has_value()) return;
  // The address came with the learner's entry; the promotion needs none.
  auto index = node_->ProposeConfChange(raft::ConfChange{raft::ConfChangeType::kAddVoter, *learner, {}});
  if (index.ok()) {
    spdlog::info("replica caught up, promoting it from learner to voter replica={} index={}", *learner, *index);
  }
  // Otherwise a change is still pending (or leadership moved): next turn.
}

std::vector<log::CommittedMembership> RaftLog::TakeCommittedMembership() {
  std::vector<log::CommittedMembership> out;
  for (auto& c : TakeCommittedConfChanges()) {
    out.push_back(log::CommittedMembership{c.index, c.term, c.change.type != raft::ConfChangeType::kRemoveVoter,
                                           c.change.node_id, std::move(c.voters), std::move(c.learners)});
  }
  return out;
}

std::string RaftLog::LeaderClientAddress() const {
  const uint64_t lead = leader();
  // A leader still catching up with its term answers NotLeader with no
  // address: the client backs off briefly instead of bouncing back here.
  if (lead == 0 || lead == options_.id) return {};
  return directory_.ClientOf(lead);
}

std::string RaftLog::LeaderWorkerAddress() const {
  const uint64_t lead = leader();
  if (lead == 0 || lead == options_.id) return {};
  return directory_.WorkerOf(lead);
}

uint64_t RaftLog::HandOverLeadership() {
  const std::optional<uint64_t> target = guard_.HandOverTarget(node_->info(), options_.clock->MonoMs());
  if (!target.has_value()) return 0;
  // The core sends TimeoutNow once the target has the whole log (at once if
  // it has), refuses proposals meanwhile and gives up after an election
  // timeout; the messages go out with the next Sync().
  Status asked = node_->TransferLeadership(*target);
  if (!asked.ok()) {
    spdlog::warn("leadership handover not started to={} error=\"{}\"", *target, asked.ToString());
    return 0;
  }
  return *target;
}

log::ReplicationReport RaftLog::Report() const {
  const raft::NodeInfo info = node_->info();
  log::ReplicationReport report;
  report.replicated = true;
  report.self_id = options_.id;
  report.role = RoleText(info.role);
  report.voter = std::find(info.voters.begin(), info.voters.end(), options_.id) != info.voters.end();
  report.leader_id = info.lead;
  report.term = info.term;
  report.commit_index = info.commit;
  // Raft's own entries (a new leader's no-op) are applied too, just not by
  // the state machine: report the log position, so applied can reach commit.
  report.applied_index = info.applied;
  for (const auto& r : Replicas()) {
    const bool leading = info.role == raft::Role::kLeader && r.id != options_.id;
    const ReplicaAddress* address = directory_.Find(r.id);
    log::ReplicaReport replica;
    replica.id = r.id;
    replica.client_address = directory_.ClientOf(r.id);
    replica.role = r.role;
    replica.match = r.match;
    replica.heard_ms_ago = leading ? guard_.HeardMsAgo(r.id, options_.clock->MonoMs()) : int64_t{-1};
    replica.key = address == nullptr ? std::string() : address->key;
    if (r.id == options_.id) {
      replica.state_version = options_.state_version;
    } else if (auto version = peer_state_versions_.find(r.id); version != peer_state_versions_.end()) {
      replica.state_version = version->second;
    }
    report.replicas.push_back(std::move(replica));
  }
  return report;
}

void RaftLog::RotateReplicaKey(uint64_t id, const std::string& key, const std::string& previous_key,
                               int64_t previous_until_ms) {
  const ReplicaAddress* known = directory_.Find(id);
  if (known == nullptr) return;  // removed since: nothing to pin
  if (!known->key.empty() && known->key != key && known->key != previous_key) {
    // Removed and added again under a third key after the rotation: the
    // configuration's key is the newer word.
    spdlog::warn("replica key rotation not applied: the configuration names another key replica={}", id);
    return;
  }
  ReplicaAddress updated = *known;
  updated.key = key;
  directory_.Put(updated);
  if (id == options_.id || updated.peer.empty()) return;
  if (Status pinned = transport_->RotatePeerKey(id, key, previous_key, previous_until_ms); !pinned.ok()) {
    spdlog::warn("replica key rotation not applied to the transport replica={} error=\"{}\"", id,
                 pinned.ToString());
  }
}

Status RaftLog::Connect(const ReplicaAddress& address) {
  if (address.id == options_.id || address.peer.empty()) return Status::Ok();
  return transport_->AddPeer(address.id, address.peer, address.key);
}

Status RaftLog::LearnDirectory(const std::vector<ReplicaAddress>& replicas) {
  directory_.Merge(replicas);
  for (const auto& address : replicas) GPOOL_RETURN_IF_ERROR(Connect(address));
  return Status::Ok();
}

std::vector<ReplicaProgress> RaftLog::Replicas() const {
  raft::NodeInfo info = node_->info();
  std::vector<ReplicaProgress> replicas;
  std::vector<uint64_t> members = info.voters;
  members.insert(members.end(), info.learners.begin(), info.learners.end());
  for (uint64_t voter : members) {
    ReplicaProgress r;
    r.id = voter;
    const bool learner = std::binary_search(info.learners.begin(), info.learners.end(), voter);
    if (learner) {
      r.role = "learner";
      auto it = info.progress.find(voter);
      if (it != info.progress.end()) r.match = it->second.match;
      if (voter == options_.id) r.match = info.last_index;
    } else if (info.role == raft::Role::kLeader) {
      r.role = voter == options_.id ? "leader" : "follower";
      auto it = info.progress.find(voter);
      if (it != info.progress.end()) r.match = it->second.match;
      if (voter == options_.id) r.match = std::max(r.match, info.last_index);
    } else if (voter == options_.id) {
      r.role = RoleText(info.role);
      r.match = info.last_index;
    } else {
      r.role = voter == info.lead ? "leader" : "unknown";
    }
    replicas.push_back(std::move(r));
  }
  return replicas;
}

log::StateVersionFloor RaftLog::LowestStateVersion() const {
  // An older binary sends no version (0); it is version 1, the last before
  // versions were advertised. One not heard from since this replica started
  // may be anything: it counts as the oldest, 1 as well.
  constexpr uint32_t kOldest = 1;
  const raft::NodeInfo info = node_->info();
  std::vector<uint64_t> members = info.voters;
  members.insert(members.end(), info.learners.begin(), info.learners.end());
  log::StateVersionFloor floor{options_.state_version, 0, true};
  for (uint64_t id : members) {
    if (id == options_.id) continue;
    auto it = peer_state_versions_.find(id);
    const bool heard = it != peer_state_versions_.end();
    const uint32_t version = heard && it->second != 0 ? it->second : kOldest;
    if (version < floor.version) {
      floor = {version, id, heard};
    }
  }
  return floor;
}

}  // namespace gpool::replication
