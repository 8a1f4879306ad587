#include "control/gateway/credit_endpoint.h"

#include <set>

#include <spdlog/spdlog.h>

#include "protocol/validate_usage.h"

namespace gpool::control {

bool BillingVisible(const Actor& actor, const std::string& queue, const state::ClusterState& state) {
  return Authorize(actor, Permission::kReadUsage, Target{"", queue, 0}, state).allowed ||
         Authorize(actor, Permission::kSubmit, Target{"", queue, 0}, state).allowed;
}

void BillingFor(const Actor& actor, const std::string& within, int64_t from_ms, int64_t to_ms,
                const state::ClusterState& state, std::vector<BillingMonth>* months,
                std::vector<CreditAccount>* accounts) {
  const auto visible = [&](const std::string& queue) {
    return (within.empty() || state.QueueInSubtree(queue, within)) && BillingVisible(actor, queue, state);
  };
  if (months != nullptr) *months = state.billing().Months(from_ms, to_ms, visible);
  if (accounts == nullptr || state.billing().accounts().empty()) return;
  std::set<std::string> paying;
  for (const auto& [name, queue] : state.queues()) {
    if (!visible(name)) continue;
    if (std::string account = state.CreditAccountOf(name); !account.empty()) paying.insert(std::move(account));
  }
  for (const auto& name : paying) accounts->push_back(*state.billing().FindAccount(name));
}

void CreditEndpoint::Handle(const Request& request, const Envelope& envelope, int64_t now_ms) {
  (void)now_ms;
  auto msg = ctx_.Decode<Credit>(request, envelope);
  if (!msg) return;
  const auto prices_currency = [this] {
    const PriceTable* table = ctx_.state().usage_ledger().prices();
    return table == nullptr ? std::string() : table->currency;
  };
  if (msg->op == CreditOp::kShow) {
    if (!ctx_.Permit(request, Permission::kReadCluster, {}, "credit")) return;
    return ctx_.AfterBarrier(request, [this, request, queue = msg->queue, prices_currency] {
      if (!queue.empty() && ctx_.state().FindQueue(queue) == nullptr) {
        return ctx_.Fail(request, Status::NotFound("queue '" + queue.substr(0, 64) + "' does not exist"));
      }
      CreditReply reply;
      reply.currency = prices_currency();
      BillingFor(request.actor, queue, 0, 0, ctx_.state(), nullptr, &reply.accounts);
      ctx_.Answer(request, reply);
    });
  }
  // What is left is add: decoding refused any op but show and add.
  const std::string what = "credit queue " + msg->queue + " amount " + std::to_string(msg->amount_micro) +
                           (msg->note.empty() ? "" : " note " + msg->note);
  if (!ctx_.Permit(request, Permission::kManagePrices, {}, what)) return;
  if (Status valid = ValidateCredit(*msg); !valid.ok()) return ctx_.Fail(request, valid.WithContext("credit"));
  const std::string queue = msg->queue;
  const int64_t amount = msg->amount_micro;
  ctx_.ProposeAudited(state::CreditCmd{queue, amount, msg->idempotency_key}, [this, request, queue, amount,
                                                      prices_currency](const state::ApplyResult& result) {
    if (!result.status.ok()) return ctx_.Fail(request, result.status);
    const CreditAccount* account = ctx_.state().billing().FindAccount(queue);
    spdlog::info("credit added user={} queue={} amount_micro={} balance_micro={} duplicate={}", request.actor.name,
                 queue, amount, account == nullptr ? 0 : account->balance_micro(), result.duplicate);
    CreditReply reply;
    reply.currency = prices_currency();
    if (account != nullptr) reply.accounts.push_back(*account);
    ctx_.Answer(request, reply);
  });
}

}  // namespace gpool::control
