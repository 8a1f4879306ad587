#include "control/endpoints_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

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
  for (const char* wildcard : {"tcp://0.0.0.0:", "tcp://*:", "tcp://[::]:"}) {
    const std::string prefix = wildcard;
    if (endpoint.rfind(prefix, 0) != 0) continue;
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return endpoint;
    return "tcp://" + std::string(host) + ":" + endpoint.substr(prefix.size());
  }
  return endpoint;
}

}  // namespace gpool::control
