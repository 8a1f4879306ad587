// Gateway: the watch requests (docs/protocol.md 7.19), served by the WatchHub.
#include "control/frames.h"
#include "control/gateway.h"

namespace gpool::control {

void Gateway::OnWatch(const Request& request, const Envelope& envelope, int64_t now_ms) {
  if (watch_hub_ == nullptr) return Fail(request.peer, request.id, Status::Unavailable("watches are not served here"));
  switch (request.type) {
    case MessageType::kWatch: {
      auto msg = envelope.Body<Watch>();
      if (!msg.ok()) return Fail(request.peer, request.id, msg.status());
      // After the barrier, so the first reply is as new as any read.
      return AfterBarrier(request.peer, request.id, [this, request, msg = *msg, now_ms] {
        auto reply = watch_hub_->Open(request.peer, msg, request.actor, now_ms);
        if (!reply.ok()) return Fail(request.peer, request.id, reply.status());
        Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), *reply));
      });
    }
    case MessageType::kWatchRenew: {
      auto msg = envelope.Body<WatchRenew>();
      if (!msg.ok()) return Fail(request.peer, request.id, msg.status());
      if (msg->watch_ids.size() > 10'000) {
        return Fail(request.peer, request.id, Status::InvalidArgument("watch_ids: at most 10000 per renewal"));
      }
      return Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), watch_hub_->Renew(request.peer, *msg, now_ms)));
    }
    default: {
      auto msg = envelope.Body<Unwatch>();
      if (!msg.ok()) return Fail(request.peer, request.id, msg.status());
      watch_hub_->Close(request.peer, msg->watch_id);
      return Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), Ack{}));
    }
  }
}

}  // namespace gpool::control
