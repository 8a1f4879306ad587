// Endpoints as gpool's command lines, config files and messages spell them:
// one parser for the client, the worker, the coordinator, replication, the
// HTTP ports and the network probe, so that "[::1]:7400" or "h:0" means the
// same thing (or is refused with the same reason) everywhere.
//
// An endpoint is tcp://HOST:PORT, ipc://PATH or inproc://NAME; a bare
// HOST:PORT (HTTP addresses, probe rings, client lists) is a TCP one.
// HOST is a name or IPv4 address of [A-Za-z0-9._-], or an IPv6 address in
// brackets ("[fe80::1%eth0]"); an unbracketed IPv6 address is refused rather
// than guessed at, because "::1:5" could end in a port or in an address group.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"

namespace gpool {

// Longer input is refused before it is looked at (it would only end up in
// logs and error messages); a DNS name is at most 253 bytes anyway.
inline constexpr size_t kMaxEndpointBytes = 1024;

// What the endpoint is for, which decides the ports and hosts it may name.
enum class EndpointUse : uint8_t {
  kConnect,  // port 1-65535; not the wildcard host '*'
  kBind,     // port 0 or '*' too (any free port); host '*' is every interface
};

struct Endpoint {
  std::string scheme = "tcp";  // "tcp", "ipc" or "inproc"
  std::string host;            // tcp: without brackets; ipc: the path; inproc: the name
  uint16_t port = 0;           // tcp only; 0 is "any free port" (kBind only)

  // scheme://HOST:PORT with an IPv6 host in brackets and port 0 as '*'
  // (ZeroMQ's spelling of "any free port"); ipc://PATH, inproc://NAME.
  std::string ZmqAddress() const;
  // HOST:PORT with an IPv6 host in brackets (port 0 as "0"); tcp only.
  std::string HostPort() const;

  // scheme://... as above. InvalidArgument whose message is the reason only
  // ("expected a port from 1 to 65535"): callers add which flag or field.
  static Result<Endpoint> Parse(std::string_view text, EndpointUse use);
  // A bare HOST:PORT (no scheme), as a TCP endpoint; errors as Parse.
  static Result<Endpoint> ParseHostPort(std::string_view text, EndpointUse use);

  bool operator==(const Endpoint&) const = default;
};

// HOST:PORT with `host` bracketed when it is an IPv6 address.
std::string FormatHostPort(std::string_view host, uint16_t port);

// InvalidArgument naming `what` unless `endpoint` parses for binding (the
// most permissive use).
Status ValidateEndpoint(std::string_view endpoint, std::string_view what);

// Stricter, for an endpoint others connect to (a peer's, a replica's
// advertised addresses, a client's target): a port of 1-65535, and not the
// bind-only wildcard host '*'. The message is the same for every reason
// (the CLI's tests pin it) except the bind address.
Status ValidateConnectEndpoint(std::string_view endpoint, std::string_view what);

// A replica id: a positive decimal integer (spaces around it ignored).
Result<uint64_t> ParseReplicaId(std::string_view text);

// The endpoint to bind: ZeroMQ spells "any free port" as '*'; the familiar
// ':0' is accepted too.
std::string BindableEndpoint(std::string endpoint);

// One endpoint to connect to, as typed (not re-formatted: CurveZMQ server
// keys are looked up by it), with tcp:// put in front when it has no scheme
// and `default_tcp`. InvalidArgument with the reason only, as Parse.
Result<std::string> ParseConnectEndpoint(std::string_view text, bool default_tcp);

// A comma-separated list of endpoints to connect to (spaces around entries
// ignored, empty entries skipped). With `default_tcp`, an entry without a
// scheme is taken as tcp:// (HOST:PORT). InvalidArgument naming `what`, the
// entry and the reason when an entry is bad, or when the list is empty.
Result<std::vector<std::string>> ParseEndpointList(std::string_view list, std::string_view what, bool default_tcp);

}  // namespace gpool
