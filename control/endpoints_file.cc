#include "control/endpoints_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "protocol/base/endpoint.h"

namespace gpool::control {

Status WriteEndpointsFile(const std::string& data_dir, const std::vector<std::pair<std::string, std::string>>& ports) {
  std::string content;
  for (const auto& [name, endpoint] : ports) content += name + " " + endpoint + "\n";
  const std::filesystem::path path = std::filesystem::path(data_dir) / "endpoints";
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out) return Status::IoError("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::IoError("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::Ok();
}

std::string ReachableEndpoint(const std::string& endpoint) {
  // gpool::Endpoint: in a unity batch with the gateway's endpoints,
  // control::Endpoint (gateway/endpoint.h) would be found first.
  auto parsed = gpool::Endpoint::Parse(endpoint, EndpointUse::kBind);
  if (!parsed.ok() || parsed->scheme != "tcp") return endpoint;
  if (parsed->host != "0.0.0.0" && parsed->host != "*" && parsed->host != "::") return endpoint;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return endpoint;
  parsed->host = host;
  return parsed->ZmqAddress();
}

}  // namespace gpool::control
