#include "control/replication/peer_list.h"

#include <algorithm>
#include <charconv>

#include "protocol/base/endpoint.h"
#include "protocol/base/text.h"

namespace gpool::replication {
Result<std::map<uint64_t, std::string>> ParsePeerList(std::string_view text, std::string_view flag) {
  const std::string prefix = std::string(flag) + ": ";
  std::map<uint64_t, std::string> peers;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = TrimSpace(text.substr(start, comma - start));
    start = comma + 1;
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument(prefix + "'" + std::string(entry.substr(0, 128)) + "': expected ID=ENDPOINT");
    }
    auto id = ParseReplicaId(entry.substr(0, eq));
    if (!id.ok()) return id.status().WithContext(std::string(flag));
    std::string endpoint(TrimSpace(entry.substr(eq + 1)));
    GPOOL_RETURN_IF_ERROR(ValidateConnectEndpoint(endpoint, prefix + "replica " + std::to_string(*id)));
    if (!peers.emplace(*id, std::move(endpoint)).second) {
      return Status::InvalidArgument(prefix + "replica " + std::to_string(*id) + " is listed twice");
    }
  }
  if (peers.empty()) return Status::InvalidArgument(prefix + "no replicas listed");
  return peers;
}

}  // namespace gpool::replication
