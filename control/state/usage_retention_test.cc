// Bounded usage accounting (issue 49): the ledger after retention and a
// snapshot round trip still reports what the raw records of the whole
// history say (to the hour inside the hourly window, to the day past it),
// the column image survives chunking, refuses malformed columns, and images
// from before issue 49 still decode (their records rolled up when they carry
// no rollups).
#include <random>

#include <gtest/gtest.h>

#include "control/state/usage_ledger.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

const UsageVisible kEveryone = [](const std::string&, const std::string&) { return true; };

UsageRecord RetentionRecord(const std::string& user, int64_t start, int64_t end) {
  UsageRecord r;
  r.job = 7;
  r.user = user;
  r.queue = "q-" + user;
  r.queue_path = "root/q-" + user;
  r.pool = "public";
  r.node = "node-1";
  r.model = "H100";
  r.priority_class = "high";
  r.gpus = 2;
  r.gpu_milli = 2000;
  r.cpu_milli = 4000;
  r.memory_mib = 1024;
  r.start_ms = start;
  r.end_ms = end;
  r.outcome = "succeeded";
  return r;
}

// A ledger's image through its bytes, as a snapshot carries it.
Status RoundTrip(const UsageLedger& from, UsageLedger& to) {
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  from.PackImage(packer);
  wire::DecodeLimits limits;  // the default ones: the chunks keep every array under them
  limits.max_frame_bytes = size_t{1} << 30;
  auto image = wire::UnpackFromString<UsageLedger::Image>(std::string_view(buffer.data(), buffer.size()), limits);
  if (!image.ok()) return image.status();
  return to.FromImage(std::move(*image));
}

void ExpectSameRows(const std::vector<UsageRow>& got, const std::vector<UsageRow>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].user, want[i].user) << what;
    EXPECT_EQ(got[i].model, want[i].model) << what;
    EXPECT_EQ(got[i].pool, want[i].pool) << what;
    EXPECT_EQ(got[i].records, want[i].records) << what;
    EXPECT_EQ(got[i].gpu_mms, want[i].gpu_mms) << what;
    EXPECT_EQ(got[i].share_gpu_mms, want[i].share_gpu_mms) << what;
    EXPECT_EQ(got[i].cpu_core_ms, want[i].cpu_core_ms) << what;
    EXPECT_EQ(got[i].memory_mib_s, want[i].memory_mib_s) << what;
    EXPECT_EQ(got[i].estimated, want[i].estimated) << what;
  }
}

// The property: random attempts over 120 days; the leader's retention at the
// end (records capped, hours kept 35 days, days 100) and a snapshot round
// trip; then every report inside the hourly window equals, to the hour, the
// one from all the raw records, and every whole-day report past it (down to
// the daily window) equals it to the day.
TEST(UsageRetentionPropertyTest, TrimmedRollupsReportWhatTheRawHistorySays) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    auto below = [&](uint64_t n) { return static_cast<int64_t>(rng() % n); };
    const std::vector<std::string> users = {"alice", "bob", "carol", "dan"}, models = {"A100", "H100", ""},
                                   pools = {"public", "pooled"}, classes = {"low", "high"};
    const int64_t span = 120 * kDayMs;
    UsageLedger all;  // the oracle: never trimmed
    UsageLedger kept;
    for (int i = 0; i < 600; ++i) {
      const int64_t start = below(span);
      UsageRecord r = RetentionRecord(users[below(4)], start, std::min(span, start + below(2 * kDayMs)));
      r.model = models[below(3)];
      r.pool = pools[below(2)];
      r.priority_class = classes[below(2)];
      r.gpu_milli = static_cast<uint32_t>(below(8001));
      r.cpu_milli = static_cast<uint64_t>(below(64'000));
      r.memory_mib = static_cast<uint64_t>(below(1 << 20));
      r.share_compute_pct = below(2) == 0 ? 30 : 0;
      r.estimated = below(5) == 0;
      r.job = static_cast<uint64_t>(i + 1);
      all.Add(r);
      kept.Add(r);
    }
    const int64_t hourly_from = span - 35 * kDayMs, daily_from = span - 100 * kDayMs;
    kept.Trim(UsageRetention{.keep_records = 50, .records_before_ms = span - 10 * kDayMs,
                             .hourly_before_ms = hourly_from, .daily_before_ms = daily_from});
    ASSERT_LE(kept.records().size(), 50u);
    UsageLedger restored;
    ASSERT_TRUE(RoundTrip(kept, restored).ok()) << "seed " << seed;
    EXPECT_EQ(restored.records().size(), kept.records().size());
    EXPECT_EQ(restored.hourly_rows(), kept.hourly_rows());
    EXPECT_EQ(restored.daily_rows(), kept.daily_rows());
    EXPECT_EQ(restored.hourly_from_ms(), hourly_from);
    EXPECT_EQ(restored.daily_from_ms(), daily_from);
    for (const char* by : {"user", "queue", "model", "pool", "class", "detail"}) {
      for (int q = 0; q < 6; ++q) {
        // To the hour inside the hourly window.
        const int64_t from = hourly_from + below(35 * 24) * kHourMs;
        const int64_t to = std::min(span, from + (1 + below(10 * 24)) * kHourMs);
        ExpectSameRows(restored.Report(from, to, by, kEveryone, {}), all.ReportFromRecords(from, to, by, kEveryone, {}),
                       "hours, seed " + std::to_string(seed) + " by " + by);
        // To the day past it: a month of 30 days in the daily window.
        const int64_t day_from = daily_from + below(70) * kDayMs;
        const int64_t day_to = day_from + 30 * kDayMs;
        ExpectSameRows(restored.Report(day_from, day_to, by, kEveryone, {}),
                       all.ReportFromRecords(day_from, day_to, by, kEveryone, {}),
                       "days, seed " + std::to_string(seed) + " by " + by);
      }
    }
    // Before the daily window nothing is left to report.
    EXPECT_TRUE(restored.Report(0, daily_from, "user", kEveryone, {}).empty());
  }
}

TEST(UsageRetentionTest, DaysOutsideTheDailyWindowGoWithTheirHours) {
  UsageLedger ledger;
  for (int day = 0; day < 5; ++day) ledger.Add(RetentionRecord("alice", day * kDayMs, day * kDayMs + kHourMs));
  // A daily window that starts mid-day keeps that whole day.
  ledger.Trim(UsageRetention{.keep_records = 0, .records_before_ms = 0, .hourly_before_ms = kHourMs,
                             .daily_before_ms = 2 * kDayMs + 5 * kHourMs});
  EXPECT_EQ(ledger.daily_from_ms(), 2 * kDayMs);
  EXPECT_EQ(ledger.daily_rows(), 3u);
  // The hours of a dropped day went too, though the hourly window was shorter.
  EXPECT_EQ(ledger.hourly_rows(), 3u);
  EXPECT_EQ(ledger.hourly_from_ms(), 2 * kDayMs);
  const auto rows = ledger.Report(0, 5 * kDayMs, "user", kEveryone, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].records, 3u);
  EXPECT_EQ(rows[0].gpu_mms, 3u * 2000 * kHourMs);
}

TEST(UsageImageTest, LargeLedgersAreCutIntoWholeRowChunks) {
  UsageLedger ledger;
  // More hourly rows than one chunk holds, each in its own hour.
  for (int64_t h = 0; h < 20'000; ++h) ledger.Add(RetentionRecord(h % 2 == 0 ? "alice" : "bob", h * kHourMs, h * kHourMs + 60'000));
  const UsageLedger::Image image = ledger.ToImage();
  EXPECT_TRUE(image.hourly.empty());
  EXPECT_TRUE(image.records.empty());
  ASSERT_EQ(image.hourly_cols.size(), 2u);
  ASSERT_EQ(image.record_cols.size(), 2u);
  for (const auto& chunk : image.hourly_cols) EXPECT_LE(chunk.size(), size_t{1} << 20);
  // The packed bytes are the image's, byte for byte.
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  ledger.PackImage(packer);
  EXPECT_EQ(std::string(buffer.data(), buffer.size()), wire::PackToString(image));
  UsageLedger restored;
  ASSERT_TRUE(RoundTrip(ledger, restored).ok());
  ASSERT_EQ(restored.records().size(), 20'000u);
  const UsageRecord& a = ledger.records()[12'345];
  const UsageRecord& b = restored.records()[12'345];
  EXPECT_EQ(b.seq, a.seq);
  EXPECT_EQ(b.user, a.user);
  EXPECT_EQ(b.queue_path, a.queue_path);
  EXPECT_EQ(b.node, a.node);
  EXPECT_EQ(b.start_ms, a.start_ms);
  EXPECT_EQ(b.end_ms, a.end_ms);
  EXPECT_EQ(b.gpu_mms, a.gpu_mms);
  EXPECT_EQ(b.memory_mib_s, a.memory_mib_s);
  ExpectSameRows(restored.Report(0, 20'000 * kHourMs, "user", kEveryone, {}),
                 ledger.Report(0, 20'000 * kHourMs, "user", kEveryone, {}), "after the round trip");
}

TEST(UsageImageTest, MalformedColumnsAreRefusedAndChangeNothing) {
  UsageLedger ledger;
  ledger.Add(RetentionRecord("alice", 0, 2 * kHourMs));
  UsageLedger target;
  target.Add(RetentionRecord("zed", 0, kHourMs));
  auto refused = [&](UsageLedger::Image image, const char* what) {
    const Status s = target.FromImage(std::move(image));
    EXPECT_EQ(s.code(), StatusCode::kMalformed) << what;
    EXPECT_FALSE(s.message().empty());
    ASSERT_EQ(target.records().size(), 1u) << what;
    EXPECT_EQ(target.records().front().user, "zed") << what;
  };
  UsageLedger::Image torn = ledger.ToImage();
  torn.hourly_cols[0].pop_back();
  refused(torn, "a rollup chunk that is not whole rows");
  UsageLedger::Image unknown = ledger.ToImage();
  unknown.daily_cols[0][2] = 999;  // the first row's queue
  refused(unknown, "a rollup naming no name");
  UsageLedger::Image record_name = ledger.ToImage();
  record_name.record_cols[0][5] = 999;  // the record's user
  refused(record_name, "a record naming no string");
  UsageLedger::Image narrow = ledger.ToImage();
  narrow.record_cols[0][2] = uint64_t{1} << 40;  // the task index
  refused(narrow, "a record field out of range");
  UsageLedger::Image short_record = ledger.ToImage();
  short_record.record_cols[0].resize(10);
  refused(short_record, "a record chunk that is not whole rows");
}

// What an image held before issue 49: field-named maps only.
struct UsageImageBeforeIssue49 {
  std::vector<UsageRecord> records;
  uint64_t next_seq = 1;
  int64_t checkpoint_ms = 0;
  std::vector<std::string> names;
  std::vector<UsageLedger::RollupRow> hourly;
  std::vector<UsageLedger::RollupRow> daily;
  int64_t hourly_from_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Optional("records", records);
    v.Optional("next_seq", next_seq);
    v.Optional("checkpoint_ms", checkpoint_ms);
    v.Optional("names", names);
    v.Optional("hourly", hourly);
    v.Optional("daily", daily);
    v.Optional("hourly_from_ms", hourly_from_ms);
  }
};

TEST(UsageImageTest, AnImageFromBeforeIssue49StillDecodes) {
  // The same history applied by today's ledger: the expected answers.
  UsageLedger today;
  const UsageRecord r = RetentionRecord("alice", 0, 90 * 60'000);  // 1.5 hours
  today.Add(r);
  UsageImageBeforeIssue49 old;
  old.records.assign(today.records().begin(), today.records().end());
  old.next_seq = 2;
  old.checkpoint_ms = 55;
  old.names = {"alice", "q-alice", "public", "H100", "high"};
  UsageSums first = PieceOf(today.records().front(), kHourMs), second = PieceOf(today.records().front(), kHourMs / 2);
  second.records = 1;  // counted in the hour of its last millisecond
  old.hourly = {{0, {0, 1, 2, 3, 4}, first}, {kHourMs, {0, 1, 2, 3, 4}, second}};
  UsageSums day = first;
  day.Add(second);
  old.daily = {{0, {0, 1, 2, 3, 4}, day}};
  auto image = wire::UnpackFromString<UsageLedger::Image>(wire::PackToString(old));
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  UsageLedger restored;
  ASSERT_TRUE(restored.FromImage(std::move(*image)).ok());
  EXPECT_EQ(restored.checkpoint_ms(), 55);
  ASSERT_EQ(restored.records().size(), 1u);
  EXPECT_EQ(restored.records_ever(), 1u);
  for (const auto& [from, to] : {std::pair{int64_t{0}, kHourMs}, std::pair{kHourMs, 2 * kHourMs},
                                 std::pair{int64_t{0}, kDayMs}}) {
    ExpectSameRows(restored.Report(from, to, "detail", kEveryone, {}), today.Report(from, to, "detail", kEveryone, {}),
                   "old image");
  }
  // And it is written back in today's form.
  UsageLedger again;
  ASSERT_TRUE(RoundTrip(restored, again).ok());
  ExpectSameRows(again.Report(0, kDayMs, "detail", kEveryone, {}), today.Report(0, kDayMs, "detail", kEveryone, {}),
                 "rewritten");
}

TEST(UsageImageTest, RecordsWithoutRollupsAreRolledUpOnRestore) {
  UsageLedger today;
  today.Add(RetentionRecord("alice", 10 * 60'000, 3 * kHourMs));
  today.Add(RetentionRecord("bob", kHourMs, 30 * kHourMs));
  UsageImageBeforeIssue49 old;
  old.records.assign(today.records().begin(), today.records().end());
  old.next_seq = 3;
  auto image = wire::UnpackFromString<UsageLedger::Image>(wire::PackToString(old));
  ASSERT_TRUE(image.ok());
  UsageLedger restored;
  ASSERT_TRUE(restored.FromImage(std::move(*image)).ok());
  EXPECT_EQ(restored.hourly_rows(), today.hourly_rows());
  EXPECT_EQ(restored.daily_rows(), today.daily_rows());
  for (const char* by : {"user", "detail"}) {
    ExpectSameRows(restored.Report(0, 2 * kDayMs, by, kEveryone, {}), today.Report(0, 2 * kDayMs, by, kEveryone, {}),
                   by);
    ExpectSameRows(restored.Report(2 * kHourMs, 5 * kHourMs, by, kEveryone, {}),
                   restored.ReportFromRecords(2 * kHourMs, 5 * kHourMs, by, kEveryone, {}), by);
  }
}

}  // namespace
}  // namespace gpool::state
