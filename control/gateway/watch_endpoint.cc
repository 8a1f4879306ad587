#include "control/gateway/watch_endpoint.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_watch.h"

namespace gpool::control {

void WatchEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  if (hub_ == nullptr) return ctx_.Fail(request, Status::Unavailable("watches are not served here"));
  switch (request.type) {
    case MessageType::kWatch: {
      auto msg = envelope.Body<Watch>();
      if (!msg.ok()) return ctx_.Fail(request, msg.status());
      // After the barrier, so the first reply is as new as any read.
      return ctx_.AfterBarrier(request, [this, request, msg = *msg, now_ms] {
        auto reply = hub_->Open(request.peer, msg, request.actor, now_ms);
        if (!reply.ok()) return ctx_.Fail(request, reply.status());
        ctx_.Answer(request, *reply);
      });
    }
    case MessageType::kWatchRenew: {
      auto msg = envelope.Body<WatchRenew>();
      if (!msg.ok()) return ctx_.Fail(request, msg.status());
      if (msg->watch_ids.size() > 10'000) {
        return ctx_.Fail(request, Status::InvalidArgument("watch_ids: at most 10000 per renewal"));
      }
      return ctx_.Answer(request, hub_->Renew(request.peer, *msg, now_ms));
    }
    default: {
      auto msg = envelope.Body<Unwatch>();
      if (!msg.ok()) return ctx_.Fail(request, msg.status());
      hub_->Close(request.peer, msg->watch_id);
      return ctx_.Answer(request, Ack{});
    }
  }
}

}  // namespace gpool::control
