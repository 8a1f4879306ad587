// Usage reports (issue 34): a month of usage records of a 10,000-GPU cluster
// in the ledger the state machine keeps (control/state/usage_ledger.h), and
// the time `gpool usage --by user|queue` takes over the month from the
// hourly/daily rollups, against the baseline of scanning every raw record.
// Target: < 1 s for the month. Also: what adding a record costs at apply, the
// rollups' size, and the ledger's part of a snapshot: its bytes and pack time
// as it is, then after the retention the leader applies at the period's end
// (issue 49: --keep-records, --hourly-days and --daily-days mirror the
// coordinator's --usage-keep-records, --usage-hourly-days and
// --usage-daily-days defaults), with a check that the first 30 days (or the
// whole period, if shorter) report the same totals after the trim and a
// snapshot round trip as before.
//
// Prints JSON lines {"metric", "value", "unit", "params"}.
//   gpool-bench-usage [--gpus N] [--days D] [--gpus-per-task G] [--hours H]
//                     [--keep-records R] [--hourly-days H] [--daily-days D]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "control/state/usage_ledger.h"
#include "protocol/wire.h"

namespace {

using gpool::state::kDayMs;
using gpool::state::kHourMs;
using gpool::state::UsageLedger;
using gpool::state::UsageRecord;

struct Params {
  uint32_t gpus = 10'000;
  uint32_t days = 30;
  uint32_t gpus_per_task = 4;
  uint32_t mean_hours = 4;  // tasks last 1 .. 2 x mean - 1 hours
  uint32_t users = 500;
  uint32_t queues = 50;
  uint32_t keep_records = 500'000;
  uint32_t hourly_days = 35;
  uint32_t daily_days = 400;
};

std::string ParamsJson(const Params& p) {
  char text[256];
  std::snprintf(text, sizeof(text),
                "\"gpus\": %u, \"days\": %u, \"gpus_per_task\": %u, \"mean_task_hours\": %u, \"users\": %u, "
                "\"queues\": %u",
                p.gpus, p.days, p.gpus_per_task, p.mean_hours, p.users, p.queues);
  return text;
}

void Print(const char* metric, double value, const char* unit, const std::string& params) {
  std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"params\": {%s}}\n", metric, value, unit,
              params.c_str());
  std::fflush(stdout);
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The best of `runs` timings of f(), in ms (the report is read-only).
template <typename F>
double BestMs(int runs, F&& f) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, MsSince(start));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  Params p;
  for (int i = 1; i + 1 < argc; i += 2) {
    const uint32_t v = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    if (std::strcmp(argv[i], "--gpus") == 0) p.gpus = v;
    else if (std::strcmp(argv[i], "--days") == 0) p.days = v;
    else if (std::strcmp(argv[i], "--gpus-per-task") == 0) p.gpus_per_task = v;
    else if (std::strcmp(argv[i], "--hours") == 0) p.mean_hours = v;
    else if (std::strcmp(argv[i], "--keep-records") == 0) p.keep_records = v;
    else if (std::strcmp(argv[i], "--hourly-days") == 0) p.hourly_days = v;
    else if (std::strcmp(argv[i], "--daily-days") == 0) p.daily_days = v;
    else {
      std::fprintf(stderr,
                   "usage: gpool-bench-usage [--gpus N] [--days D] [--gpus-per-task G] [--hours H] "
                   "[--keep-records R] [--hourly-days H] [--daily-days D]\n");
      return 2;
    }
  }
  if (p.gpus_per_task == 0 || p.mean_hours == 0 || p.days == 0) return 2;
  const std::string params = ParamsJson(p);

  // Every slot of gpus_per_task GPUs runs tasks back to back for the month,
  // each of a random whole-minute length around the mean.
  std::mt19937_64 rng(42);
  const char* models[] = {"A100", "H100", "L40S"};
  const char* pools[] = {"public", "pooled"};
  const char* classes[] = {"low", "medium", "high"};
  std::vector<std::string> users, queues;
  for (uint32_t u = 0; u < p.users; ++u) users.push_back("user-" + std::to_string(u));
  for (uint32_t q = 0; q < p.queues; ++q) queues.push_back("team-" + std::to_string(q));
  const int64_t month_start = int64_t{1'790'812'800'000};  // 2026-10-01T00:00:00Z
  const int64_t month_end = month_start + p.days * kDayMs;
  UsageLedger ledger;
  uint64_t job = 0;
  const auto build_start = std::chrono::steady_clock::now();
  for (uint32_t slot = 0; slot < p.gpus / p.gpus_per_task; ++slot) {
    const char* model = models[slot % 3];
    const char* pool = pools[slot % 7 == 0 ? 1 : 0];
    for (int64_t t = month_start; t < month_end;) {
      const int64_t minutes = 60 + static_cast<int64_t>(rng() % (120 * (2 * p.mean_hours - 1) / 2 + 1));
      UsageRecord r;
      r.job = ++job;
      const uint32_t user = static_cast<uint32_t>(rng() % p.users);
      r.user = users[user];
      r.queue = queues[user % p.queues];
      r.pool = pool;
      r.model = model;
      r.node = "node-" + std::to_string(slot * p.gpus_per_task / 8);
      r.priority_class = classes[rng() % 3];
      r.gpus = p.gpus_per_task;
      r.gpu_milli = 1000 * p.gpus_per_task;
      r.cpu_milli = 8000 * p.gpus_per_task;
      r.memory_mib = 65'536 * p.gpus_per_task;
      r.start_ms = t;
      r.end_ms = std::min(month_end, t + minutes * 60'000);
      r.outcome = "succeeded";
      ledger.Add(std::move(r));
      t += minutes * 60'000;
    }
  }
  const double build_ms = MsSince(build_start);
  const size_t records = ledger.records().size();
  Print("usage_records", static_cast<double>(records), "records", params);
  Print("usage_add_per_record", build_ms * 1000.0 / static_cast<double>(records), "us", params);
  Print("usage_hourly_rollup_rows", static_cast<double>(ledger.hourly_rows()), "rows", params);
  Print("usage_daily_rollup_rows", static_cast<double>(ledger.daily_rows()), "rows", params);

  const auto all = [](const std::string&, const std::string&) { return true; };
  // A queue-admin over a tenth of the queues: the visibility check runs per (user, queue).
  const auto some = [](const std::string&, const std::string& queue) { return queue.back() == '7'; };
  std::vector<UsageRecord> running;
  size_t rows_user = 0, rows_queue = 0;
  uint64_t check_rollup = 0, check_scan = 0;
  Print("usage_report_month_by_user", BestMs(5, [&] {
          auto rows = ledger.Report(month_start, month_end, "user", all, running);
          rows_user = rows.size();
          check_rollup = 0;
          for (const auto& row : rows) check_rollup += row.gpu_mms;
        }), "ms", params);
  Print("usage_report_month_by_queue", BestMs(5, [&] {
          rows_queue = ledger.Report(month_start, month_end, "queue", all, running).size();
        }), "ms", params);
  Print("usage_report_month_by_user_queue_admin", BestMs(5, [&] {
          (void)ledger.Report(month_start, month_end, "user", some, running);
        }), "ms", params);
  // Mid-month to mid-month: hourly edges plus whole days.
  Print("usage_report_unaligned_range_by_user", BestMs(5, [&] {
          (void)ledger.Report(month_start + 3 * kDayMs + 5 * kHourMs, month_end - 2 * kDayMs - 7 * kHourMs, "user", all,
                              running);
        }), "ms", params);
  // The baseline: the same report from every raw record.
  Print("usage_report_month_by_user_naive_scan", BestMs(2, [&] {
          check_scan = 0;
          for (const auto& row : ledger.ReportFromRecords(month_start, month_end, "user", all, running)) {
            check_scan += row.gpu_mms;
          }
        }), "ms", params);
  Print("usage_report_rows_by_user", static_cast<double>(rows_user), "rows", params);
  Print("usage_report_rows_by_queue", static_cast<double>(rows_queue), "rows", params);
  Print("usage_month_gpu_hours", static_cast<double>(check_rollup) / 3.6e9, "GPU-hours", params);
  if (check_rollup != check_scan) {
    std::fprintf(stderr, "rollup total %llu != scan total %llu\n", static_cast<unsigned long long>(check_rollup),
                 static_cast<unsigned long long>(check_scan));
    return 1;
  }
  // The ledger's part of a snapshot, packed as the snapshot packs it.
  const auto pack = [&](const UsageLedger& l, const char* time_metric, const char* bytes_metric) {
    msgpack::sbuffer buffer;
    gpool::wire::Packer packer(buffer);
    const auto start = std::chrono::steady_clock::now();
    l.PackImage(packer);
    Print(time_metric, MsSince(start), "ms", params);
    Print(bytes_metric, static_cast<double>(buffer.size()), "bytes", params);
    return std::string(buffer.data(), buffer.size());
  };
  (void)pack(ledger, "usage_snapshot_pack", "usage_snapshot_bytes");

  // The first 30 days (whole days, so exact however they are trimmed), by
  // user, before the trim: the oracle for after it.
  const int64_t first_end = month_start + std::min<int64_t>(30, p.days) * kDayMs;
  const auto totals = [&](const UsageLedger& l) {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const auto& row : l.Report(month_start, first_end, "user", all, running)) out.emplace_back(row.user, row.gpu_mms);
    return out;
  };
  const auto before_trim = totals(ledger);
  ledger.Trim(gpool::state::UsageRetention{.keep_records = p.keep_records,
                                           .records_before_ms = month_end - 90 * kDayMs,
                                           .hourly_before_ms = month_end - int64_t{p.hourly_days} * kDayMs,
                                           .daily_before_ms = p.daily_days == 0 ? 0 : month_end - int64_t{p.daily_days} * kDayMs});
  Print("usage_retained_records", static_cast<double>(ledger.records().size()), "records", params);
  Print("usage_retained_hourly_rows", static_cast<double>(ledger.hourly_rows()), "rows", params);
  Print("usage_retained_daily_rows", static_cast<double>(ledger.daily_rows()), "rows", params);
  const std::string retained = pack(ledger, "usage_snapshot_pack_retained", "usage_snapshot_bytes_retained");
  UsageLedger restored;
  const auto unpack_start = std::chrono::steady_clock::now();
  gpool::wire::DecodeLimits limits;  // ClusterState::Restore's
  limits.max_frame_bytes = size_t{4} << 30;
  limits.max_container_elements = size_t{1} << 26;
  limits.max_string_bytes = size_t{1} << 30;
  auto image = gpool::wire::UnpackFromString<UsageLedger::Image>(retained, limits);
  const bool decoded = image.ok() && restored.FromImage(std::move(*image)).ok();
  Print("usage_snapshot_restore_retained", MsSince(unpack_start), "ms", params);
  if (!decoded || totals(restored) != before_trim) {
    std::fprintf(stderr, "the retained, restored ledger reports other totals for the first 30 days\n");
    return 1;
  }
  return 0;
}
