#include "protocol/base/endpoint.h"

#include <algorithm>
#include <charconv>

#include "protocol/base/text.h"

namespace gpool {
namespace {

bool ValidForm(std::string_view e) {
  if (e.find_first_of(" \t\r\n") != std::string_view::npos) return false;
  if (e.rfind("ipc://", 0) == 0 || e.rfind("inproc://", 0) == 0) return e.size() > e.find("//") + 2;
  if (e.rfind("tcp://", 0) != 0) return false;
  std::string_view rest = e.substr(6);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= rest.size()) return false;
  std::string_view port = rest.substr(colon + 1);
  if (port == "*") return true;
  return std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Status ValidateEndpoint(std::string_view endpoint, std::string_view what) {
  if (ValidForm(endpoint)) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + ": '" + std::string(endpoint.substr(0, 128)) +
                                 "' is not a tcp://HOST:PORT, ipc:// or inproc:// endpoint");
}

Status ValidateConnectEndpoint(std::string_view endpoint, std::string_view what) {
  const std::string text(endpoint.substr(0, 128));
  const Status error = Status::InvalidArgument(std::string(what) +
                                               ": expected tcp://HOST:PORT, ipc://PATH or inproc://NAME, got '" +
                                               text + "'");
  for (char c : endpoint) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return error;
  }
  if (!ValidForm(endpoint)) return error;
  if (endpoint.rfind("tcp://", 0) != 0) return Status::Ok();
  std::string_view rest = endpoint.substr(6);
  const size_t colon = rest.rfind(':');
  uint64_t port = 0;
  auto [end, ec] = std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), port);
  if (ec != std::errc() || end != rest.data() + rest.size() || port == 0 || port > 65535) return error;
  if (rest.substr(0, colon) == "*") {
    return Status::InvalidArgument(std::string(what) + ": '" + text +
                                   "' is a bind address; give one that others can connect to");
  }
  return Status::Ok();
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
  if (endpoint.size() > 2 && endpoint.compare(endpoint.size() - 2, 2, ":0") == 0) {
    endpoint.replace(endpoint.size() - 1, 1, "*");
  }
  return endpoint;
}

Result<std::vector<std::string>> ParseEndpointList(std::string_view list, std::string_view what, bool default_tcp) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string entry(TrimSpace(list.substr(start, comma - start)));
    start = comma + 1;
    if (entry.empty()) continue;
    if (default_tcp && entry.find("://") == std::string::npos) entry = "tcp://" + entry;
    GPOOL_RETURN_IF_ERROR(ValidateEndpoint(entry, what));
    out.push_back(std::move(entry));
  }
  if (out.empty()) return Status::InvalidArgument(std::string(what) + ": no endpoint given");
  return out;
}

}  // namespace gpool
