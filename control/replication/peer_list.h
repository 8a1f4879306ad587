// Peer lists on the command line: "1=tcp://10.0.0.1:7402,2=tcp://10.0.0.2:7402".
//
// The coordinator takes two of them: the replicas' peer endpoints (--peers)
// and their client endpoints (--peer-clients, used to point clients at the
// leader). Every id is a replica id (ParseReplicaId) and appears once; every
// endpoint one others can connect to (ValidateConnectEndpoint).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "protocol/base/endpoint.h"
#include "protocol/base/status.h"

namespace gpool::replication {

// InvalidArgument naming the offending entry; `flag` prefixes the message.
Result<std::map<uint64_t, std::string>> ParsePeerList(std::string_view text, std::string_view flag);
}  // namespace gpool::replication
