#include "protocol/base/endpoint.h"

#include <charconv>

#include "protocol/base/text.h"

namespace gpool {
namespace {

constexpr size_t kMaxHostBytes = 253;  // a DNS name's limit

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_';
}

// Inside brackets: hex groups, an embedded IPv4 tail and a zone ("%eth0").
bool IsV6Char(char c) { return IsHostChar(c) || c == ':' || c == '%'; }

bool HasControlOrSpace(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return true;
  }
  return false;
}

// "1".."65535" (and "0" / "*" to bind). At most five digits, so no overflow.
Result<uint16_t> ParsePort(std::string_view text, EndpointUse use) {
  const bool bind = use == EndpointUse::kBind;
  if (bind && text == "*") return uint16_t{0};
  const Status bad = Status::InvalidArgument(bind ? "expected a port from 0 to 65535"
                                                  : "expected a port from 1 to 65535");
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text.size() > 5 || ec != std::errc() || end != text.data() + text.size()) return bad;
  if (value > 65535 || (value == 0 && !bind)) return bad;
  return static_cast<uint16_t>(value);
}

Result<Endpoint> ParseTcp(std::string_view text, EndpointUse use) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return Status::InvalidArgument("expected HOST:PORT");
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[' || host.back() == ']') {
    if (host.size() < 3 || host.front() != '[' || host.back() != ']') {
      return Status::InvalidArgument("expected [IPV6]:PORT");
    }
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string_view::npos) return Status::InvalidArgument("expected [IPV6]:PORT");
    for (char c : host) {
      if (!IsV6Char(c)) return Status::InvalidArgument("the host has a character hosts do not have");
    }
  } else if (host.find(':') != std::string_view::npos) {
    return Status::InvalidArgument("an IPv6 host goes in brackets: [::1]:PORT");
  } else if (host == "*") {
    if (use != EndpointUse::kBind) return Status::InvalidArgument("'*' is a bind address, not one to connect to");
  } else {
    if (host.size() > kMaxHostBytes) return Status::InvalidArgument("the host is longer than 253 bytes");
    for (char c : host) {
      if (!IsHostChar(c)) return Status::InvalidArgument("the host has a character hosts do not have");
    }
  }
  GPOOL_ASSIGN_OR_RETURN(uint16_t port, ParsePort(text.substr(colon + 1), use));
  return Endpoint{"tcp", std::string(host), port};
}

// The checks every form shares, before any splitting.
Status CheckText(std::string_view text) {
  if (text.size() > kMaxEndpointBytes) {
    return Status::InvalidArgument("longer than " + std::to_string(kMaxEndpointBytes) + " bytes");
  }
  if (HasControlOrSpace(text)) return Status::InvalidArgument("has a space or a control character");
  return Status::Ok();
}

// For messages: the input, clipped, as the user typed it.
std::string Quote(std::string_view text) { return "'" + std::string(text.substr(0, 128)) + "'"; }

}  // namespace

std::string FormatHostPort(std::string_view host, uint16_t port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

std::string Endpoint::HostPort() const { return FormatHostPort(host, port); }

std::string Endpoint::ZmqAddress() const {
  if (scheme != "tcp") return scheme + "://" + host;
  std::string host_port = HostPort();
  if (port == 0) host_port.back() = '*';  // "...:0" -> "...:*"
  return "tcp://" + host_port;
}

Result<Endpoint> Endpoint::ParseHostPort(std::string_view text, EndpointUse use) {
  GPOOL_RETURN_IF_ERROR(CheckText(text));
  return ParseTcp(text, use);
}

Result<Endpoint> Endpoint::Parse(std::string_view text, EndpointUse use) {
  GPOOL_RETURN_IF_ERROR(CheckText(text));
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos) return Status::InvalidArgument("expected tcp://HOST:PORT, ipc://PATH or inproc://NAME");
  const std::string_view scheme = text.substr(0, sep);
  const std::string_view rest = text.substr(sep + 3);
  if (scheme == "tcp") return ParseTcp(rest, use);
  if (scheme == "ipc" || scheme == "inproc") {
    if (rest.empty()) return Status::InvalidArgument(std::string("expected a ") + (scheme == "ipc" ? "path" : "name") +
                                                     " after " + std::string(scheme) + "://");
    return Endpoint{std::string(scheme), std::string(rest), 0};
  }
  return Status::InvalidArgument("unknown scheme " + Quote(scheme.substr(0, 16)) +
                                 ": expected tcp://, ipc:// or inproc://");
}

Status ValidateEndpoint(std::string_view endpoint, std::string_view what) {
  auto parsed = Endpoint::Parse(endpoint, EndpointUse::kBind);
  if (parsed.ok()) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + ": " + Quote(endpoint) + ": " + parsed.status().message());
}

Status ValidateConnectEndpoint(std::string_view endpoint, std::string_view what) {
  if (Endpoint::Parse(endpoint, EndpointUse::kConnect).ok()) return Status::Ok();
  // A bind address gets its own hint; it is the likely mix-up.
  auto as_bind = Endpoint::Parse(endpoint, EndpointUse::kBind);
  if (as_bind.ok() && as_bind->host == "*" && as_bind->port != 0) {
    return Status::InvalidArgument(std::string(what) + ": " + Quote(endpoint) +
                                   " is a bind address; give one that others can connect to");
  }
  return Status::InvalidArgument(std::string(what) + ": expected tcp://HOST:PORT, ipc://PATH or inproc://NAME, got " +
                                 Quote(endpoint));
}

Result<uint64_t> ParseReplicaId(std::string_view text) {
  text = TrimSpace(text);
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || id == 0) {
    return Status::InvalidArgument("expected a replica ID (a positive integer), got '" +
                                   std::string(text.substr(0, 64)) + "'");
  }
  return id;
}

std::string BindableEndpoint(std::string endpoint) {
  // What does not parse goes to ZeroMQ as it is, which then names the problem.
  auto parsed = Endpoint::Parse(endpoint, EndpointUse::kBind);
  return parsed.ok() ? parsed->ZmqAddress() : endpoint;
}

Result<std::string> ParseConnectEndpoint(std::string_view text, bool default_tcp) {
  std::string endpoint(text);
  if (default_tcp && endpoint.find("://") == std::string::npos) endpoint = "tcp://" + endpoint;
  GPOOL_RETURN_IF_ERROR(Endpoint::Parse(endpoint, EndpointUse::kConnect).status());
  return endpoint;
}

Result<std::vector<std::string>> ParseEndpointList(std::string_view list, std::string_view what, bool default_tcp) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view entry = TrimSpace(list.substr(start, comma - start));
    start = comma + 1;
    if (entry.empty()) continue;
    auto parsed = ParseConnectEndpoint(entry, default_tcp);
    if (!parsed.ok()) {
      return Status::InvalidArgument(std::string(what) + ": " + Quote(entry) + ": " + parsed.status().message());
    }
    out.push_back(std::move(parsed).value());
  }
  if (out.empty()) return Status::InvalidArgument(std::string(what) + ": no endpoint given");
  return out;
}

}  // namespace gpool
