// UsageLedger: the usage records of ended task attempts and their hourly and
// daily rollups (issue 34), part of the replicated state.
//
// ClusterState adds one UsageRecord when a task attempt (or an rGPU session)
// stops holding its node's resources: exactly once per attempt, because an
// attempt leaves the holding states once and a redelivered event for it finds
// it no longer holding and changes nothing. Each record is also added, cut at
// hour boundaries, to the hourly rollup keyed by (hour, user, queue, pool,
// model, class) and to the daily one, so a report over a month reads about
// 30 x (distinct keys) rows, not every record. A record's figures are
// defined as the sum of its hourly pieces, so a rollup is exactly the sum of
// the records it holds (usage_ledger_test.cc checks this over random
// workloads).
//
// Retention is the leader's, carried in UsageCheckpointCmd (commands.h):
// raw records beyond a count or before a time, hourly rollups before a time
// and daily rollups before an older one are dropped on apply, so the state
// stays bounded (issue 49; the sizing table is in docs/operations.md).
//
// The snapshot image packs records and rollups as flat integer columns with
// interned names (usage_image.cc), about a tenth of the field-named maps the
// images before issue 49 held, which still decode.
//
// Thread-safety: none; ClusterState's owner thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "protocol/messages_usage.h"
#include "protocol/model/prices.h"
#include "protocol/wire.h"

namespace gpool::state {

inline constexpr int64_t kHourMs = 3'600'000;
inline constexpr int64_t kDayMs = 24 * kHourMs;

// One ended task attempt (or session).
struct UsageRecord {
  uint64_t seq = 0;  // from 1, in apply order
  uint64_t job = 0;
  uint32_t task = 0;
  uint32_t attempt = 0;
  bool session = false;
  std::string user;
  std::string queue;
  std::string queue_path;  // root/.../queue when it ended
  std::string pool;
  std::string node;
  std::string model;       // of its first GPU; "" without GPUs
  std::string priority_class;
  uint32_t gpus = 0;             // GPUs (or shares) held
  uint32_t gpu_milli = 0;        // what one hour of it counts, in milli-GPUs (usage_weight.h)
  uint64_t share_memory_mib = 0; // per share; 0 for whole GPUs
  uint32_t share_memory_permille = 0;  // of the device's memory
  uint32_t share_compute_pct = 0;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::string outcome;     // succeeded, failed, cancelled, lost, preempted
  bool estimated = false;  // its end was unknown: charged up to the last checkpoint
  // The figures (protocol/messages_usage.h units), sums of hourly pieces.
  uint64_t gpu_mms = 0;
  uint64_t cpu_core_ms = 0;
  uint64_t memory_mib_s = 0;
  bool Share() const { return share_memory_mib > 0 || share_compute_pct > 0; }
  template <typename V>
  void Fields(V& v) {
    v.Required("seq", seq);
    v.Required("job", job);
    v.Optional("task", task);
    v.Optional("attempt", attempt);
    v.Optional("session", session);
    v.Optional("user", user);
    v.Optional("queue", queue);
    v.Optional("queue_path", queue_path);
    v.Optional("pool", pool);
    v.Optional("node", node);
    v.Optional("model", model);
    v.Optional("class", priority_class);
    v.Optional("gpus", gpus);
    v.Optional("gpu_milli", gpu_milli);
    v.Optional("share_mem_mib", share_memory_mib);
    v.Optional("share_mem_permille", share_memory_permille);
    v.Optional("share_compute_pct", share_compute_pct);
    v.Optional("cpu_milli", cpu_milli);
    v.Optional("memory_mib", memory_mib);
    v.Optional("start_ms", start_ms);
    v.Optional("end_ms", end_ms);
    v.Optional("outcome", outcome);
    v.Optional("estimated", estimated);
    v.Optional("gpu_mms", gpu_mms);
    v.Optional("cpu_core_ms", cpu_core_ms);
    v.Optional("memory_mib_s", memory_mib_s);
  }
};

// A record's outcome for a task that ended in `state`: "succeeded",
// "failed", "cancelled", "lost" (and "preempted" for an evicted attempt).
std::string UsageOutcome(TaskState state);

// What one hour (or day) of one key adds up to.
struct UsageSums {
  uint64_t records = 0;  // records that ended in this bucket
  uint64_t running = 0;  // (reports only) running tasks counted
  uint64_t gpu_mms = 0;
  uint64_t share_gpu_mms = 0;
  uint64_t running_gpu_mms = 0;
  uint64_t cpu_core_ms = 0;
  uint64_t memory_mib_s = 0;
  uint64_t estimated = 0;
  void Add(const UsageSums& o);
  bool operator==(const UsageSums&) const = default;
};

// Calls f(bucket_start_ms, overlap_ms) for each `bucket_ms`-long bucket that
// [start, end) overlaps.
void ForEachBucket(int64_t start, int64_t end, int64_t bucket_ms, const std::function<void(int64_t, int64_t)>& f);
// One piece of a record: `overlap_ms` of it.
UsageSums PieceOf(const UsageRecord& record, int64_t overlap_ms);

struct UsageRetention {
  uint64_t keep_records = 0;
  int64_t records_before_ms = 0;
  int64_t hourly_before_ms = 0;
  int64_t daily_before_ms = 0;  // 0: daily rollups are kept forever
};

// Who a report is for: whether the caller may see (user, queue)'s usage,
// and whether (user, queue) is inside the report's queue filter.
using UsageVisible = std::function<bool(const std::string& user, const std::string& queue)>;

class UsageLedger {
 public:
  // Stamps the record's seq and figures from its times and shape, and adds it.
  void Add(UsageRecord record);
  void Trim(const UsageRetention& retention);

  const std::deque<UsageRecord>& records() const { return records_; }
  uint64_t records_ever() const { return next_seq_ - 1; }
  // Running tasks' usage is checkpointed up to this time (UsageCheckpointCmd).
  int64_t checkpoint_ms() const { return checkpoint_ms_; }
  void set_checkpoint_ms(int64_t ms) { checkpoint_ms_ = std::max(checkpoint_ms_, ms); }
  const PriceTable* prices() const { return prices_set_ ? &prices_ : nullptr; }
  void set_prices(PriceTable table) {
    prices_ = std::move(table);
    prices_set_ = true;
  }

  // Sums [from, to) (hour-aligned) by `by` (kUsageDimensions) over the
  // rollups, or the raw records for "job", plus `running` (records of tasks
  // still running, ended at the report time), for what `visible` allows.
  std::vector<UsageRow> Report(int64_t from_ms, int64_t to_ms, std::string_view by, const UsageVisible& visible,
                               const std::vector<UsageRecord>& running) const;
  // The same answer from the raw records alone (the bench's baseline, and
  // the tests' oracle).
  std::vector<UsageRow> ReportFromRecords(int64_t from_ms, int64_t to_ms, std::string_view by,
                                          const UsageVisible& visible, const std::vector<UsageRecord>& running) const;
  size_t hourly_rows() const { return hourly_.size(); }
  size_t daily_rows() const { return daily_.size(); }
  // Rollups before these were trimmed (hourly: reports there read whole
  // days; daily: nothing is left there).
  int64_t hourly_from_ms() const { return hourly_from_ms_; }
  int64_t daily_from_ms() const { return daily_from_ms_; }
  // The oldest rollup bucket held; INT64_MAX when there is none.
  int64_t oldest_hourly_ms() const { return hourly_.empty() ? INT64_MAX : std::get<0>(hourly_.begin()->first); }
  int64_t oldest_daily_ms() const { return daily_.empty() ? INT64_MAX : std::get<0>(daily_.begin()->first); }

  // What the snapshot holds of it (cluster_state.cc's SnapshotImage).
  struct RollupRow {
    int64_t bucket_ms = 0;
    std::vector<uint32_t> names;  // user, queue, pool, model, class (indexes into Image::names)
    UsageSums sums;
    template <typename V>
    void Fields(V& v) {
      v.Required("t", bucket_ms);
      v.Required("k", names);
      v.Optional("records", sums.records);
      v.Optional("gpu_mms", sums.gpu_mms);
      v.Optional("share_gpu_mms", sums.share_gpu_mms);
      v.Optional("cpu_core_ms", sums.cpu_core_ms);
      v.Optional("memory_mib_s", sums.memory_mib_s);
      v.Optional("estimated", sums.estimated);
    }
  };
  struct Image {
    std::vector<UsageRecord> records;
    uint64_t next_seq = 1;
    int64_t checkpoint_ms = 0;
    std::vector<std::string> names;
    std::vector<RollupRow> hourly;
    std::vector<RollupRow> daily;
    bool prices_set = false;
    PriceTable prices;
    int64_t hourly_from_ms = 0;
    // Since issue 49 (usage_image.cc): the same content as `records`,
    // `hourly` and `daily`, which are then empty, as integer columns, in
    // chunks of whole rows (no array over a decoder's element limit).
    std::vector<std::string> record_names;
    std::vector<std::vector<uint64_t>> record_cols;
    std::vector<std::vector<uint64_t>> hourly_cols;
    std::vector<std::vector<uint64_t>> daily_cols;
    int64_t daily_from_ms = 0;
    template <typename V>
    void Fields(V& v) {
      v.Optional("records", records);
      v.Optional("next_seq", next_seq);
      v.Optional("checkpoint_ms", checkpoint_ms);
      v.Optional("names", names);
      v.Optional("hourly", hourly);
      v.Optional("daily", daily);
      v.Optional("prices_set", prices_set);
      v.Optional("prices", prices);
      v.Optional("hourly_from_ms", hourly_from_ms);
      v.Optional("record_names", record_names);
      v.Optional("record_cols", record_cols);
      v.Optional("hourly_cols", hourly_cols);
      v.Optional("daily_cols", daily_cols);
      v.Optional("daily_from_ms", daily_from_ms);
    }
  };
  Image ToImage() const;
  // Packs exactly what packing ToImage() would, without a second copy of
  // the records (the snapshot is written while the state is live).
  void PackImage(wire::Packer& packer) const;
  // Replaces everything with `image` (either encoding); a malformed one (a
  // name index out of range, a column count that does not divide) is
  // refused whole and changes nothing.
  Status FromImage(Image image);

 private:
  // Rollup key: bucket start, then interned user, queue, pool, model, class.
  using Key = std::tuple<int64_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>;
  uint32_t Intern(const std::string& name);
  void Roll(const UsageRecord& record);
  void Sum(const std::map<Key, UsageSums>& rollup, int64_t from, int64_t to, std::string_view by,
           const UsageVisible& visible, std::map<std::string, std::pair<UsageRow, UsageSums>>& out) const;

  std::deque<UsageRecord> records_;
  uint64_t next_seq_ = 1;
  int64_t checkpoint_ms_ = 0;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::map<Key, UsageSums> hourly_;
  std::map<Key, UsageSums> daily_;
  PriceTable prices_;
  bool prices_set_ = false;
  // Hourly rollups before this were trimmed: a report's end before it is
  // widened to the whole day, which the daily rollup holds.
  int64_t hourly_from_ms_ = 0;
  int64_t daily_from_ms_ = 0;
};

}  // namespace gpool::state
