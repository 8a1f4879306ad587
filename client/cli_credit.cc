// `gpool credit add QUEUE AMOUNT` and `gpool credit show [QUEUE]` (issue 50):
// a queue's credit account, which pays for its usage and its subtree's as
// it accrues; at or below zero the queue admits no new work.
#include "client/cli_internal.h"

#include "client/format.h"
#include "client/invoice.h"
#include "client/price_file.h"
#include "protocol/messages_usage.h"
#include "protocol/validate_usage.h"

namespace gpool::cli {
namespace {

void CreditOptions(cxxopts::Options& o) {
  o.add_options("credit")("note", "add: a note kept in the audit stream", cxxopts::value<std::string>(), "TEXT")(
      "idempotency-key", "add: deduplication key (default: a random one)", cxxopts::value<std::string>(), "KEY");
}

std::string CreditTable(const CreditReply& reply) {
  if (reply.accounts.empty()) return "No credit accounts (queues without one are billed without a limit).\n";
  Table table({"ACCOUNT", "CREDITED", "DEBITED", "BALANCE", "STATE"});
  for (const auto& account : reply.accounts) {
    table.AddRow({account.queue, FormatMoney(account.credited_micro), FormatMoney(account.debited_micro),
                  FormatMoney(account.balance_micro()),
                  account.balance_micro() > 0 ? "open" : "out of credit: admits no new work"});
  }
  return table.Render() + (reply.currency.empty() ? "" : "(" + reply.currency + ")\n");
}

int RunCredit(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  const std::string& op = p[0];
  gpool::Credit request;
  if (op == "show") {
    if (p.size() > 2) return s.Usage("credit show: takes at most one QUEUE");
    if (p.size() == 2) request.queue = p[1];
  } else if (op == "add") {
    if (p.size() != 3) return s.Usage("credit add: expected QUEUE AMOUNT (e.g. credit add research 250.00)");
    request.op = CreditOp::kAdd;
    request.queue = p[1];
    auto amount = ParseScaledDecimal("amount", p[2], 6);
    if (!amount.ok()) return s.Fail(amount.status());
    request.amount_micro = *amount;
    if (inv.flags.count("note")) request.note = inv.flags["note"].as<std::string>();
    request.idempotency_key = inv.flags.count("idempotency-key") ? inv.flags["idempotency-key"].as<std::string>()
                                                                 : Client::NewIdempotencyKey();
    if (Status valid = ValidateCredit(request); !valid.ok()) return s.Fail(valid);
  } else {
    return s.Usage("credit: expected add QUEUE AMOUNT or show [QUEUE], got '" + op + "'");
  }
  if (op == "show" && (inv.flags.count("note") || inv.flags.count("idempotency-key"))) {
    return s.Usage("credit show: --note and --idempotency-key only apply to 'credit add'");
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->Credit(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (op == "add") {
    s.out << "added " << FormatMoney(request.amount_micro) << " to the credit of queue " << request.queue << "\n"
          << CreditTable(*reply);
  } else {
    s.out << CreditTable(*reply);
  }
  return kExitOk;
}

}  // namespace

const CommandDef kCreditCommand = {
    .name = "credit",
    .synopsis = "add QUEUE AMOUNT [--note TEXT] | show [QUEUE]",
    .summary = "a queue's credit account: add credit (admins), or show balances",
    .min_args = 1,
    .max_args = 3,
    .add_options = CreditOptions,
    .run = RunCredit,
};

}  // namespace gpool::cli
