// BillingLedger: credit accounts and what each queue's usage was billed per
// calendar month (issue 50), part of the replicated state.
//
// ClusterState bills usage as it accrues, on apply only: at each
// UsageCheckpointCmd the running attempts' time since the last checkpoint
// (`billed_to_ms`), and when an attempt ends the rest of it and its
// minimum-period top-up (billing_rules.h has the arithmetic). Both times are
// committed ones (the command's time, the task's reported times), never a
// replica's clock, so every replica debits the same. Each charge is added
// to its queue's month and debited from the credit account that pays for
// the queue: its own, else its nearest ancestor's; a queue under no account
// is billed without a limit (the invoice shows what it owes).
//
// Thread-safety: none; ClusterState's owner thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "control/state/billing_rules.h"
#include "protocol/model/billing.h"

namespace gpool::state {

class BillingLedger {
 public:
  const std::map<std::string, CreditAccount>& accounts() const { return accounts_; }
  const CreditAccount* FindAccount(const std::string& queue) const;
  // Adds `amount` (negative: takes back) to `queue`'s account, opening it,
  // unless `key` is one of the kMaxCreditKeys last ones added (a re-sent
  // request): false then, and nothing changes.
  static constexpr size_t kMaxCreditKeys = 1024;
  bool AddCredit(const std::string& queue, int64_t amount_micro, const std::string& key = "");
  // Drops the account of a queue that no longer exists.
  void CloseAccount(const std::string& queue) { accounts_.erase(queue); }

  // Running attempts are billed up to here (the last checkpoint billed).
  int64_t billed_to_ms() const { return billed_to_ms_; }
  void set_billed_to_ms(int64_t ms) { billed_to_ms_ = std::max(billed_to_ms_, ms); }

  // GPU-mms `queue` was billed in the month starting at `month_ms` (the
  // volume tiers' count).
  uint64_t MonthGpuMms(int64_t month_ms, const std::string& queue) const;
  // Adds `bill` to (month, queue) and debits it from `account` ("": none).
  void Record(int64_t month_ms, const std::string& queue, const std::string& account, const Bill& bill);
  // The months overlapping [from, to) of the queues `visible` allows.
  std::vector<BillingMonth> Months(int64_t from_ms, int64_t to_ms,
                                   const std::function<bool(const std::string& queue)>& visible) const;
  // Months that ended before `before_ms` are dropped (retention: the daily
  // usage rollups' horizon).
  void Trim(int64_t before_ms);

  struct Image {
    std::vector<CreditAccount> accounts;
    std::vector<BillingMonth> months;
    int64_t billed_to_ms = 0;
    std::vector<std::string> credit_keys;  // oldest first
    template <typename V>
    void Fields(V& v) {
      v.Optional("accounts", accounts);
      v.Optional("months", months);
      v.Optional("billed_to_ms", billed_to_ms);
      v.Optional("credit_keys", credit_keys);
    }
    bool operator==(const Image&) const = default;
  };
  Image ToImage() const;
  void FromImage(Image image);

 private:
  std::map<std::string, CreditAccount> accounts_;
  std::map<std::pair<int64_t, std::string>, BillingMonth> months_;  // (month, queue)
  int64_t billed_to_ms_ = 0;
  std::deque<std::string> credit_keys_;  // the last kMaxCreditKeys add keys, oldest first
};

}  // namespace gpool::state
