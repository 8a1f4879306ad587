#include "control/principal.h"

#include <array>

namespace gpool::control {
namespace {

constexpr std::array<std::pair<Principal::Kind, std::string_view>, 8> kKinds = {{
    {Principal::Kind::kInsecure, "insecure"},
    {Principal::Kind::kUser, "user"},
    {Principal::Kind::kNode, "node"},
    {Principal::Kind::kNewNode, "new-node"},
    {Principal::Kind::kReplica, "replica"},
    {Principal::Kind::kBootstrap, "bootstrap"},
    {Principal::Kind::kTask, "task"},
    {Principal::Kind::kToken, "token"},
}};

}  // namespace

std::string_view KindName(Principal::Kind kind) {
  for (const auto& [k, name] : kKinds) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::optional<Principal> Principal::Parse(std::string_view user_id) {
  if (user_id.empty()) return Principal{};
  const size_t first = user_id.find('|');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t second = user_id.find('|', first + 1);
  if (second == std::string_view::npos || user_id.find('|', second + 1) != std::string_view::npos) return std::nullopt;
  const std::string_view kind = user_id.substr(0, first);
  for (const auto& [k, name] : kKinds) {
    // Neither comes from a ZAP User-Id: kInsecure is no handshake, kToken
    // the HTTP port's own.
    if (name != kind || k == Kind::kInsecure || k == Kind::kToken) continue;
    Principal principal;
    principal.kind = k;
    principal.name = std::string(user_id.substr(first + 1, second - first - 1));
    principal.key = std::string(user_id.substr(second + 1));
    if (principal.key.empty()) return std::nullopt;
    return principal;
  }
  return std::nullopt;
}

std::string Principal::UserId() const {
  if (kind == Kind::kInsecure) return {};
  return std::string(KindName(kind)) + '|' + name + '|' + key;
}

}  // namespace gpool::control
