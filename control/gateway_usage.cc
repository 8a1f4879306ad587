// Gateway: usage accounting on the client API (issue 34). GetUsage is a read
// of the applied state (after the read barrier), filtered to what the caller
// may see: admins everything, a queue-admin its subtree, anyone their own
// usage (Permission::kReadUsage per (user, queue)). UpdatePrices shows the
// committed price table to anyone with a role, and sets it for admins only,
// audited like every write.
#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/gateway.h"
#include "protocol/validate_usage.h"

namespace gpool::control {
namespace {

// A report larger than this is refused: by=job over a long range of a busy
// cluster is what reaches it, and a narrower range answers.
constexpr size_t kMaxUsageRows = 100'000;

int64_t FloorHour(int64_t ms) { return ms - ms % state::kHourMs; }
int64_t CeilHour(int64_t ms) { return FloorHour(ms + state::kHourMs - 1); }

}  // namespace

void Gateway::OnUsage(const Request& request, const Envelope& envelope) {
  const std::string& peer = request.peer;
  const uint64_t id = request.id;
  if (envelope.type() == MessageType::kGetUsage) {
    auto msg = envelope.Body<GetUsage>();
    if (!msg.ok()) return Fail(peer, id, msg.status());
    if (Status valid = ValidateGetUsage(*msg); !valid.ok()) return Fail(peer, id, valid);
    if (!msg->queue.empty() && state_.FindQueue(msg->queue) == nullptr) {
      return Fail(peer, id, Status::NotFound("queue '" + msg->queue.substr(0, 64) + "' does not exist"));
    }
    return AfterBarrier(peer, id, [this, request, msg = *msg] {
      GetUsageReply reply;
      reply.from_ms = FloorHour(msg.from_ms);
      reply.to_ms = CeilHour(msg.to_ms);
      reply.now_ms = WallNowMs();
      reply.by = msg.by;
      const auto visible = [&](const std::string& user, const std::string& queue) {
        if (!msg.queue.empty() && !state_.QueueInSubtree(queue, msg.queue)) return false;
        return Authorize(request.actor, Permission::kReadUsage, Target{user, queue, 0}, state_).allowed;
      };
      const std::vector<state::UsageRecord> running =
          msg.include_running ? state_.RunningUsage(reply.now_ms) : std::vector<state::UsageRecord>{};
      const auto& ledger = state_.usage_ledger();
      reply.rows = ledger.Report(reply.from_ms, reply.to_ms, msg.by, visible, running);
      if (!ledger.records().empty()) reply.records_kept_from_ms = ledger.records().front().end_ms;
      if (reply.rows.size() > kMaxUsageRows) {
        return Fail(request.peer, request.id,
                    Status::ResourceExhausted("the report has " + std::to_string(reply.rows.size()) +
                                              " rows, more than " + std::to_string(kMaxUsageRows) +
                                              "; ask for a shorter range or another --by"));
      }
      spdlog::debug("usage report user={} by={} from_ms={} to_ms={} rows={}", request.actor.name, msg.by,
                    reply.from_ms, reply.to_ms, reply.rows.size());
      Reply(request.peer, MakeFrame(request.id, proposer_.epoch(), reply));
    });
  }
  auto msg = envelope.Body<UpdatePrices>();
  if (!msg.ok()) return Fail(peer, id, msg.status());
  if (msg->op == PricesOp::kShow) {
    if (!Permit(request, Permission::kReadCluster, {}, "prices")) return;
    return AfterBarrier(peer, id, [this, peer, id] {
      UpdatePricesReply reply;
      if (const PriceTable* table = state_.usage_ledger().prices()) {
        reply.set = true;
        reply.table = *table;
      }
      Reply(peer, MakeFrame(id, proposer_.epoch(), reply));
    });
  }
  // What is left is set: decoding refused any op but show and set.
  if (!Permit(request, Permission::kManagePrices, {}, "prices")) return;
  if (Status valid = ValidatePriceTable(msg->table); !valid.ok()) return Fail(peer, id, valid.WithContext("prices"));
  PriceTable table = std::move(msg->table);
  table.set_by = request.actor.name;
  const size_t models = table.models.size();
  ProposeAudited(state::UpdatePricesCmd{std::move(table)}, [this, peer, id, models,
                                                             who = request.actor.name](const state::ApplyResult& result) {
    if (!result.status.ok()) return Fail(peer, id, result.status);
    spdlog::info("prices set user={} models={}", who, models);
    UpdatePricesReply reply;
    if (const PriceTable* committed = state_.usage_ledger().prices()) {
      reply.set = true;
      reply.table = *committed;
    }
    Reply(peer, MakeFrame(id, proposer_.epoch(), reply));
  });
}

}  // namespace gpool::control
