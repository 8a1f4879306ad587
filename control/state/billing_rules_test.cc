// The billing arithmetic (issue 50, billing_rules.h): calendar months, the
// off-peak window, minimum periods, volume tiers and a piece's bill, each
// against figures worked by hand.
#include <gtest/gtest.h>

#include "control/state/billing_rules.h"

namespace gpool::state {
namespace {

constexpr int64_t kOct1 = 1'790'812'800'000;  // 2026-10-01T00:00Z
constexpr int64_t kNov1 = 1'793'491'200'000;
constexpr int64_t kJan1 = 1'798'761'600'000;  // 2027-01-01
constexpr int64_t kGpuHourMms = 3'600'000'000;

TEST(BillingRulesTest, CalendarMonthsInUtc) {
  EXPECT_EQ(MonthStartMs(kOct1), kOct1);
  EXPECT_EQ(MonthStartMs(1'792'065'600'000), kOct1);  // 2026-10-15T12:00Z
  EXPECT_EQ(MonthStartMs(kNov1 - 1), kOct1);
  EXPECT_EQ(NextMonthStartMs(kOct1), kNov1);
  EXPECT_EQ(NextMonthStartMs(1'798'758'000'000), kJan1);  // 2026-12-31T23:00Z: into the next year
  EXPECT_EQ(MonthStartMs(1'835'413'200'000), 1'832'976'000'000);      // 2028-02-29 (leap) -> 2028-02-01
  EXPECT_EQ(NextMonthStartMs(1'835'413'200'000), 1'835'481'600'000);  // -> 2028-03-01
  EXPECT_EQ(MonthStartMs(-1'468'800'000), -2'678'400'000);            // 1969-12-15 -> 1969-12-01
}

TEST(BillingRulesTest, OffPeakOverlapWrapsPastMidnight) {
  const OffPeakWindow night{22, 6, 600};
  const int64_t day = kOct1;
  // 20:00 to 08:00 next day: 22-24 and 0-6.
  EXPECT_EQ(OffPeakOverlapMs(night, day + 20 * kHourMs, day + 32 * kHourMs), 8 * kHourMs);
  // Inside the day's peak: none.
  EXPECT_EQ(OffPeakOverlapMs(night, day + 9 * kHourMs, day + 17 * kHourMs), 0);
  // Three whole days: 8 hours each.
  EXPECT_EQ(OffPeakOverlapMs(night, day, day + 3 * kDayMs), 24 * kHourMs);
  const OffPeakWindow lunch{12, 14, 500};
  EXPECT_EQ(OffPeakOverlapMs(lunch, day + 13 * kHourMs, day + 15 * kHourMs), kHourMs);
  EXPECT_EQ(OffPeakOverlapMs(OffPeakWindow{5, 5, 500}, day, day + kDayMs), 0) << "equal hours: no window";
  EXPECT_EQ(OffPeakOverlapMs(night, day + kHourMs, day + kHourMs), 0);
}

TEST(BillingRulesTest, MinPeriodOfTheQueueWinsOverTheClass) {
  BillingRules rules;
  rules.min_period_ms_by_class = {{"high", 600'000}, {"medium", 60'000}};
  rules.min_period_ms_by_queue = {{"web", 300'000}};
  EXPECT_EQ(MinPeriodMs(rules, "ml", "high"), 600'000);
  EXPECT_EQ(MinPeriodMs(rules, "web", "high"), 300'000);
  EXPECT_EQ(MinPeriodMs(rules, "ml", ""), 60'000) << "an unset class is medium";
  EXPECT_EQ(MinPeriodMs(rules, "ml", "low"), 0);
}

TEST(BillingRulesTest, VolumeTiersCutTheSpanAtEachThreshold) {
  const std::vector<VolumeTier> tiers = {{1, 900}, {2, 500}};
  // From 0.5 to 2.5 GPU-hours: 0.5 at 1000, 1 at 900, 0.5 at 500.
  EXPECT_EQ(VolumePermilleMms(tiers, kGpuHourMms / 2, 2 * kGpuHourMms), (500 + 900 + 250) * kGpuHourMms);
  // All below the first tier: full price.
  EXPECT_EQ(VolumePermilleMms(tiers, 0, kGpuHourMms / 2), 1000 * (kGpuHourMms / 2));
  // All beyond the last.
  EXPECT_EQ(VolumePermilleMms(tiers, 5 * kGpuHourMms, kGpuHourMms), 500 * kGpuHourMms);
  EXPECT_EQ(VolumePermilleMms({}, 0, kGpuHourMms), 1000 * kGpuHourMms);
}

UsageRecord OneGpu() {
  UsageRecord r;
  r.queue = "ml";
  r.priority_class = "medium";
  r.pool = "public";
  r.model = "A100";
  r.gpus = 1;
  r.gpu_milli = 1000;
  r.cpu_milli = 2000;
  r.memory_mib = 1024;
  return r;
}

PriceTable Prices() {
  PriceTable table;
  table.models = {ModelPrice{"A100", 2'000'000, 0}};  // 2.00 a GPU-hour
  table.cpu_core_hour_micro = 10'000;                  // 0.01 a core-hour
  table.memory_gib_hour_micro = 2'000;                 // 0.002 a GiB-hour
  return table;
}

TEST(BillingRulesTest, ListPriceOfAnHourMatchesTheInvoiceFormula) {
  const Bill bill = BillPiece(OneGpu(), kOct1 + 9 * kHourMs, kOct1 + 10 * kHourMs, 0, 0, Prices());
  EXPECT_EQ(bill.list_micro, 2'000'000 + 20'000 + 2'000);  // GPU + 2 cores + 1 GiB
  EXPECT_EQ(bill.off_peak_discount_micro, 0);
  EXPECT_EQ(bill.volume_discount_micro, 0);
  EXPECT_EQ(bill.min_topup_micro, 0);
  EXPECT_EQ(bill.charged_micro(), 2'022'000);
  EXPECT_EQ(bill.gpu_mms, static_cast<uint64_t>(kGpuHourMms));
  // Multipliers apply to all three, as on the invoice.
  PriceTable doubled = Prices();
  doubled.class_permille = {{"medium", 2000}};
  EXPECT_EQ(BillPiece(OneGpu(), kOct1, kOct1 + kHourMs, 0, 0, doubled).list_micro, 4'044'000);
}

TEST(BillingRulesTest, OffPeakThenVolumeThenTopUp) {
  PriceTable table = Prices();
  table.cpu_core_hour_micro = table.memory_gib_hour_micro = 0;
  table.billing.off_peak = OffPeakWindow{22, 6, 500};  // half price at night
  table.billing.volume = {VolumeTier{0, 800}};          // 20 % off every GPU-hour
  // 21:30 to 22:30: half an hour at night.
  const Bill bill = BillPiece(OneGpu(), kOct1 + 21 * kHourMs + kHourMs / 2, kOct1 + 22 * kHourMs + kHourMs / 2,
                              kHourMs / 2, 0, table);
  EXPECT_EQ(bill.list_micro, 2'000'000);
  EXPECT_EQ(bill.off_peak_discount_micro, 500'000);  // half of it, half off
  EXPECT_EQ(bill.volume_discount_micro, 300'000);    // 20 % of the 1,500,000 left
  EXPECT_EQ(bill.min_topup_micro, 1'000'000);        // 30 minutes at list price
  EXPECT_EQ(bill.charged_micro(), 2'000'000 - 500'000 - 300'000 + 1'000'000);
  // The volume tier starts after 1 GPU-hour of the month: a month already
  // past it gets the cut on the whole piece, one before it on none.
  table.billing.off_peak = {};
  table.billing.volume = {VolumeTier{1, 800}};
  EXPECT_EQ(BillPiece(OneGpu(), kOct1, kOct1 + kHourMs, 0, 0, table).volume_discount_micro, 0);
  EXPECT_EQ(BillPiece(OneGpu(), kOct1, kOct1 + kHourMs, 0, kGpuHourMms, table).volume_discount_micro, 400'000);
  EXPECT_EQ(BillPiece(OneGpu(), kOct1, kOct1 + kHourMs, 0, kGpuHourMms / 2, table).volume_discount_micro, 200'000);
}

TEST(BillingRulesTest, AnUnpricedModelCostsNothingForItsGpus) {
  UsageRecord r = OneGpu();
  r.model = "H100";
  PriceTable table = Prices();
  table.cpu_core_hour_micro = table.memory_gib_hour_micro = 0;
  EXPECT_EQ(BillPiece(r, kOct1, kOct1 + kHourMs, 0, 0, table).list_micro, 0);
  table.models.push_back(ModelPrice{"default", 1'000'000, 0});
  EXPECT_EQ(BillPiece(r, kOct1, kOct1 + kHourMs, 0, 0, table).list_micro, 1'000'000);
}

TEST(BillingRulesTest, AMonthLongPieceDoesNotOverflow) {
  PriceTable table = Prices();
  table.models[0].gpu_hour_micro = 1'000'000'000;  // 1000 an hour
  table.pool_permille = {{"public", 100'000}};      // x100
  table.billing.off_peak = OffPeakWindow{0, 12, 0};
  table.billing.volume = {VolumeTier{0, 0}};
  UsageRecord r = OneGpu();
  r.gpu_milli = 8000;
  const Bill bill = BillPiece(r, kOct1, kNov1, 0, 0, table);
  const int64_t hours = (kNov1 - kOct1) / kHourMs;  // 744
  EXPECT_EQ(bill.list_micro, (8 * 1'000'000'000LL + 20'000 + 2'000) * 100 * hours);
  EXPECT_EQ(bill.off_peak_discount_micro, bill.list_micro / 2);
  EXPECT_EQ(bill.charged_micro(), bill.list_micro - bill.off_peak_discount_micro - bill.volume_discount_micro);
  EXPECT_GT(bill.volume_discount_micro, 0);
}

}  // namespace
}  // namespace gpool::state
