// Billing rules and credit accounts (issue 50), as the replicated state keeps
// them: the rules travel inside the committed price table (PriceTable.
// billing, set with `gpool prices set`), credits with CreditCmd. Money in
// micro-units of the table's currency, multipliers in permille, times in ms
// (messages_usage.h explains the units).
//
// How a task attempt is billed (control/state/billing_rules.h has the
// arithmetic, and docs/operations.md the worked example):
//   list      its usage x the price table, as the invoice prices it
//   min period  an attempt that ran shorter than the minimum of its queue
//             (else of its class) is billed as if it ran that long; the
//             top-up is at list price
//   off-peak  usage inside the daily window [from_hour, to_hour) UTC (it may
//             wrap past midnight) is multiplied by `permille`
//   volume    GPU usage of a queue beyond `gpu_hours` in one calendar month
//             (UTC) is multiplied by the tier's permille (the highest tier
//             passed applies)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpool {

struct OffPeakWindow {
  uint32_t from_hour = 0;   // 0-23, UTC
  uint32_t to_hour = 0;     // 0-23, UTC; equal to from_hour: no window
  uint64_t permille = 1000; // 600: 40 % off
  template <typename V>
  void Fields(V& v) {
    v.Optional("from_hour", from_hour);
    v.Optional("to_hour", to_hour);
    v.Optional("permille", permille);
  }
  bool operator==(const OffPeakWindow&) const = default;
};

struct VolumeTier {
  uint64_t gpu_hours = 0;   // of the queue in the month, before this tier applies
  uint64_t permille = 1000;
  template <typename V>
  void Fields(V& v) {
    v.Required("gpu_hours", gpu_hours);
    v.Required("permille", permille);
  }
  bool operator==(const VolumeTier&) const = default;
};

struct BillingRules {
  std::map<std::string, int64_t> min_period_ms_by_class;  // by priority class
  std::map<std::string, int64_t> min_period_ms_by_queue;  // by the job's queue; wins over its class's
  OffPeakWindow off_peak;
  std::vector<VolumeTier> volume;  // ascending gpu_hours
  template <typename V>
  void Fields(V& v) {
    v.Optional("min_period_class", min_period_ms_by_class);
    v.Optional("min_period_queue", min_period_ms_by_queue);
    v.Optional("off_peak", off_peak);
    v.Optional("volume", volume);
  }
  bool operator==(const BillingRules&) const = default;
};

// One queue's credit account: who pays for the queue and every queue below
// it that has no account of its own. Balance = credited - debited; at or
// below zero the queue admits no new work.
struct CreditAccount {
  std::string queue;
  int64_t credited_micro = 0;  // every credit added (a negative add takes some back)
  int64_t debited_micro = 0;   // every charge of its queues' usage
  int64_t balance_micro() const { return credited_micro - debited_micro; }
  template <typename V>
  void Fields(V& v) {
    v.Required("queue", queue);
    v.Optional("credited", credited_micro);
    v.Optional("debited", debited_micro);
  }
  bool operator==(const CreditAccount&) const = default;
};

// What one queue's usage was billed in one calendar month (UTC): the
// figures an invoice shows beside its priced usage. charged = list +
// min_topup - off_peak_discount - volume_discount.
struct BillingMonth {
  int64_t month_ms = 0;  // the month's first millisecond
  std::string queue;     // the job's own queue
  std::string account;   // the queue whose credit paid ("": none, billed later)
  uint64_t gpu_mms = 0;  // GPU usage counted towards the volume tiers
  int64_t list_micro = 0;
  int64_t min_topup_micro = 0;
  int64_t off_peak_discount_micro = 0;
  int64_t volume_discount_micro = 0;
  int64_t charged_micro = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("month_ms", month_ms);
    v.Required("queue", queue);
    v.Optional("account", account);
    v.Optional("gpu_mms", gpu_mms);
    v.Optional("list", list_micro);
    v.Optional("min_topup", min_topup_micro);
    v.Optional("off_peak_discount", off_peak_discount_micro);
    v.Optional("volume_discount", volume_discount_micro);
    v.Optional("charged", charged_micro);
  }
  bool operator==(const BillingMonth&) const = default;
};

}  // namespace gpool
