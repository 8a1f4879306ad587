#include "control/state/usage_ledger.h"
#include "protocol/messages_usage.h"

#include <algorithm>
#include <cctype>

namespace gpool::state {
namespace {

int64_t FloorTo(int64_t ms, int64_t unit) { return ms >= 0 ? ms - ms % unit : ms - ((ms % unit) + unit) % unit; }
int64_t CeilTo(int64_t ms, int64_t unit) { return FloorTo(ms + unit - 1, unit); }

// The dimensions of one rollup row or record.
struct Dims {
  const std::string* user;
  const std::string* queue;
  const std::string* pool;
  const std::string* model;
  const std::string* klass;
  uint64_t job = 0;
};

std::string GroupKey(std::string_view by, const Dims& d) {
  if (by == "user") return *d.user;
  if (by == "queue") return *d.queue;
  if (by == "model") return *d.model;
  if (by == "pool") return *d.pool;
  if (by == "class") return *d.klass;
  if (by == "job") {
    // Zero-padded so the map orders jobs by id.
    std::string id = std::to_string(d.job);
    return std::string(20 - std::min<size_t>(20, id.size()), '0') + id;
  }
  return *d.user + '\0' + *d.queue + '\0' + *d.pool + '\0' + *d.model + '\0' + *d.klass;
}

UsageRow RowOf(std::string_view by, const Dims& d) {
  UsageRow row;
  const bool detail = by == "detail";
  if (by == "user" || detail) row.user = *d.user;
  if (by == "queue" || detail) row.queue = *d.queue;
  if (by == "pool" || detail) row.pool = *d.pool;
  if (by == "model" || detail) row.model = *d.model;
  if (by == "class" || detail) row.priority_class = *d.klass;
  if (by == "job") {
    row.job = d.job;
    row.user = *d.user;
    row.queue = *d.queue;
  }
  return row;
}

using Grouped = std::map<std::string, std::pair<UsageRow, UsageSums>>;

void AddTo(Grouped& out, std::string_view by, const Dims& d, const UsageSums& sums) {
  auto [it, inserted] = out.try_emplace(GroupKey(by, d));
  if (inserted) it->second.first = RowOf(by, d);
  it->second.second.Add(sums);
}

std::vector<UsageRow> Rows(Grouped& grouped) {
  std::vector<UsageRow> rows;
  rows.reserve(grouped.size());
  for (auto& [key, entry] : grouped) {
    UsageRow row = std::move(entry.first);
    const UsageSums& s = entry.second;
    row.records = s.records;
    row.running = s.running;
    row.gpu_mms = s.gpu_mms;
    row.share_gpu_mms = s.share_gpu_mms;
    row.running_gpu_mms = s.running_gpu_mms;
    row.cpu_core_ms = s.cpu_core_ms;
    row.memory_mib_s = s.memory_mib_s;
    row.estimated = s.estimated;
    rows.push_back(std::move(row));
  }
  return rows;
}

// The hour a record is counted in (as one record): the hour of its last
// millisecond, or of its start when it lasted nothing.
int64_t CountedHour(const UsageRecord& r) { return FloorTo(std::max(r.start_ms, r.end_ms - 1), kHourMs); }

// Adds a record's pieces inside [from, to) to `out`; `running`: it has not
// ended (it is counted as running, not as a record).
void AddRecord(Grouped& out, std::string_view by, const UsageRecord& r, int64_t from, int64_t to, bool running) {
  const Dims d{&r.user, &r.queue, &r.pool, &r.model, &r.priority_class, r.job};
  UsageSums sums;
  ForEachBucket(std::max(r.start_ms, from), std::min(r.end_ms, to), kHourMs,
                [&](int64_t, int64_t overlap) { sums.Add(PieceOf(r, overlap)); });
  const int64_t hour = CountedHour(r);
  const bool counted = hour >= from && hour < to;
  if (running) {
    if (sums.gpu_mms == 0 && sums.cpu_core_ms == 0 && sums.memory_mib_s == 0 && r.start_ms >= to) return;
    sums.running = 1;
    sums.running_gpu_mms = sums.gpu_mms;
  } else {
    if (!counted && sums == UsageSums{}) return;
    sums.records = counted ? 1 : 0;
    sums.estimated = counted && r.estimated ? 1 : 0;
  }
  AddTo(out, by, d, sums);
}

}  // namespace

std::string UsageOutcome(TaskState state) {
  std::string name(ToString(state));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

void UsageSums::Add(const UsageSums& o) {
  records += o.records;
  running += o.running;
  gpu_mms += o.gpu_mms;
  share_gpu_mms += o.share_gpu_mms;
  running_gpu_mms += o.running_gpu_mms;
  cpu_core_ms += o.cpu_core_ms;
  memory_mib_s += o.memory_mib_s;
  estimated += o.estimated;
}

void ForEachBucket(int64_t start, int64_t end, int64_t bucket_ms, const std::function<void(int64_t, int64_t)>& f) {
  if (end <= start) return;
  for (int64_t bucket = FloorTo(start, bucket_ms); bucket < end; bucket += bucket_ms) {
    f(bucket, std::min(end, bucket + bucket_ms) - std::max(start, bucket));
  }
}

UsageSums PieceOf(const UsageRecord& record, int64_t overlap_ms) {
  UsageSums s;
  const auto ms = static_cast<uint64_t>(std::max<int64_t>(0, overlap_ms));
  s.gpu_mms = uint64_t{record.gpu_milli} * ms;
  s.share_gpu_mms = record.Share() ? s.gpu_mms : 0;
  // Truncated per hourly piece; the record's figure is the sum of its
  // pieces, so the rollups add up to the records exactly.
  s.cpu_core_ms = record.cpu_milli * ms / 1000;
  s.memory_mib_s = record.memory_mib * ms / 1000;
  return s;
}

uint32_t UsageLedger::Intern(const std::string& name) {
  auto [it, inserted] = name_ids_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) names_.push_back(name);
  return it->second;
}

void UsageLedger::Add(UsageRecord record) {
  record.seq = next_seq_++;
  record.end_ms = std::max(record.end_ms, record.start_ms);
  record.gpu_mms = record.cpu_core_ms = record.memory_mib_s = 0;
  ForEachBucket(record.start_ms, record.end_ms, kHourMs, [&](int64_t, int64_t overlap) {
    const UsageSums piece = PieceOf(record, overlap);
    record.gpu_mms += piece.gpu_mms;
    record.cpu_core_ms += piece.cpu_core_ms;
    record.memory_mib_s += piece.memory_mib_s;
  });
  Roll(record);
  records_.push_back(std::move(record));
}

void UsageLedger::Roll(const UsageRecord& r) {
  const uint32_t user = Intern(r.user), queue = Intern(r.queue), pool = Intern(r.pool), model = Intern(r.model),
                 klass = Intern(r.priority_class);
  auto add = [&](int64_t hour, const UsageSums& piece) {
    hourly_[Key{hour, user, queue, pool, model, klass}].Add(piece);
    daily_[Key{FloorTo(hour, kDayMs), user, queue, pool, model, klass}].Add(piece);
  };
  ForEachBucket(r.start_ms, r.end_ms, kHourMs, [&](int64_t hour, int64_t overlap) { add(hour, PieceOf(r, overlap)); });
  UsageSums count;
  count.records = 1;
  count.estimated = r.estimated ? 1 : 0;
  add(CountedHour(r), count);
}

void UsageLedger::Trim(const UsageRetention& retention) {
  while (!records_.empty() && ((retention.keep_records != 0 && records_.size() > retention.keep_records) ||
                               records_.front().end_ms < retention.records_before_ms)) {
    records_.pop_front();
  }
  // Whole days only, so what is left of a day is all of it; hours go with
  // their day at the latest, so no report reads a day from hours alone.
  const int64_t daily_before = retention.daily_before_ms > 0 ? FloorTo(retention.daily_before_ms, kDayMs) : 0;
  const int64_t hourly_before = std::max(retention.hourly_before_ms, daily_before);
  if (hourly_before > 0) {
    hourly_from_ms_ = std::max(hourly_from_ms_, FloorTo(hourly_before, kHourMs));
    hourly_.erase(hourly_.begin(), hourly_.lower_bound(Key{hourly_before, 0, 0, 0, 0, 0}));
  }
  if (daily_before > 0) {
    daily_from_ms_ = std::max(daily_from_ms_, daily_before);
    daily_.erase(daily_.begin(), daily_.lower_bound(Key{daily_from_ms_, 0, 0, 0, 0, 0}));
  }
}

void UsageLedger::Sum(const std::map<Key, UsageSums>& rollup, int64_t from, int64_t to, std::string_view by,
                      const UsageVisible& visible, Grouped& out) const {
  // Who may see a (user, queue) pair is asked once per pair, not per row.
  std::map<std::pair<uint32_t, uint32_t>, bool> seen;
  for (auto it = rollup.lower_bound(Key{from, 0, 0, 0, 0, 0}); it != rollup.end() && std::get<0>(it->first) < to;
       ++it) {
    const auto& [bucket, user, queue, pool, model, klass] = it->first;
    auto [cached, fresh] = seen.try_emplace({user, queue}, false);
    if (fresh) cached->second = visible(names_[user], names_[queue]);
    if (!cached->second) continue;
    AddTo(out, by, Dims{&names_[user], &names_[queue], &names_[pool], &names_[model], &names_[klass], 0}, it->second);
  }
}

std::vector<UsageRow> UsageLedger::Report(int64_t from_ms, int64_t to_ms, std::string_view by,
                                          const UsageVisible& visible, const std::vector<UsageRecord>& running) const {
  if (by == "job") return ReportFromRecords(from_ms, to_ms, by, visible, running);
  Grouped out;
  // Ends whose hours were trimmed count whole days.
  if (from_ms < hourly_from_ms_) from_ms = FloorTo(from_ms, kDayMs);
  if (to_ms < hourly_from_ms_) to_ms = CeilTo(to_ms, kDayMs);
  // Whole days from the daily rollup, the hours either side from the hourly.
  const int64_t day_from = CeilTo(from_ms, kDayMs), day_to = FloorTo(to_ms, kDayMs);
  if (day_from < day_to) {
    Sum(hourly_, from_ms, day_from, by, visible, out);
    Sum(daily_, day_from, day_to, by, visible, out);
    Sum(hourly_, day_to, to_ms, by, visible, out);
  } else {
    Sum(hourly_, from_ms, to_ms, by, visible, out);
  }
  for (const auto& r : running) {
    if (visible(r.user, r.queue)) AddRecord(out, by, r, from_ms, to_ms, true);
  }
  return Rows(out);
}

std::vector<UsageRow> UsageLedger::ReportFromRecords(int64_t from_ms, int64_t to_ms, std::string_view by,
                                                     const UsageVisible& visible,
                                                     const std::vector<UsageRecord>& running) const {
  Grouped out;
  for (const auto& r : records_) {
    if (r.end_ms < from_ms || r.start_ms >= to_ms) continue;
    if (visible(r.user, r.queue)) AddRecord(out, by, r, from_ms, to_ms, false);
  }
  for (const auto& r : running) {
    if (visible(r.user, r.queue)) AddRecord(out, by, r, from_ms, to_ms, true);
  }
  return Rows(out);
}

}  // namespace gpool::state
