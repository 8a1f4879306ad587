// UsageLedger alone: hour pieces, the rollups against the records they sum
// (a property over random workloads), retention and the snapshot image.
#include "control/state/usage_ledger.h"

#include <random>

#include <gtest/gtest.h>

namespace gpool::state {
namespace {

const UsageVisible kAll = [](const std::string&, const std::string&) { return true; };

UsageRecord Record(const std::string& user, int64_t start, int64_t end, uint32_t gpu_milli = 1000) {
  UsageRecord r;
  r.job = 1;
  r.user = user;
  r.queue = "q-" + user;
  r.pool = "public";
  r.model = "A100";
  r.priority_class = "medium";
  r.gpus = 1;
  r.gpu_milli = gpu_milli;
  r.cpu_milli = 1500;
  r.memory_mib = 333;
  r.start_ms = start;
  r.end_ms = end;
  r.outcome = "succeeded";
  return r;
}

TEST(UsageLedgerTest, BucketsCutARangeAtTheirBoundaries) {
  std::vector<std::pair<int64_t, int64_t>> pieces;
  ForEachBucket(kHourMs - 10, 2 * kHourMs + 5, kHourMs, [&](int64_t b, int64_t o) { pieces.emplace_back(b, o); });
  EXPECT_EQ(pieces, (std::vector<std::pair<int64_t, int64_t>>{{0, 10}, {kHourMs, kHourMs}, {2 * kHourMs, 5}}));
  pieces.clear();
  ForEachBucket(5, 5, kHourMs, [&](int64_t b, int64_t o) { pieces.emplace_back(b, o); });
  EXPECT_TRUE(pieces.empty());
}

TEST(UsageLedgerTest, ARecordSpanningHoursIsSplitAndSumsExactly) {
  UsageLedger ledger;
  ledger.Add(Record("alice", kHourMs / 2, 3 * kHourMs + 7));
  const UsageRecord& r = ledger.records().front();
  EXPECT_EQ(r.seq, 1u);
  EXPECT_EQ(r.gpu_mms, 1000u * static_cast<uint64_t>(3 * kHourMs + 7 - kHourMs / 2));
  // One row per hour it touched; the report of each hour is its piece.
  EXPECT_EQ(ledger.hourly_rows(), 4u);
  const auto second = ledger.Report(kHourMs, 2 * kHourMs, "user", kAll, {});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].gpu_mms, 1000u * kHourMs);
  EXPECT_EQ(second[0].records, 0u);  // counted in the hour it ended
  const auto last = ledger.Report(3 * kHourMs, 4 * kHourMs, "user", kAll, {});
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].records, 1u);
}

TEST(UsageLedgerTest, ReportsOnlyWhatTheCallerMaySee) {
  UsageLedger ledger;
  ledger.Add(Record("alice", 0, 1000));
  ledger.Add(Record("bob", 0, 2000));
  const auto rows = ledger.Report(0, kHourMs, "user", [](const std::string& user, const std::string&) {
    return user == "bob";
  }, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].user, "bob");
  EXPECT_EQ(rows[0].gpu_mms, 2'000'000u);
}

TEST(UsageLedgerTest, RetentionDropsOldRecordsAndHoursButKeepsDays) {
  UsageLedger ledger;
  for (int i = 0; i < 10; ++i) ledger.Add(Record("alice", i * kHourMs, i * kHourMs + 1000));
  ledger.Trim(UsageRetention{.keep_records = 4, .records_before_ms = 0, .hourly_before_ms = 5 * kHourMs});
  ASSERT_EQ(ledger.records().size(), 4u);
  EXPECT_EQ(ledger.records().front().start_ms, 6 * kHourMs);
  EXPECT_EQ(ledger.hourly_rows(), 5u);
  // A whole day still reads from the daily rollup: nothing lost.
  const auto day = ledger.Report(0, kDayMs, "user", kAll, {});
  ASSERT_EQ(day.size(), 1u);
  EXPECT_EQ(day[0].records, 10u);
  EXPECT_EQ(day[0].gpu_mms, 10u * 1000 * 1000);
  // A report from a trimmed hour counts from the start of its day.
  EXPECT_EQ(ledger.Report(2 * kHourMs, kDayMs, "user", kAll, {})[0].records, 10u);
  ledger.Trim(UsageRetention{.keep_records = 0, .records_before_ms = 8 * kHourMs, .hourly_before_ms = 0});
  EXPECT_EQ(ledger.records().size(), 2u);
}

TEST(UsageLedgerTest, TheImageRoundTripsAndAMalformedOneIsRefused) {
  UsageLedger ledger;
  ledger.Add(Record("alice", 0, 5 * kHourMs));
  ledger.set_checkpoint_ms(77);
  UsageLedger copy;
  ASSERT_TRUE(copy.FromImage(ledger.ToImage()).ok());
  EXPECT_EQ(copy.records().size(), 1u);
  EXPECT_EQ(copy.checkpoint_ms(), 77);
  EXPECT_EQ(copy.Report(0, kDayMs, "detail", kAll, {})[0].gpu_mms, ledger.Report(0, kDayMs, "detail", kAll, {})[0].gpu_mms);
  // The snapshot packs it in place, byte for byte as the image.
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  ledger.PackImage(packer);
  EXPECT_EQ(std::string(buffer.data(), buffer.size()), wire::PackToString(ledger.ToImage()));
  UsageLedger::Image bad = ledger.ToImage();
  bad.hourly_cols[0][3] = 999;  // the first row's pool
  UsageLedger untouched = copy;
  EXPECT_EQ(untouched.FromImage(bad).code(), StatusCode::kMalformed);
  EXPECT_EQ(untouched.records().size(), 1u);  // a refused image changes nothing
}

// The property: over random workloads and random hour-aligned ranges, every
// report from the rollups equals the same report from the raw records, for
// every dimension, and a month's total is the sum of the records' figures.
TEST(UsageLedgerPropertyTest, RollupsEqualTheSumOfTheRecords) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    auto below = [&](uint64_t n) { return static_cast<int64_t>(rng() % n); };
    UsageLedger ledger;
    const std::vector<std::string> users = {"alice", "bob", "carol"}, models = {"A100", "H100", ""},
                                   pools = {"public", "pooled"}, classes = {"low", "medium", "high"};
    uint64_t total_gpu = 0, total_cpu = 0, total_mem = 0;
    const int64_t span = 40 * kDayMs;
    for (int i = 0; i < 300; ++i) {
      const int64_t start = below(span);
      UsageRecord r = Record(users[below(3)], start, start + below(3 * kDayMs), static_cast<uint32_t>(below(8001)));
      r.model = models[below(3)];
      r.pool = pools[below(2)];
      r.priority_class = classes[below(3)];
      r.cpu_milli = static_cast<uint64_t>(below(64'000));
      r.memory_mib = static_cast<uint64_t>(below(1 << 20));
      r.share_compute_pct = below(2) == 0 ? 30 : 0;
      r.estimated = below(5) == 0;
      r.job = static_cast<uint64_t>(i + 1);
      ledger.Add(r);
      total_gpu += ledger.records().back().gpu_mms;
      total_cpu += ledger.records().back().cpu_core_ms;
      total_mem += ledger.records().back().memory_mib_s;
    }
    for (const char* by : {"user", "queue", "model", "pool", "class", "detail"}) {
      for (int q = 0; q < 5; ++q) {
        const int64_t from = below(45 * 24) * kHourMs;
        const int64_t to = from + (1 + below(20 * 24)) * kHourMs;
        const auto rolled = ledger.Report(from, to, by, kAll, {});
        const auto raw = ledger.ReportFromRecords(from, to, by, kAll, {});
        ASSERT_EQ(rolled.size(), raw.size()) << "seed " << seed << " by " << by;
        for (size_t i = 0; i < raw.size(); ++i) {
          EXPECT_EQ(rolled[i].user, raw[i].user);
          EXPECT_EQ(rolled[i].model, raw[i].model);
          EXPECT_EQ(rolled[i].gpu_mms, raw[i].gpu_mms) << "seed " << seed << " by " << by;
          EXPECT_EQ(rolled[i].share_gpu_mms, raw[i].share_gpu_mms);
          EXPECT_EQ(rolled[i].cpu_core_ms, raw[i].cpu_core_ms);
          EXPECT_EQ(rolled[i].memory_mib_s, raw[i].memory_mib_s);
          EXPECT_EQ(rolled[i].records, raw[i].records);
          EXPECT_EQ(rolled[i].estimated, raw[i].estimated);
        }
      }
    }
    UsageSums all;
    for (const auto& row : ledger.Report(0, 50 * kDayMs, "pool", kAll, {})) {
      all.gpu_mms += row.gpu_mms;
      all.cpu_core_ms += row.cpu_core_ms;
      all.memory_mib_s += row.memory_mib_s;
      all.records += row.records;
    }
    EXPECT_EQ(all.gpu_mms, total_gpu);
    EXPECT_EQ(all.cpu_core_ms, total_cpu);
    EXPECT_EQ(all.memory_mib_s, total_mem);
    EXPECT_EQ(all.records, 300u);
  }
}

}  // namespace
}  // namespace gpool::state
