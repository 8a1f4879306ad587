// ClusterState: billing and credit accounts (issue 50; billing_ledger.h).
// Usage is billed on apply from committed times only: a checkpoint's own
// time for running attempts, an attempt's recorded end when it ends.
#include <algorithm>

#include "control/state/billing_rules.h"
#include "control/state/cluster_state.h"

namespace gpool::state {

std::string ClusterState::CreditAccountOf(const std::string& queue) const {
  if (billing_.accounts().empty()) return "";  // the common case costs no walk
  std::string at = queue;
  // Up the tree; a parent chain longer than the tree is a corrupt one.
  for (size_t steps = 0; !at.empty() && steps <= queues_.size(); ++steps) {
    if (billing_.FindAccount(at) != nullptr) return at;
    const QueueRecord* record = FindQueue(at);
    at = record == nullptr || at == "root" ? std::string() : record->spec.parent;
  }
  return "";
}

bool ClusterState::OutOfCredit(const std::string& queue) const {
  const std::string account = CreditAccountOf(queue);
  if (account.empty()) return false;
  return billing_.FindAccount(account)->balance_micro() <= 0;
}

ApplyResult ClusterState::ApplyCredit(const CreditCmd& cmd) {
  ApplyResult result;
  if (FindQueue(cmd.queue) == nullptr) {
    result.status = Status::NotFound("queue '" + cmd.queue + "' does not exist (`gpool queue tree` lists the queues)");
    return result;
  }
  if (cmd.amount_micro == 0) {
    result.status = Status::InvalidArgument("amount: must not be 0");
    return result;
  }
  result.duplicate = !billing_.AddCredit(cmd.queue, cmd.amount_micro, cmd.idempotency_key);
  return result;
}

void ClusterState::BillUsage(const UsageRecord& record, int64_t end_ms, bool ended) {
  const PriceTable* prices = usage_ledger_.prices();
  if (prices == nullptr) return;  // nothing is priced yet: nothing is billed
  const int64_t start = std::max(record.start_ms, billing_.billed_to_ms());
  int64_t topup_ms = 0;
  if (ended && record.end_ms > record.start_ms) {
    const int64_t min_ms = MinPeriodMs(prices->billing, record.queue, record.priority_class);
    topup_ms = std::max<int64_t>(0, min_ms - (record.end_ms - record.start_ms));
  }
  if (start >= end_ms && topup_ms == 0) return;
  const std::string account = CreditAccountOf(record.queue);
  // Month by month: the volume tiers count per queue per calendar month.
  for (int64_t at = start; at < end_ms;) {
    const int64_t month = MonthStartMs(at);
    const int64_t upto = std::min(end_ms, NextMonthStartMs(at));
    billing_.Record(month, record.queue, account,
                    BillPiece(record, at, upto, 0, billing_.MonthGpuMms(month, record.queue), *prices));
    at = upto;
  }
  if (topup_ms > 0) {
    const int64_t month = MonthStartMs(record.end_ms);
    billing_.Record(month, record.queue, account, BillPiece(record, record.end_ms, record.end_ms, topup_ms, 0, *prices));
  }
}

void ClusterState::BillRunning(int64_t now) {
  if (usage_ledger_.prices() != nullptr && now > billing_.billed_to_ms()) {
    for (const auto& [name, node] : nodes_) {
      for (const TaskId& id : node.tasks) {
        const JobRecord* job = FindJob(id.job);
        const TaskRecord* task = FindTask(id);
        if (job == nullptr || task == nullptr || task->state != TaskState::kRunning || task->start_ms == 0) continue;
        BillUsage(UsageRecordOf(*job, *task, now), now, /*ended=*/false);
      }
    }
  }
  billing_.set_billed_to_ms(now);
}

}  // namespace gpool::state
