// GatewayBridge: the JSON API's way into the Gateway.
//
// An HTTP request for /api/v1/<MessageType> becomes the same envelope a
// ZeroMQ client would send, handed to Gateway::OnFrame under a peer name no
// ZeroMQ connection can have (libzmq's generated routing ids are 5 bytes
// starting with 0, and a DEALER may not choose one starting with 0), with the
// Principal the bearer credential resolved to. The Gateway therefore applies
// exactly the same validation, authorisation, read barriers and replies to
// both; the Coordinator's Outbox hands replies for bridge peers back here
// (Deliver) instead of to the socket.
//
// Only read requests are let through (kReadTypes): the dashboard is
// read-only, and writes stay on the authenticated, encrypted ZeroMQ port.
//
// Thread-safety: none; the loop thread owns it. Results go back to the HTTP
// thread through the promise each request carries.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "control/principal.h"
#include "protocol/base/status.h"

namespace gpool::control {

// Request types the JSON API accepts.
bool HttpReadable(std::string_view type);

// A reply as JSON: the body of the reply message, or a typed error.
struct BridgeReply {
  Status status;      // an ErrorReply's status; Ok otherwise
  std::string type;   // the reply's MessageType name
  std::string json;   // the reply body as JSON (Ok only)
  std::string leader; // NotLeader: the leader's client address when known
};

class GatewayBridge {
 public:
  // `send` hands an envelope to the gateway: Gateway::OnFrame.
  using Send = std::function<void(const std::string& peer, std::string_view frame, const Principal& principal)>;
  explicit GatewayBridge(Send send) : send_(std::move(send)) {}

  // Encodes `json_body` as the body of a `type` request and sends it; the
  // reply fulfils `done` (possibly later, after a read barrier). A body that
  // is not a JSON object, or a type not allowed, fails `done` at once.
  void Request(std::string_view type, std::string_view json_body, const Principal& principal,
               const std::string& token, std::shared_ptr<std::promise<BridgeReply>> done);
  // A frame the gateway sent to `peer`: true when the peer is the bridge's
  // (the frame is taken), false for a real ZeroMQ client.
  bool Deliver(const std::string& peer, const std::string& frame);
  // Drops requests the gateway never answered (their HTTP caller has given up).
  void Expire(int64_t timeout_ms);
  size_t in_flight() const { return pending_.size(); }

  static bool IsBridgePeer(const std::string& peer);

 private:
  struct Pending {
    int64_t started_ms = 0;
    std::shared_ptr<std::promise<BridgeReply>> done;
  };
  Send send_;
  uint64_t next_ = 0;
  std::map<std::string, Pending> pending_;
};

// Decodes a reply frame (an envelope) into a BridgeReply.
BridgeReply DecodeBridgeReply(const std::string& frame);

}  // namespace gpool::control
