// Usage accounting on the client API (issue 34): GetUsage reports committed
// usage records and the running work so far, summed by one dimension;
// UpdatePrices sets or shows the cluster's committed price table, which
// `gpool invoice` multiplies the usage by.
//
// Units are integers so sums never drift and an invoice's totals are exact:
//   gpu_mms       milli-GPU x milliseconds (a whole GPU counts 1000, a share
//                 its compute fraction: 30 % compute is 300); 3.6e9 is one
//                 GPU-hour
//   cpu_core_ms   CPU cores x milliseconds
//   memory_mib_s  MiB x seconds
//   money         micro-units of the table's currency (1 EUR = 1,000,000)
//   multipliers   permille (1.5x = 1500)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/messages_common.h"
#include "protocol/model/prices.h"

namespace gpool {
namespace wire {
class ObjectReader;
}  // namespace wire

// The dimensions a report can sum by. "detail" keeps every dimension of the
// rollups (user, queue, pool, model, class): what an invoice prices.
inline constexpr std::string_view kUsageDimensions[] = {"user", "queue", "model", "pool", "job", "class", "detail"};

// How long a report may span: a year and a bit, so one request stays small.
inline constexpr int64_t kMaxUsageRangeMs = int64_t{400} * 24 * 3600 * 1000;

struct GetUsage {
  static constexpr MessageType kType = MessageType::kGetUsage;
  int64_t from_ms = 0;  // inclusive; rounded down to the hour
  int64_t to_ms = 0;    // exclusive; rounded up to the hour
  std::string by = "user";
  std::string queue;            // only this queue and its subtree; empty: all the caller may see
  bool include_running = true;  // add running tasks' usage from their start to now
  template <typename V>
  void Fields(V& v) {
    v.Required("from_ms", from_ms);
    v.Required("to_ms", to_ms);
    v.Optional("by", by);
    v.Optional("queue", queue);
    v.Optional("include_running", include_running);
  }
};

// One line of a report: the dimensions it was summed by are set, the others
// are empty (job 0).
struct UsageRow {
  std::string user;
  std::string queue;
  std::string pool;
  std::string model;
  std::string priority_class;
  uint64_t job = 0;
  uint64_t records = 0;        // ended task attempts (and sessions) counted
  uint64_t running = 0;        // running tasks counted up to the report time
  uint64_t gpu_mms = 0;        // all GPU usage, running included
  uint64_t share_gpu_mms = 0;  // the part of gpu_mms from GPU shares
  uint64_t running_gpu_mms = 0;  // the part of gpu_mms from running tasks
  uint64_t cpu_core_ms = 0;
  uint64_t memory_mib_s = 0;
  uint64_t estimated = 0;      // records whose end was charged up to a checkpoint (node lost)
  template <typename V>
  void Fields(V& v) {
    v.Optional("user", user);
    v.Optional("queue", queue);
    v.Optional("pool", pool);
    v.Optional("model", model);
    v.Optional("class", priority_class);
    v.Optional("job", job);
    v.Optional("records", records);
    v.Optional("running", running);
    v.Optional("gpu_mms", gpu_mms);
    v.Optional("share_gpu_mms", share_gpu_mms);
    v.Optional("running_gpu_mms", running_gpu_mms);
    v.Optional("cpu_core_ms", cpu_core_ms);
    v.Optional("memory_mib_s", memory_mib_s);
    v.Optional("estimated", estimated);
  }
};

struct GetUsageReply {
  static constexpr MessageType kType = MessageType::kGetUsageReply;
  int64_t from_ms = 0;  // the range reported, hour-aligned
  int64_t to_ms = 0;
  int64_t now_ms = 0;   // the report time: running tasks are counted up to it
  std::string by;
  std::vector<UsageRow> rows;  // sorted by the dimension
  // by=job reads the raw records, which are kept for a while only: the end
  // of the oldest one kept (0: none kept).
  int64_t records_kept_from_ms = 0;
  // Issue 50: what the queues the caller may see were billed in the months
  // the range touches (charged after minimum periods and discounts), and
  // their credit accounts. Empty from a coordinator that predates them.
  std::vector<BillingMonth> billing;
  std::vector<CreditAccount> credits;
  template <typename V>
  void Fields(V& v) {
    v.Required("from_ms", from_ms);
    v.Required("to_ms", to_ms);
    v.Optional("now_ms", now_ms);
    v.Optional("by", by);
    v.Optional("rows", rows);
    v.Optional("records_kept_from_ms", records_kept_from_ms);
    v.Optional("billing", billing);
    v.Optional("credits", credits);
  }
};

// op "set": commit `table` (admins only); op "show": reply with the committed one.
enum class PricesOp : uint8_t { kShow, kSet };
template <>
struct EnumNames<PricesOp> {
  static constexpr std::array<std::string_view, 2> kNames = {"show", "set"};
};

struct UpdatePrices {
  static constexpr MessageType kType = MessageType::kUpdatePrices;
  PricesOp op = PricesOp::kShow;  // by name on the wire; absent: show
  PriceTable table;
  // Set: the table left "billing" out, as a client from before billing
  // rules (issue 50) sends it, so the committed billing rules stay
  // (UpdatePricesCmd.keep_billing) instead of being cleared by an operator
  // who only changed a price. Every newer client sends "billing" (an empty
  // map clears them). Filled when the message is read; never sent.
  bool keep_billing = false;
  template <typename V>
  void Fields(V& v) {
    v.Optional("op", op);
    v.Optional("table", table);
  }
  // Reads Fields, then keep_billing (protocol/prices_update.cc, which keeps
  // msgpack out of this header; the wire reader calls it instead of Fields).
  void Unpack(wire::ObjectReader& reader);
};

struct UpdatePricesReply {
  static constexpr MessageType kType = MessageType::kUpdatePricesReply;
  bool set = false;  // false: no table has been committed (`table` is empty)
  PriceTable table;
  template <typename V>
  void Fields(V& v) {
    v.Optional("set", set);
    v.Optional("table", table);
  }
};

// Credit accounts (issue 50). op "add": add `amount_micro` (negative: take
// back) to `queue`'s account, opening it if it has none (admins only); op
// "show": the accounts the caller may see (`queue`: only that one). Both
// answer with the accounts as committed.
enum class CreditOp : uint8_t { kShow, kAdd };
template <>
struct EnumNames<CreditOp> {
  static constexpr std::array<std::string_view, 2> kNames = {"show", "add"};
};
inline constexpr int64_t kMaxCreditMicro = int64_t{1'000'000'000} * 1'000'000;

struct Credit {
  static constexpr MessageType kType = MessageType::kCredit;
  CreditOp op = CreditOp::kShow;  // by name on the wire
  std::string queue;
  int64_t amount_micro = 0;
  std::string note;  // kept in the audit entry
  // Add: a key of the caller's choosing (the CLI draws a random one). Every
  // request may be re-sent (client.h); an add whose key the state has seen
  // recently is answered as done and not added again.
  std::string idempotency_key;
  template <typename V>
  void Fields(V& v) {
    v.Optional("op", op);
    v.Optional("queue", queue);
    v.Optional("amount", amount_micro);
    v.Optional("note", note);
    v.Optional("idempotency_key", idempotency_key);
  }
};

struct CreditReply {
  static constexpr MessageType kType = MessageType::kCreditReply;
  std::string currency;  // of the committed price table ("" without one)
  std::vector<CreditAccount> accounts;
  template <typename V>
  void Fields(V& v) {
    v.Optional("currency", currency);
    v.Optional("accounts", accounts);
  }
};

}  // namespace gpool
