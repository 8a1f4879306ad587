// ClusterState: admission enrolment (issue 48). A worker key the cluster has
// not admitted registers only as a pending enrolment, never as a node: it
// is not in nodes_, so the scheduler cannot place work on it and the
// dispatcher has nothing to bind there. An admin's approval binds the key to
// the name (enrolled_nodes_, as an admin's enrolment in advance does); a join
// token admits the registration that presents it, once.
#include <algorithm>
#include <vector>

#include "control/state/cluster_state.h"

namespace gpool::state {
namespace {

bool Matches(const PendingEnrolment& pending, const std::string& node, const std::string& fingerprint) {
  return pending.node == node && (fingerprint.empty() || pending.fingerprint == fingerprint);
}

}  // namespace

bool ClusterState::KeyAdmitted(const std::string& node, const std::string& key, int64_t now) const {
  if (key.empty()) return false;
  if (auto it = nodes_.find(node); it != nodes_.end() && it->second.AdmitsKey(key, now)) return true;
  auto enrolled = enrolled_nodes_.find(node);
  return enrolled != enrolled_nodes_.end() && enrolled->second == key;
}

Status ClusterState::CheckJoinToken(const std::string& hash, int64_t now) const {
  auto it = hash.size() == 64 ? join_tokens_.find(hash.substr(0, 12)) : join_tokens_.end();
  if (it == join_tokens_.end() || it->second.hash != hash) {
    return Status::Unauthenticated("join token is not known to this cluster");
  }
  const JoinTokenInfo& token = it->second;
  if (token.revoked) return Status::Unauthenticated("join token " + token.id + " was revoked");
  if (!token.used_by.empty()) {
    return Status::Unauthenticated("join token " + token.id + " was already used (by node " + token.used_by + ")");
  }
  if (now >= token.expires_ms) return Status::Unauthenticated("join token " + token.id + " has expired");
  return Status::Ok();
}

Status ClusterState::AdmitRegistration(int64_t now, const RegisterNodeCmd& cmd,
                                       std::map<std::string, std::string>* labels) {
  if (!cmd.admission || cmd.worker_key.empty() || KeyAdmitted(cmd.node.name, cmd.worker_key, now)) return Status::Ok();
  if (cmd.join_token_hash.empty()) {
    return Status::PermissionDenied("node '" + cmd.node.name + "' awaits admission: an admin approves it (`gpool node " +
                                    "approve " + cmd.node.name + "`) or its worker presents a join token");
  }
  if (Status valid = CheckJoinToken(cmd.join_token_hash, now); !valid.ok()) return valid;
  JoinTokenInfo& token = join_tokens_[cmd.join_token_hash.substr(0, 12)];
  token.used_by = cmd.node.name;
  token.used_ms = now;
  *labels = token.labels;
  // Admitted: its pending entry (if it waited before it had a token) goes.
  pending_enrolments_.erase(cmd.worker_key);
  return Status::Ok();
}

ApplyResult ClusterState::ApplyEnrolment(int64_t now, const EnrolmentCmd& cmd) {
  ApplyResult result;
  switch (cmd.op) {
    case EnrolmentCmdOp::kPending: {
      const PendingEnrolment& seen = cmd.pending;
      if (seen.key.empty() || seen.node.empty()) {
        result.status = Status::InvalidArgument("a pending enrolment names its node and key");
        return result;
      }
      if (KeyAdmitted(seen.node, seen.key, now)) {
        result.status = Status::FailedPrecondition("node '" + seen.node + "' is admitted already");
        return result;
      }
      auto it = pending_enrolments_.find(seen.key);
      if (it == pending_enrolments_.end()) {
        // Bounded: a flood of fresh keys fills a fixed table, not the state.
        if (pending_enrolments_.size() >= kMaxPendingEnrolments) {
          result.status = Status::ResourceExhausted(
              "at most " + std::to_string(kMaxPendingEnrolments) +
              " enrolments may be pending; approve or reject some (`gpool node pending`)");
          return result;
        }
        PendingEnrolment& fresh = pending_enrolments_[seen.key];
        fresh = seen;
        fresh.first_seen_ms = now;
        fresh.registrations = 0;
        it = pending_enrolments_.find(seen.key);
      }
      PendingEnrolment& pending = it->second;
      // What it claims now (name, devices) replaces what it claimed before.
      const int64_t first_seen = pending.first_seen_ms;
      const uint64_t registrations = pending.registrations + 1;
      pending = seen;
      pending.first_seen_ms = first_seen;
      pending.last_seen_ms = now;
      pending.registrations = registrations;
      return result;
    }
    case EnrolmentCmdOp::kApprove:
    case EnrolmentCmdOp::kReject: {
      std::vector<std::string> keys;
      for (const auto& [key, pending] : pending_enrolments_) {
        if (Matches(pending, cmd.node, cmd.fingerprint)) keys.push_back(key);
      }
      if (keys.empty()) {
        result.status = Status::NotFound("no pending enrolment for node '" + cmd.node + "'" +
                                         (cmd.fingerprint.empty() ? "" : " with key " + cmd.fingerprint));
        return result;
      }
      if (cmd.op == EnrolmentCmdOp::kReject) {
        for (const auto& key : keys) pending_enrolments_.erase(key);
        return result;
      }
      if (keys.size() > 1) {
        result.status = Status::FailedPrecondition(std::to_string(keys.size()) + " keys claim node '" + cmd.node +
                                                   "'; approve one with --fingerprint (`gpool node pending`)");
        return result;
      }
      if (auto node = nodes_.find(cmd.node);
          node != nodes_.end() && !node->second.worker_key.empty() && node->second.worker_key != keys[0]) {
        result.status = Status::FailedPrecondition("node '" + cmd.node +
                                                   "' is bound to another worker key; rotate it with `gpool node key`");
        return result;
      }
      enrolled_nodes_[cmd.node] = keys[0];
      // The name is taken: other keys that claimed it would be refused now.
      std::erase_if(pending_enrolments_, [&](const auto& entry) { return entry.second.node == cmd.node; });
      return result;
    }
    case EnrolmentCmdOp::kCreateToken: {
      const JoinTokenInfo& token = cmd.token;
      if (token.id.empty() || token.hash.size() != 64 || token.hash.substr(0, 12) != token.id) {
        result.status = Status::InvalidArgument("a join token is kept by its SHA-256 and the id that prefixes it");
        return result;
      }
      if (join_tokens_.count(token.id) > 0) {
        result.status = Status::AlreadyExists("join token " + token.id + " exists");
        return result;
      }
      if (join_tokens_.size() >= kMaxJoinTokens) {
        // Spent tokens (used, revoked, expired) make room, oldest first.
        std::vector<std::pair<int64_t, std::string>> spent;
        for (const auto& [id, kept] : join_tokens_) {
          if (kept.revoked || !kept.used_by.empty() || now >= kept.expires_ms) spent.emplace_back(kept.created_ms, id);
        }
        std::sort(spent.begin(), spent.end());
        for (size_t i = 0; i < spent.size() && join_tokens_.size() >= kMaxJoinTokens; ++i) {
          join_tokens_.erase(spent[i].second);
        }
      }
      if (join_tokens_.size() >= kMaxJoinTokens) {
        result.status = Status::ResourceExhausted("at most " + std::to_string(kMaxJoinTokens) +
                                                  " join tokens may be live; revoke some (`gpool admin join-token list`)");
        return result;
      }
      JoinTokenInfo& kept = join_tokens_[token.id];
      kept = token;
      kept.created_ms = now;
      return result;
    }
    case EnrolmentCmdOp::kRevokeToken: {
      auto it = join_tokens_.find(cmd.token.id);
      if (it == join_tokens_.end()) {
        result.status = Status::NotFound("no join token " + cmd.token.id + " (`gpool admin join-token list`)");
        return result;
      }
      if (!it->second.used_by.empty()) {
        result.status = Status::FailedPrecondition("join token " + cmd.token.id + " was used already (by node " +
                                                   it->second.used_by + ")");
        return result;
      }
      it->second.revoked = true;
      return result;
    }
  }
  return result;
}

}  // namespace gpool::state
