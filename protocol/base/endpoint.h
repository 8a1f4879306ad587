// ZeroMQ endpoints as gpool's command lines, config files and messages spell
// them: one set of rules for the client, the worker, the coordinator and
// replication.
//
// An endpoint is tcp://HOST:PORT (PORT digits, or '*' where one binds to an
// ephemeral port), ipc://PATH or inproc://NAME.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"

namespace gpool {

// InvalidArgument naming `what` unless `endpoint` is one of the forms above.
Status ValidateEndpoint(std::string_view endpoint, std::string_view what);

// Stricter, for an endpoint others connect to (a peer's, a replica's
// advertised addresses, a client's target): also no control characters, a
// port of 1-65535, and not the bind-only wildcard host '*'.
Status ValidateConnectEndpoint(std::string_view endpoint, std::string_view what);

// A replica id: a positive decimal integer (spaces around it ignored).
Result<uint64_t> ParseReplicaId(std::string_view text);

// The endpoint to bind: ZeroMQ spells "any free port" as '*'; the familiar
// ':0' is accepted too.
std::string BindableEndpoint(std::string endpoint);

// A comma-separated list (spaces around entries ignored, empty entries
// skipped), each entry validated. With `default_tcp`, an entry without a
// scheme is taken as tcp:// (HOST:PORT). InvalidArgument naming `what` when an
// entry is bad or the list is empty.
Result<std::vector<std::string>> ParseEndpointList(std::string_view list, std::string_view what, bool default_tcp);

}  // namespace gpool
