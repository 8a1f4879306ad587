#include "control/state/billing_rules.h"

#include <algorithm>
#include <map>

namespace gpool::state {
namespace {

using BillWide = unsigned __int128;

constexpr uint64_t kBillMmsPerGpuHour = 3'600'000'000;  // 1000 milli-GPUs x 3.6e6 ms

int64_t BillRoundDiv(BillWide num, BillWide den) { return den == 0 ? 0 : static_cast<int64_t>((num + den / 2) / den); }

uint64_t BillPermilleOf(const std::map<std::string, uint64_t>& table, const std::string& name) {
  auto it = table.find(name);
  return it == table.end() ? 1000 : it->second;
}

const ModelPrice* BillPriceOf(const PriceTable& prices, const std::string& model) {
  const ModelPrice* fallback = nullptr;
  for (const auto& price : prices.models) {
    if (price.model == model) return &price;
    if (price.model == "default") fallback = &price;
  }
  return fallback;
}

// Days since 1970-01-01 of a civil date, and back (H. Hinnant's algorithms,
// proleptic Gregorian): months have no fixed length in ms.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

int64_t MonthStartMs(int64_t ms) {
  int64_t y = 0;
  unsigned m = 0;
  CivilFromDays(FloorDiv(ms, kDayMs), &y, &m);
  return DaysFromCivil(y, m, 1) * kDayMs;
}

int64_t NextMonthStartMs(int64_t ms) {
  int64_t y = 0;
  unsigned m = 0;
  CivilFromDays(FloorDiv(ms, kDayMs), &y, &m);
  return m == 12 ? DaysFromCivil(y + 1, 1, 1) * kDayMs : DaysFromCivil(y, m + 1, 1) * kDayMs;
}

int64_t OffPeakOverlapMs(const OffPeakWindow& window, int64_t start, int64_t end) {
  if (window.from_hour == window.to_hour || end <= start) return 0;
  const int64_t from = int64_t{window.from_hour} * kHourMs;
  const int64_t to = int64_t{window.to_hour} * kHourMs;
  auto overlap = [&](int64_t a, int64_t b) { return std::max<int64_t>(0, std::min(b, end) - std::max(a, start)); };
  int64_t total = 0;
  // One day at a time: a piece is minutes long as a rule (usage checkpoints),
  // and at most the attempt's whole run.
  for (int64_t day = FloorDiv(start, kDayMs) * kDayMs; day < end; day += kDayMs) {
    if (from < to) {
      total += overlap(day + from, day + to);
    } else {  // wraps past midnight: [0, to) and [from, 24h)
      total += overlap(day, day + to) + overlap(day + from, day + kDayMs);
    }
  }
  return total;
}

int64_t MinPeriodMs(const BillingRules& rules, const std::string& queue, const std::string& priority_class) {
  if (auto it = rules.min_period_ms_by_queue.find(queue); it != rules.min_period_ms_by_queue.end()) return it->second;
  const std::string cls = priority_class.empty() ? "medium" : priority_class;
  if (auto it = rules.min_period_ms_by_class.find(cls); it != rules.min_period_ms_by_class.end()) return it->second;
  return 0;
}

uint64_t VolumePermilleMms(const std::vector<VolumeTier>& tiers, uint64_t before_mms, uint64_t piece_mms) {
  // Tier boundaries in GPU-mms; the span (before, before + piece] is cut at each.
  uint64_t sum = 0;
  uint64_t at = before_mms;
  const uint64_t end = before_mms + piece_mms;
  uint64_t permille = 1000;
  for (size_t i = 0; i <= tiers.size() && at < end; ++i) {
    const uint64_t next = i < tiers.size() ? tiers[i].gpu_hours * kBillMmsPerGpuHour : UINT64_MAX;
    if (next > at) {
      const uint64_t upto = std::min(end, next);
      sum += (upto - at) * permille;
      at = upto;
    }
    if (i < tiers.size()) permille = tiers[i].permille;
  }
  return sum;
}

Bill BillPiece(const UsageRecord& record, int64_t start, int64_t end, int64_t topup_ms, uint64_t volume_before_mms,
               const PriceTable& prices) {
  Bill bill;
  const int64_t piece_ms = std::max<int64_t>(0, end - start);
  const uint64_t multiplier =
      BillPermilleOf(prices.pool_permille, record.pool) * BillPermilleOf(prices.class_permille, record.priority_class);
  const ModelPrice* model = record.gpu_milli == 0 ? nullptr : BillPriceOf(prices, record.model);
  // The list prices below are exact numerators over one denominator: GPU
  // mms per GPU-hour, times 1e6 for the two permille multipliers.
  const BillWide den = BillWide{kBillMmsPerGpuHour} * 1'000'000;
  auto list_gpu = [&](int64_t ms) -> BillWide {
    if (model == nullptr) return 0;
    const int64_t price = record.Share() && model->share_gpu_hour_micro != 0 ? model->share_gpu_hour_micro
                                                                                : model->gpu_hour_micro;
    return BillWide{record.gpu_milli} * static_cast<uint64_t>(ms) * static_cast<uint64_t>(price) * multiplier;
  };
  // CPU: cpu_milli x ms / 1000 core-ms at cpu_core_hour / 3.6e6 ms, on the
  // same denominator as the GPU's (kBillMmsPerGpuHour = 1000 x 3.6e6).
  auto list_other = [&](int64_t ms) -> BillWide {
    const BillWide cpu = BillWide{record.cpu_milli} * static_cast<uint64_t>(ms) *
                         static_cast<uint64_t>(prices.cpu_core_hour_micro);
    // memory: MiB x s at memory_gib_hour / (1024 x 3600) MiB-s, i.e. MiB x ms
    // x price / (1024 x 3.6e6): x 1000 / 1024 onto the common denominator.
    const BillWide memory = BillWide{record.memory_mib} * static_cast<uint64_t>(ms) *
                            static_cast<uint64_t>(prices.memory_gib_hour_micro) * 1000 / 1024;
    return (cpu + memory) * multiplier;
  };
  const BillWide gpu = list_gpu(piece_ms);
  bill.list_micro = BillRoundDiv(gpu + list_other(piece_ms), den);
  const int64_t off_ms = std::min(piece_ms, OffPeakOverlapMs(prices.billing.off_peak, start, end));
  const uint64_t off_cut = 1000 - std::min<uint64_t>(1000, prices.billing.off_peak.permille);  // permille taken off
  // Each figure is priced from the time it covers (never list x a ratio of
  // times), so the 128-bit products stay far from overflow for a month-long piece.
  const BillWide off_gpu = off_ms > 0 ? list_gpu(off_ms) : 0;
  if (off_ms > 0 && off_cut > 0) {
    bill.off_peak_discount_micro = BillRoundDiv((off_gpu + list_other(off_ms)) * off_cut, den * 1000);
  }
  bill.gpu_mms = uint64_t{record.gpu_milli} * static_cast<uint64_t>(piece_ms);
  if (bill.gpu_mms > 0 && !prices.billing.volume.empty()) {
    const uint64_t weighted = VolumePermilleMms(prices.billing.volume, volume_before_mms, bill.gpu_mms);
    const uint64_t cut = bill.gpu_mms * 1000 - std::min(weighted, bill.gpu_mms * 1000);  // permille x mms taken off
    if (cut > 0) {
      // The GPU part after off-peak, then the share of its GPU-mms the tiers cut.
      const int64_t after_off = BillRoundDiv(gpu * 1000 - off_gpu * off_cut, den * 1000);
      bill.volume_discount_micro = BillRoundDiv(BillWide{static_cast<uint64_t>(after_off)} * cut,
                                                BillWide{bill.gpu_mms} * 1000);
    }
  }
  if (topup_ms > 0) bill.min_topup_micro = BillRoundDiv(list_gpu(topup_ms) + list_other(topup_ms), den);
  return bill;
}

}  // namespace gpool::state
