#include "control/state/api_tokens.h"

#include <algorithm>

namespace gpool::state {

Status ApiTokenTable::Create(int64_t now_ms, ApiTokenInfo info) {
  // The command's time, not a clock: every replica drops the same ones.
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    if (it->second.expires_ms != 0 && it->second.expires_ms <= now_ms) {
      by_hash_.erase(it->second.hash);
      it = tokens_.erase(it);
    } else {
      ++it;
    }
  }
  if (info.id.empty() || info.hash.empty()) return Status::InvalidArgument("token: an id and a hash are required");
  if (tokens_.count(info.id) != 0) return Status::AlreadyExists("token " + info.id + " exists");
  if (by_hash_.count(info.hash) != 0) return Status::AlreadyExists("a token with that hash exists");
  const size_t held = static_cast<size_t>(std::count_if(
      tokens_.begin(), tokens_.end(), [&](const auto& entry) { return entry.second.owner == info.owner; }));
  if (held >= kMaxTokensPerUser) {
    return Status::ResourceExhausted("user " + info.owner + " holds " + std::to_string(held) +
                                     " tokens, the most allowed; revoke some (`gpool token list`, `gpool token "
                                     "revoke ID`)");
  }
  info.last_used_ms = 0;  // leader-local, never replicated
  by_hash_[info.hash] = info.id;
  tokens_[info.id] = std::move(info);
  return Status::Ok();
}

Result<ApiTokenInfo> ApiTokenTable::Revoke(const std::string& id) {
  auto it = tokens_.find(id);
  if (it == tokens_.end()) return Status::NotFound("no token " + id.substr(0, 64) + " (`gpool token list`)");
  ApiTokenInfo was = std::move(it->second);
  by_hash_.erase(was.hash);
  tokens_.erase(it);
  return was;
}

size_t ApiTokenTable::RevokeOwner(const std::string& owner) {
  size_t revoked = 0;
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    if (it->second.owner == owner && !it->second.configured_admin) {
      by_hash_.erase(it->second.hash);
      it = tokens_.erase(it);
      ++revoked;
    } else {
      ++it;
    }
  }
  return revoked;
}

const ApiTokenInfo* ApiTokenTable::Find(const std::string& id) const {
  auto it = tokens_.find(id);
  return it == tokens_.end() ? nullptr : &it->second;
}

const ApiTokenInfo* ApiTokenTable::FindByHash(const std::string& hash) const {
  auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? nullptr : Find(it->second);
}

std::vector<ApiTokenInfo> ApiTokenTable::Image() const {
  std::vector<ApiTokenInfo> image;
  image.reserve(tokens_.size());
  for (const auto& [id, token] : tokens_) image.push_back(token);
  return image;
}

void ApiTokenTable::Restore(std::vector<ApiTokenInfo> image) {
  tokens_.clear();
  by_hash_.clear();
  for (auto& token : image) {
    by_hash_[token.hash] = token.id;
    tokens_[token.id] = std::move(token);
  }
}

}  // namespace gpool::state
