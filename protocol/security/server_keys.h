// ServerKeys: which CurveZMQ public key each coordinator endpoint has.
//
// Every coordinator replica has its own key pair, so a worker or client
// given several endpoints (A,B,C) needs each one's key: one key file per
// endpoint, in the same order, or one key for them all (a single
// coordinator, or replicas sharing a key pair). A redirect to an endpoint
// not in the list (NotLeader naming the leader) finds the key of the same
// endpoint in the list; an endpoint with no key cannot be reached securely.
//
// A replica whose key is being rotated (issue 48) may serve either its new
// or its old key until it is restarted: one endpoint's entry may then name
// several accepted keys joined by '+' (files: `new.pub+old.pub`; keys: the
// 40-character Z85 keys joined by '+', which stays unambiguous although '+'
// is a Z85 character, since every key is exactly 40 characters). The caller
// tries them in turn, the first first, when a handshake does not complete
// (For with an attempt number); the per-endpoint comma list is unchanged.
//
// Thread-safety: a value type.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::security {

// The keys of one entry: "KEY" or "KEY+KEY+...". InvalidArgument when a part
// is not a Z85 key.
Result<std::vector<std::string>> SplitServerKeyEntry(std::string_view entry);
// Reads one --coordinator-key entry, "FILE" or "FILE+FILE+..." (each a
// public key file, ReadPublicKeyFile), into "KEY" or "KEY+KEY+...".
Result<std::string> ReadServerKeyEntry(std::string_view files);

class ServerKeys {
 public:
  ServerKeys() = default;
  // InvalidArgument when neither one entry nor one per endpoint, or a key is
  // not Z85. Each entry is "KEY" or "KEY+KEY+..." (above).
  static Result<ServerKeys> Match(const std::vector<std::string>& endpoints, const std::vector<std::string>& keys);
  // Reads each entry (ReadServerKeyEntry), then Match.
  static Result<ServerKeys> Load(const std::vector<std::string>& endpoints, const std::vector<std::string>& files);

  // The key for `endpoint`, or "" when none is known: its entry's first key,
  // or with `attempt`, its attempt-th accepted key (cycling through them).
  std::string For(const std::string& endpoint, size_t attempt = 0) const;
  // How many keys `endpoint`'s entry accepts (0: none known).
  size_t Count(const std::string& endpoint) const;
  bool empty() const { return by_endpoint_.empty() && all_.empty(); }

 private:
  const std::vector<std::string>* KeysOf(const std::string& endpoint) const;
  std::map<std::string, std::vector<std::string>> by_endpoint_;
  std::vector<std::string> all_;  // the keys every endpoint has, if only one entry was given
};

}  // namespace gpool::security
