// An invoice: usage rows (GetUsage by "detail": one row per user, queue,
// pool, model and priority class) times a price table, in integer
// micro-units of the table's currency.
//
// Rounding, the one place an invoice can differ from usage x prices: each
// line's GPU, CPU and memory charges are computed exactly (128-bit integers)
// and each rounded once, half up, to a micro-unit; a line's total is the sum
// of its three charges, and every subtotal and the invoice total are sums of
// line totals. So the total equals the sum over lines of usage x price to
// within half a micro-unit per charge, and the figures printed always add up.
//
//   gpu    = (whole_gpu_mms x model price + share_gpu_mms x share price)
//            x pool multiplier x class multiplier / (3.6e9 mms per GPU-hour)
//   cpu    = cpu_core_ms x cpu_core_hour x multipliers / 3.6e6
//   memory = memory_mib_s x memory_gib_hour x multipliers / (1024 x 3600)
//
// A model without a price takes "default"'s; without either, its GPU charge
// is 0 and the line says so (unpriced).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/messages_usage.h"
#include "protocol/model/prices.h"

namespace gpool::cli {

struct InvoiceLine {
  std::string queue, user, model, pool, priority_class;
  uint64_t gpu_mms = 0, share_gpu_mms = 0, cpu_core_ms = 0, memory_mib_s = 0;
  uint64_t records = 0, running = 0;
  int64_t gpu_hour_micro = 0;      // the model price applied
  uint64_t multiplier_permille = 0;  // pool x class
  int64_t gpu_micro = 0, cpu_micro = 0, memory_micro = 0, total_micro = 0;
  bool unpriced = false;           // its model has no price (nor a default)
};

struct Invoice {
  std::string title;  // "2026-10"
  int64_t from_ms = 0, to_ms = 0, now_ms = 0;
  std::string currency;
  std::vector<InvoiceLine> lines;  // by queue, user, model, pool, class
  int64_t total_micro = 0;
  uint64_t gpu_mms = 0;
  bool includes_running = false;  // some usage is of tasks still running at now_ms
  // Issue 50: what the coordinator billed each queue in the month (after
  // minimum periods and discounts, at the prices in force as it accrued)
  // and the credit accounts paying for them, as GetUsage reported them.
  std::vector<BillingMonth> billing;
  std::vector<CreditAccount> credits;
};

Invoice PriceUsage(const GetUsageReply& detail, const PriceTable& prices, std::string title);

// Subtotals of one dimension ("queue", "user" or "model"): name -> micro-units.
std::vector<std::pair<std::string, int64_t>> Subtotals(const Invoice& invoice, std::string_view by);

// "1234.567890" -> "1234.57" style: micro-units as currency with 2 places
// (rounded half up for display only; the CSV carries the exact micro-units).
std::string FormatMoney(int64_t micro);
// milli-GPU x ms as GPU-hours with 3 places.
std::string FormatGpuHours(uint64_t gpu_mms);

// One CSV line per invoice line (RFC 4180 quoting), then a TOTAL line.
std::string InvoiceCsv(const Invoice& invoice);
// A self-contained printable page: inline CSS, the lines, subtotals per
// queue, user and model, and the total. Every text is HTML-escaped.
std::string InvoiceHtml(const Invoice& invoice);
// The billed and credit sections of InvoiceText ("" when there are none).
std::string BillingText(const Invoice& invoice);
// The terminal form: subtotals per queue, then the total; then, when the
// cluster bills (issue 50), each queue's list amount, minimum-period
// top-ups, off-peak and volume discounts and charge, and the credit balances.
std::string InvoiceText(const Invoice& invoice);

}  // namespace gpool::cli
