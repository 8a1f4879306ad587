#include "control/gateway/usage_endpoint.h"

#include <spdlog/spdlog.h>

#include "control/gateway/credit_endpoint.h"
#include "protocol/message_type.h"
#include "protocol/messages_usage.h"
#include "protocol/model/prices.h"
#include "protocol/validate_usage.h"

namespace gpool::control {
namespace {

// A report larger than this is refused: by=job over a long range of a busy
// cluster is what reaches it, and a narrower range answers.
constexpr size_t kMaxUsageRows = 100'000;

int64_t FloorHour(int64_t ms) { return ms - ms % state::kHourMs; }
int64_t CeilHour(int64_t ms) { return FloorHour(ms + state::kHourMs - 1); }
int64_t FloorDay(int64_t ms) { return ms - ms % state::kDayMs; }
int64_t CeilDay(int64_t ms) { return FloorDay(ms + state::kDayMs - 1); }

}  // namespace

void UsageEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  if (request.type == MessageType::kGetUsage) {
    auto msg = envelope.Body<GetUsage>();
    if (!msg.ok()) return ctx_.Fail(request, msg.status());
    if (Status valid = ValidateGetUsage(*msg); !valid.ok()) return ctx_.Fail(request, valid);
    if (!msg->queue.empty() && ctx_.state().FindQueue(msg->queue) == nullptr) {
      return ctx_.Fail(request, Status::NotFound("queue '" + msg->queue.substr(0, 64) + "' does not exist"));
    }
    return ctx_.AfterBarrier(request, [this, request, msg = *msg] {
      GetUsageReply reply;
      reply.from_ms = FloorHour(msg.from_ms);
      reply.to_ms = CeilHour(msg.to_ms);
      reply.now_ms = RequestContext::WallNowMs();
      reply.by = msg.by;
      const auto visible = [&](const std::string& user, const std::string& queue) {
        if (!msg.queue.empty() && !ctx_.state().QueueInSubtree(queue, msg.queue)) return false;
        return Authorize(request.actor, Permission::kReadUsage, Target{user, queue, 0}, ctx_.state()).allowed;
      };
      const std::vector<state::UsageRecord> running =
          msg.include_running ? ctx_.state().RunningUsage(reply.now_ms) : std::vector<state::UsageRecord>{};
      const auto& ledger = ctx_.state().usage_ledger();
      // Ends before the hourly window are read as whole days (issue 49):
      // the reply says which range its figures are for.
      if (msg.by != "job" && reply.from_ms < ledger.hourly_from_ms()) reply.from_ms = FloorDay(reply.from_ms);
      if (msg.by != "job" && reply.to_ms < ledger.hourly_from_ms()) reply.to_ms = CeilDay(reply.to_ms);
      reply.rows = ledger.Report(reply.from_ms, reply.to_ms, msg.by, visible, running);
      if (!ledger.records().empty()) reply.records_kept_from_ms = ledger.records().front().end_ms;
      // Issue 50: what the visible queues were billed, and their credit.
      BillingFor(request.actor, msg.queue, reply.from_ms, reply.to_ms, ctx_.state(), &reply.billing, &reply.credits);
      if (reply.rows.size() > kMaxUsageRows) {
        return ctx_.Fail(request,
                    Status::ResourceExhausted("the report has " + std::to_string(reply.rows.size()) +
                                              " rows, more than " + std::to_string(kMaxUsageRows) +
                                              "; ask for a shorter range or another --by"));
      }
      spdlog::debug("usage report user={} by={} from_ms={} to_ms={} rows={}", request.actor.name, msg.by,
                    reply.from_ms, reply.to_ms, reply.rows.size());
      ctx_.Answer(request, reply);
    });
  }
  auto msg = envelope.Body<UpdatePrices>();
  if (!msg.ok()) return ctx_.Fail(request, msg.status());
  if (msg->op == PricesOp::kShow) {
    if (!ctx_.Permit(request, Permission::kReadCluster, {}, "prices")) return;
    return ctx_.AfterBarrier(request, [this, request] {
      UpdatePricesReply reply;
      if (const PriceTable* table = ctx_.state().usage_ledger().prices()) {
        reply.set = true;
        reply.table = *table;
      }
      ctx_.Answer(request, reply);
    });
  }
  // What is left is set: decoding refused any op but show and set.
  if (!ctx_.Permit(request, Permission::kManagePrices, {}, "prices")) return;
  if (Status valid = ValidatePriceTable(msg->table); !valid.ok()) return ctx_.Fail(request, valid.WithContext("prices"));
  PriceTable table = std::move(msg->table);
  table.set_by = request.actor.name;
  const size_t models = table.models.size();
  ctx_.ProposeAudited(state::UpdatePricesCmd{std::move(table), msg->keep_billing}, [this, request, models,
                                                             who = request.actor.name](const state::ApplyResult& result) {
    if (!result.status.ok()) return ctx_.Fail(request, result.status);
    spdlog::info("prices set user={} models={}", who, models);
    UpdatePricesReply reply;
    if (const PriceTable* committed = ctx_.state().usage_ledger().prices()) {
      reply.set = true;
      reply.table = *committed;
    }
    ctx_.Answer(request, reply);
  });
}

}  // namespace gpool::control
