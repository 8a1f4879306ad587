#include "protocol/validate_usage.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "protocol/types.h"

namespace gpool {
namespace {

constexpr int64_t kMaxPriceMicro = int64_t{1'000'000} * 1'000'000;  // a million currency units an hour
constexpr uint64_t kMaxPermille = 100'000;                          // 100x
constexpr size_t kMaxEntries = 256;

Status CheckPrice(const std::string& field, int64_t micro) {
  if (micro < 0 || micro > kMaxPriceMicro) {
    return Status::InvalidArgument(field + ": " + std::to_string(micro) +
                                   " micro-units is outside 0 .. 1,000,000 per hour");
  }
  return Status::Ok();
}

Status CheckMultipliers(const std::string& field, const std::map<std::string, uint64_t>& multipliers) {
  if (multipliers.size() > kMaxEntries) return Status::InvalidArgument(field + ": more than 256 entries");
  for (const auto& [name, permille] : multipliers) {
    if (name.empty() || name.size() > 64) return Status::InvalidArgument(field + ": a name must be 1-64 characters");
    if (permille > kMaxPermille) {
      return Status::InvalidArgument(field + "." + name + ": " + std::to_string(permille) +
                                     " permille is more than 100x");
    }
  }
  return Status::Ok();
}

constexpr int64_t kMaxMinPeriodMs = int64_t{31} * 24 * 3600 * 1000;  // a month
constexpr size_t kMaxVolumeTiers = 16;

Status CheckMinPeriods(const std::string& field, const std::map<std::string, int64_t>& periods) {
  if (periods.size() > kMaxEntries) return Status::InvalidArgument(field + ": more than 256 entries");
  for (const auto& [name, ms] : periods) {
    if (name.empty() || name.size() > 128) return Status::InvalidArgument(field + ": a name must be 1-128 characters");
    if (ms < 0 || ms > kMaxMinPeriodMs) {
      return Status::InvalidArgument(field + "." + name + ": " + std::to_string(ms) + " ms is outside 0 .. 31 days");
    }
  }
  return Status::Ok();
}

// Issue 50: the billing rules inside a price table.
Status CheckBillingRules(const BillingRules& rules) {
  GPOOL_RETURN_IF_ERROR(CheckMinPeriods("min_period.class", rules.min_period_ms_by_class));
  GPOOL_RETURN_IF_ERROR(CheckMinPeriods("min_period.queue", rules.min_period_ms_by_queue));
  for (const auto& [name, ms] : rules.min_period_ms_by_class) {
    if (!PriorityClassFromString(name)) {
      return Status::InvalidArgument("min_period.class." + name + ": not a class (" + Choices<PriorityClass>() + ")");
    }
  }
  const OffPeakWindow& w = rules.off_peak;
  if (w.from_hour > 23 || w.to_hour > 23) return Status::InvalidArgument("off_peak: hours are 0-23 (UTC)");
  if (w.permille > 1000) {
    return Status::InvalidArgument("off_peak.multiplier: " + std::to_string(w.permille) +
                                   " permille is a surcharge; off-peak is at most 1 (1000 permille)");
  }
  if (rules.volume.size() > kMaxVolumeTiers) return Status::InvalidArgument("volume_discount: more than 16 tiers");
  for (size_t i = 0; i < rules.volume.size(); ++i) {
    const VolumeTier& tier = rules.volume[i];
    const std::string field = "volume_discount[" + std::to_string(i) + "]";
    if (tier.permille > 1000) return Status::InvalidArgument(field + ".multiplier: more than 1 is not a discount");
    if (tier.gpu_hours > 100'000'000) return Status::InvalidArgument(field + ".gpu_hours: more than 100,000,000");
    if (i > 0 && tier.gpu_hours <= rules.volume[i - 1].gpu_hours) {
      return Status::InvalidArgument(field + ".gpu_hours: tiers must be in ascending order of gpu_hours");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateGetUsage(const GetUsage& request) {
  if (request.from_ms < 0) return Status::InvalidArgument("from: must not be before 1970-01-01");
  if (request.to_ms <= request.from_ms) {
    return Status::InvalidArgument("to: must be after from (" + std::to_string(request.from_ms) + " ms)");
  }
  if (request.to_ms - request.from_ms > kMaxUsageRangeMs) {
    return Status::InvalidArgument("from/to: a report spans at most 400 days");
  }
  if (std::find(std::begin(kUsageDimensions), std::end(kUsageDimensions), request.by) == std::end(kUsageDimensions)) {
    return Status::InvalidArgument("by: '" + request.by.substr(0, 64) +
                                   "' is not one of user, queue, model, pool, job, class, detail");
  }
  if (request.queue.size() > 253) return Status::InvalidArgument("queue: longer than 253 characters");
  return Status::Ok();
}

Status ValidatePriceTable(const PriceTable& table) {
  if (table.currency.empty() || table.currency.size() > 8 ||
      !std::all_of(table.currency.begin(), table.currency.end(), [](unsigned char c) { return std::isalnum(c); })) {
    return Status::InvalidArgument("currency: 1-8 letters or digits (\"EUR\")");
  }
  if (table.models.size() > kMaxEntries) return Status::InvalidArgument("gpu_hour: more than 256 models");
  std::set<std::string> seen;
  for (const auto& model : table.models) {
    if (model.model.empty() || model.model.size() > 64) {
      return Status::InvalidArgument("gpu_hour: a model name must be 1-64 characters");
    }
    if (!seen.insert(model.model).second) {
      return Status::InvalidArgument("gpu_hour." + model.model + ": listed twice");
    }
    GPOOL_RETURN_IF_ERROR(CheckPrice("gpu_hour." + model.model, model.gpu_hour_micro));
    GPOOL_RETURN_IF_ERROR(CheckPrice("share_gpu_hour." + model.model, model.share_gpu_hour_micro));
  }
  GPOOL_RETURN_IF_ERROR(CheckMultipliers("pool_multiplier", table.pool_permille));
  GPOOL_RETURN_IF_ERROR(CheckMultipliers("class_multiplier", table.class_permille));
  GPOOL_RETURN_IF_ERROR(CheckPrice("cpu_core_hour", table.cpu_core_hour_micro));
  GPOOL_RETURN_IF_ERROR(CheckPrice("memory_gib_hour", table.memory_gib_hour_micro));
  return CheckBillingRules(table.billing);
}

Status ValidateCredit(const Credit& request) {
  if (request.op == CreditOp::kShow) return Status::Ok();
  if (request.queue.empty() || request.queue.size() > 128) {
    return Status::InvalidArgument("queue: a credit is added to a queue (1-128 characters)");
  }
  if (request.amount_micro == 0) return Status::InvalidArgument("amount: must not be 0");
  if (request.amount_micro > kMaxCreditMicro || request.amount_micro < -kMaxCreditMicro) {
    return Status::InvalidArgument("amount: more than 1,000,000,000 currency units at once");
  }
  if (request.note.size() > 256) return Status::InvalidArgument("note: longer than 256 characters");
  if (request.idempotency_key.size() > 256) return Status::InvalidArgument("idempotency_key: longer than 256 bytes");
  return Status::Ok();
}

}  // namespace gpool
