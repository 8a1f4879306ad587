#include "protocol/security/server_keys.h"

#include "protocol/security/keys.h"

namespace gpool::security {

Result<ServerKeys> ServerKeys::Match(const std::vector<std::string>& endpoints, const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    if (!IsZ85Key(key)) return Status::InvalidArgument("a coordinator public key is not a 40-character Z85 key");
  }
  ServerKeys result;
  if (keys.size() == 1) {
    result.all_ = keys[0];
    return result;
  }
  if (keys.size() != endpoints.size()) {
    return Status::InvalidArgument("coordinator keys: give one public key file, or one per coordinator endpoint "
                                   "in the same order (" + std::to_string(endpoints.size()) + " endpoints, " +
                                   std::to_string(keys.size()) + " keys)");
  }
  for (size_t i = 0; i < endpoints.size(); ++i) result.by_endpoint_[endpoints[i]] = keys[i];
  return result;
}

Result<ServerKeys> ServerKeys::Load(const std::vector<std::string>& endpoints, const std::vector<std::string>& files) {
  std::vector<std::string> keys;
  for (const auto& file : files) {
    GPOOL_ASSIGN_OR_RETURN(std::string key, ReadPublicKeyFile(file));
    keys.push_back(std::move(key));
  }
  return Match(endpoints, keys);
}

std::string ServerKeys::For(const std::string& endpoint) const {
  if (!all_.empty()) return all_;
  auto it = by_endpoint_.find(endpoint);
  return it == by_endpoint_.end() ? std::string() : it->second;
}

}  // namespace gpool::security
