#include "protocol/security/server_keys.h"

#include "protocol/security/keys.h"

namespace gpool::security {

Result<std::vector<std::string>> SplitServerKeyEntry(std::string_view entry) {
  constexpr size_t kKeyChars = 40;
  std::vector<std::string> keys;
  // Fixed-width parts: '+' is itself a Z85 character, so the separators are
  // found by position, never by searching.
  for (size_t at = 0;; at += kKeyChars + 1) {
    const std::string_view key = entry.substr(at, kKeyChars);
    if (!IsZ85Key(key)) return Status::InvalidArgument("a coordinator public key is not a 40-character Z85 key");
    keys.emplace_back(key);
    if (at + kKeyChars == entry.size()) return keys;
    if (at + kKeyChars > entry.size() || entry[at + kKeyChars] != '+') {
      return Status::InvalidArgument("a coordinator key entry is one 40-character Z85 key, or several joined by '+'");
    }
  }
}

Result<std::string> ReadServerKeyEntry(std::string_view files) {
  std::string keys;
  for (size_t start = 0; start <= files.size();) {
    const size_t plus = files.find('+', start);
    const std::string file(files.substr(start, plus == std::string_view::npos ? std::string_view::npos : plus - start));
    start = plus == std::string_view::npos ? files.size() + 1 : plus + 1;
    if (file.empty()) return Status::InvalidArgument("an empty key file name in '" + std::string(files) + "'");
    GPOOL_ASSIGN_OR_RETURN(std::string key, ReadPublicKeyFile(file));
    keys += (keys.empty() ? "" : "+") + key;
  }
  return keys;
}

Result<ServerKeys> ServerKeys::Match(const std::vector<std::string>& endpoints, const std::vector<std::string>& keys) {
  std::vector<std::vector<std::string>> entries;
  for (const auto& key : keys) {
    GPOOL_ASSIGN_OR_RETURN(std::vector<std::string> accepted, SplitServerKeyEntry(key));
    entries.push_back(std::move(accepted));
  }
  ServerKeys result;
  if (entries.size() == 1) {
    result.all_ = std::move(entries[0]);
    return result;
  }
  if (entries.size() != endpoints.size()) {
    return Status::InvalidArgument("coordinator keys: give one public key file, or one per coordinator endpoint "
                                   "in the same order (" + std::to_string(endpoints.size()) + " endpoints, " +
                                   std::to_string(entries.size()) + " keys)");
  }
  for (size_t i = 0; i < endpoints.size(); ++i) result.by_endpoint_[endpoints[i]] = std::move(entries[i]);
  return result;
}

Result<ServerKeys> ServerKeys::Load(const std::vector<std::string>& endpoints, const std::vector<std::string>& files) {
  std::vector<std::string> keys;
  for (const auto& file : files) {
    GPOOL_ASSIGN_OR_RETURN(std::string key, ReadServerKeyEntry(file));
    keys.push_back(std::move(key));
  }
  return Match(endpoints, keys);
}

const std::vector<std::string>* ServerKeys::KeysOf(const std::string& endpoint) const {
  if (!all_.empty()) return &all_;
  auto it = by_endpoint_.find(endpoint);
  return it == by_endpoint_.end() || it->second.empty() ? nullptr : &it->second;
}

std::string ServerKeys::For(const std::string& endpoint, size_t attempt) const {
  const std::vector<std::string>* keys = KeysOf(endpoint);
  return keys == nullptr ? std::string() : (*keys)[attempt % keys->size()];
}

size_t ServerKeys::Count(const std::string& endpoint) const {
  const std::vector<std::string>* keys = KeysOf(endpoint);
  return keys == nullptr ? 0 : keys->size();
}

}  // namespace gpool::security
