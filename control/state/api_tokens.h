// ApiTokenTable: the replicated API tokens of the HTTP port (issue 48;
// protocol/model/api_token.h), a part of ClusterState applied in log order
// like the rest. It holds each token's SHA-256, never the token, so a
// snapshot or the log opens nothing. Expired tokens are dropped when the
// next token is made (by that command's time, so every replica drops the
// same ones); until then they are refused at use.
//
// Thread-safety: none; ClusterState's owner (the loop thread) holds it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/model/api_token.h"

namespace gpool::state {

class ApiTokenTable {
 public:
  // A new token: its id and hash unused, its owner under kMaxTokensPerUser.
  // Whether the owner exists is the caller's (ClusterState) to say.
  Status Create(int64_t now_ms, ApiTokenInfo info);
  // The token as it was; NotFound when there is none by that id.
  Result<ApiTokenInfo> Revoke(const std::string& id);
  // Revokes every token of `owner` (the user was removed); how many.
  size_t RevokeOwner(const std::string& owner);

  const ApiTokenInfo* Find(const std::string& id) const;
  const ApiTokenInfo* FindByHash(const std::string& hash) const;
  const std::map<std::string, ApiTokenInfo>& tokens() const { return tokens_; }

  // What the snapshot holds (cluster_state.cc's SnapshotImage).
  std::vector<ApiTokenInfo> Image() const;
  void Restore(std::vector<ApiTokenInfo> image);

 private:
  std::map<std::string, ApiTokenInfo> tokens_;  // by id
  std::map<std::string, std::string> by_hash_;  // hash -> id
};

// Whether a token of `scope` may do what needs `needed` (each scope
// includes the ones before it: metrics < read < write).
inline bool ScopeAllows(TokenScope scope, TokenScope needed) {
  return static_cast<uint8_t>(scope) >= static_cast<uint8_t>(needed);
}

}  // namespace gpool::state
