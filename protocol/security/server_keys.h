// ServerKeys: which CurveZMQ public key each coordinator endpoint has.
//
// Every coordinator replica has its own key pair, so a worker or client
// given several endpoints (A,B,C) needs each one's key: one key file per
// endpoint, in the same order, or one key for them all (a single
// coordinator, or replicas sharing a key pair). A redirect to an endpoint
// not in the list (NotLeader naming the leader) finds the key of the same
// endpoint in the list; an endpoint with no key cannot be reached securely.
//
// Thread-safety: a value type.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::security {

class ServerKeys {
 public:
  ServerKeys() = default;
  // InvalidArgument when neither one key nor one per endpoint, or a key is
  // not Z85.
  static Result<ServerKeys> Match(const std::vector<std::string>& endpoints, const std::vector<std::string>& keys);
  // Reads each file (ReadPublicKeyFile), then Match.
  static Result<ServerKeys> Load(const std::vector<std::string>& endpoints, const std::vector<std::string>& files);

  // The key for `endpoint`, or "" when none is known.
  std::string For(const std::string& endpoint) const;
  bool empty() const { return by_endpoint_.empty() && all_.empty(); }

 private:
  std::map<std::string, std::string> by_endpoint_;
  std::string all_;  // the one key every endpoint has, if only one was given
};

}  // namespace gpool::security
