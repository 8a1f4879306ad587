// WatchEndpoint: Watch, WatchRenew and Unwatch (docs/protocol.md 7.19),
// served by the WatchHub; without one they are answered Unavailable.
#pragma once

#include "control/gateway/endpoint.h"
#include "control/watch/watch_hub.h"
#include "protocol/message_type.h"

namespace gpool::control {

class WatchEndpoint final : public Endpoint {
 public:
  explicit WatchEndpoint(RequestContext& ctx) : ctx_(ctx) {}
  std::vector<MessageType> Serves() const override {
    return {MessageType::kWatch, MessageType::kWatchRenew, MessageType::kUnwatch};
  }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;
  void set_hub(WatchHub* hub) { hub_ = hub; }

 private:
  RequestContext& ctx_;
  WatchHub* hub_ = nullptr;
};

}  // namespace gpool::control
