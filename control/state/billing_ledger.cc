#include "control/state/billing_ledger.h"

#include <algorithm>

namespace gpool::state {

const CreditAccount* BillingLedger::FindAccount(const std::string& queue) const {
  auto it = accounts_.find(queue);
  return it == accounts_.end() ? nullptr : &it->second;
}

bool BillingLedger::AddCredit(const std::string& queue, int64_t amount_micro, const std::string& key) {
  if (!key.empty()) {
    // A linear look: adds are an operator's, a few a day.
    if (std::find(credit_keys_.begin(), credit_keys_.end(), key) != credit_keys_.end()) return false;
    credit_keys_.push_back(key);
    if (credit_keys_.size() > kMaxCreditKeys) credit_keys_.pop_front();
  }
  CreditAccount& account = accounts_[queue];
  account.queue = queue;
  account.credited_micro += amount_micro;
  return true;
}

uint64_t BillingLedger::MonthGpuMms(int64_t month_ms, const std::string& queue) const {
  auto it = months_.find({month_ms, queue});
  return it == months_.end() ? 0 : it->second.gpu_mms;
}

void BillingLedger::Record(int64_t month_ms, const std::string& queue, const std::string& account, const Bill& bill) {
  BillingMonth& month = months_[{month_ms, queue}];
  month.month_ms = month_ms;
  month.queue = queue;
  month.account = account;
  month.gpu_mms += bill.gpu_mms;
  month.list_micro += bill.list_micro;
  month.min_topup_micro += bill.min_topup_micro;
  month.off_peak_discount_micro += bill.off_peak_discount_micro;
  month.volume_discount_micro += bill.volume_discount_micro;
  month.charged_micro += bill.charged_micro();
  if (account.empty()) return;
  auto it = accounts_.find(account);
  if (it != accounts_.end()) it->second.debited_micro += bill.charged_micro();
}

std::vector<BillingMonth> BillingLedger::Months(int64_t from_ms, int64_t to_ms,
                                                const std::function<bool(const std::string& queue)>& visible) const {
  std::vector<BillingMonth> out;
  for (const auto& [key, month] : months_) {
    if (month.month_ms >= to_ms || NextMonthStartMs(month.month_ms) <= from_ms) continue;
    if (visible(month.queue)) out.push_back(month);
  }
  return out;
}

void BillingLedger::Trim(int64_t before_ms) {
  for (auto it = months_.begin(); it != months_.end();) {
    it = NextMonthStartMs(it->second.month_ms) <= before_ms ? months_.erase(it) : std::next(it);
  }
}

BillingLedger::Image BillingLedger::ToImage() const {
  Image image;
  for (const auto& [queue, account] : accounts_) image.accounts.push_back(account);
  for (const auto& [key, month] : months_) image.months.push_back(month);
  image.billed_to_ms = billed_to_ms_;
  image.credit_keys.assign(credit_keys_.begin(), credit_keys_.end());
  return image;
}

void BillingLedger::FromImage(Image image) {
  accounts_.clear();
  months_.clear();
  for (auto& account : image.accounts) accounts_[account.queue] = std::move(account);
  for (auto& month : image.months) months_[{month.month_ms, month.queue}] = std::move(month);
  billed_to_ms_ = image.billed_to_ms;
  credit_keys_.assign(image.credit_keys.begin(), image.credit_keys.end());
}

}  // namespace gpool::state
