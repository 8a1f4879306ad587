#include "control/http/gateway_bridge.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_usage.h"
#include "protocol/messages_users.h"

#include <chrono>

#include <nlohmann/json.hpp>

namespace gpool::control {

namespace {

// '\0' first: no ZeroMQ routing id the coordinator sees can start so and be
// this long.
constexpr std::string_view kPeerPrefix{"\0http-", 6};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool HttpReadable(std::string_view type) {
  for (std::string_view allowed : {"ClusterStatus", "ListNodes", "ListQueues", "ListJobs", "GetJob", "ExplainJob",
                                   "ListEvents", "WhoAmI", "ListUsers", "ListAudit", "GetUsage"}) {
    if (type == allowed) return true;
  }
  return false;
}

bool GatewayBridge::IsBridgePeer(const std::string& peer) {
  return peer.size() > kPeerPrefix.size() && std::string_view(peer).substr(0, kPeerPrefix.size()) == kPeerPrefix;
}

void GatewayBridge::Request(std::string_view type, std::string_view json_body, const Principal& principal,
                            const std::string& token, std::shared_ptr<std::promise<BridgeReply>> done) {
  auto fail = [&done](Status status) {
    BridgeReply reply;
    reply.status = std::move(status);
    done->set_value(std::move(reply));
  };
  if (!HttpReadable(type)) {
    fail(Status::NotFound("the JSON API has no request \"" + std::string(type.substr(0, 64)) +
                          "\" (read-only requests: ClusterStatus, ListNodes, ListQueues, ListJobs, GetJob, "
                          "ExplainJob, ListEvents, WhoAmI, ListUsers, ListAudit, GetUsage)"));
    return;
  }
  nlohmann::json body = nlohmann::json::object();
  if (!json_body.empty()) {
    body = nlohmann::json::parse(json_body.begin(), json_body.end(), nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) {
      fail(Status::Malformed("the request body is not a JSON object"));
      return;
    }
  }
  const uint64_t id = ++next_;
  nlohmann::json envelope = {{"v", 1},     {"type", type}, {"id", id},        {"from", "http"},
                             {"epoch", 0}, {"token", token}, {"body", std::move(body)}};
  std::vector<uint8_t> bytes = nlohmann::json::to_msgpack(envelope);
  std::string peer(kPeerPrefix);
  peer += std::to_string(id);
  pending_[peer] = Pending{NowMs(), std::move(done)};
  send_(peer, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), principal);
}

bool GatewayBridge::Deliver(const std::string& peer, const std::string& frame) {
  if (!IsBridgePeer(peer)) return false;
  auto it = pending_.find(peer);
  if (it == pending_.end()) return true;  // its caller gave up; the reply is dropped
  it->second.done->set_value(DecodeBridgeReply(frame));
  pending_.erase(it);
  return true;
}

void GatewayBridge::Expire(int64_t timeout_ms) {
  const int64_t now = NowMs();
  std::erase_if(pending_, [&](const auto& entry) { return now - entry.second.started_ms > timeout_ms; });
}

BridgeReply DecodeBridgeReply(const std::string& frame) {
  BridgeReply reply;
  nlohmann::json envelope = nlohmann::json::from_msgpack(frame.begin(), frame.end(), true, false);
  if (envelope.is_discarded() || !envelope.is_object()) {
    reply.status = Status::Internal("the gateway's reply did not decode");
    return reply;
  }
  reply.type = envelope.value("type", "");
  const nlohmann::json& body = envelope.contains("body") ? envelope["body"] : nlohmann::json::object();
  if (reply.type == "ErrorReply") {
    const std::string code = body.value("code", "Internal");
    reply.status = Status(StatusCodeFromName(code).value_or(StatusCode::kInternal), body.value("message", ""));
    reply.leader = body.value("leader", "");
    return reply;
  }
  reply.json = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return reply;
}

}  // namespace gpool::control
