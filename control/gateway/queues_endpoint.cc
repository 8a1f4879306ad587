#include "control/gateway/queues_endpoint.h"

#include <spdlog/spdlog.h>

#include "control/class_grants.h"
#include "control/views.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/model/queue_update.h"

namespace gpool::control {

void QueuesEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  if (request.type == MessageType::kListQueues) {
    if (!ctx_.Permit(request, Permission::kReadCluster, {}, "queues")) return;
    return ctx_.AfterBarrier(request, [this, request] { ctx_.Answer(request, ToQueueList(ctx_.state())); });
  }
  auto msg = ctx_.Decode<UpdateQueue>(request, envelope);
  if (!msg) return;
  const std::string what = "queue " + msg->spec.name;
  if (msg->op == QueueOp::kGrantClass || msg->op == QueueOp::kRevokeClass) {
    // Issue 50: who may open a class to a queue is its own rule.
    const Decision decision = AuthorizeClassGrant(request.actor, msg->priority_class, msg->spec.name, ctx_.state());
    if (!ctx_.PermitDecided(request, decision, what)) return;
    return OnUpdate(request, std::move(*msg));
  }
  if (msg->op != QueueOp::kCreate && !ctx_.Permit(request, Permission::kManageQueue, Target{"", msg->spec.name}, what)) return;
  if (msg->op != QueueOp::kDelete && !ctx_.Permit(request, Permission::kPlaceQueue, Target{"", msg->spec.parent}, what)) return;
  OnUpdate(request, std::move(*msg));
}

void QueuesEndpoint::OnUpdate(const Request& request, UpdateQueue msg) {
  if (Status valid = ValidateUpdateQueue(msg); !valid.ok()) return ctx_.Fail(request, valid);
  const std::string name = msg.spec.name;
  const QueueOp op = msg.op;
  const std::string priority_class = msg.priority_class;
  // A delete answers with the queue as it was.
  QueueSummary before = ToQueueSummary(ctx_.state(), name);
  ctx_.ProposeAudited(state::UpdateQueueCmd{std::move(msg)},
                      [this, request, name, op, priority_class, before](const state::ApplyResult& result) {
                        if (!result.status.ok()) return ctx_.Fail(request, result.status);
                        spdlog::info("queue updated queue={} op={} class={}", name, NameOf(op), priority_class);
                        ctx_.Answer(request,
                                    UpdateQueueReply{op == QueueOp::kDelete ? before : ToQueueSummary(ctx_.state(), name)});
                      });
}

}  // namespace gpool::control
