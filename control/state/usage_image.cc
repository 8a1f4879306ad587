// UsageLedger's snapshot image (issue 49). Records and rollup rows are packed
// as flat arrays of integers, a fixed number per row, with every string
// replaced by its index in a names table: a row of a map with field names
// cost about 120 bytes (a rollup row) and 330 (a record), the columns about
// 25 and 60 (bench/usage_report_bench.cc measures both). Times are deltas
// from the previous row's, zigzag-coded, since rows come in time order and
// MessagePack packs small integers in one byte. The columns are cut into
// chunks of at most kChunkRows rows, so no array has more elements than a
// decoder allows (wire::DecodeLimits) however large the ledger.
//
// Images from before issue 49 hold the field-named `records`, `hourly` and
// `daily` arrays; they still decode, and an image whose records have no
// rollups at all (none was ever trimmed) gets them rolled up on restore.
#include <algorithm>
#include <array>
#include <iterator>
#include <unordered_map>

#include "control/state/usage_ledger.h"

namespace gpool::state {
namespace usage_image_detail {

constexpr size_t kRecordCols = 26;
constexpr size_t kRollupCols = 12;
constexpr size_t kChunkRows = 16'384;

// Feeds a row encoder's values into chunks: sink.Begin(n) before each chunk
// of n values, sink.Value(v) for each value.
template <typename Sink>
class ChunkedColumns {
 public:
  ChunkedColumns(Sink& sink, size_t cols, size_t rows) : sink_(sink), cols_(cols), rows_(rows) {
    sink_.Chunks((rows + kChunkRows - 1) / kChunkRows);
  }
  void operator()(uint64_t v) {
    if (emitted_ % (kChunkRows * cols_) == 0) sink_.Begin(std::min(kChunkRows, rows_ - emitted_ / cols_) * cols_);
    sink_.Value(v);
    ++emitted_;
  }

 private:
  Sink& sink_;
  size_t cols_, rows_;
  size_t emitted_ = 0;
};

struct ImageColumnsSink {
  std::vector<std::vector<uint64_t>>& out;
  void Chunks(size_t n) { out.reserve(n); }
  void Begin(size_t n) { out.emplace_back().reserve(n); }
  void Value(uint64_t v) { out.back().push_back(v); }
};

struct PackerColumnsSink {
  wire::Packer& packer;
  void Chunks(size_t n) { packer.BeginArray(static_cast<uint32_t>(n)); }
  void Begin(size_t n) { packer.BeginArray(static_cast<uint32_t>(n)); }
  void Value(uint64_t v) { packer.Value(v); }
};

// Calls f(row) with a pointer to each row's `cols` values; refuses a chunk
// that is not whole rows.
template <typename F>
Status ForEachColumnRow(const std::vector<std::vector<uint64_t>>& chunks, size_t cols, const char* what, F&& f) {
  for (const auto& chunk : chunks) {
    if (chunk.size() % cols != 0) {
      return Status::Malformed(std::string(what) + " columns: a chunk of " + std::to_string(chunk.size()) +
                               " values is not whole rows of " + std::to_string(cols));
    }
    for (size_t i = 0; i < chunk.size(); i += cols) {
      if (Status s = f(&chunk[i]); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

uint64_t Zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t Unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// The distinct strings of the records, in the order they first appear, so
// the same records always give the same table (and the same bytes).
class RecordNames {
 public:
  explicit RecordNames(const std::deque<UsageRecord>& records) {
    for (const auto& r : records) {
      for (const std::string* s : Strings(r)) Id(*s);
    }
  }
  uint64_t Id(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, static_cast<uint32_t>(names_.size()));
    if (inserted) names_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }
  static std::array<const std::string*, 8> Strings(const UsageRecord& r) {
    return {&r.user, &r.queue, &r.queue_path, &r.pool, &r.node, &r.model, &r.priority_class, &r.outcome};
  }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
};

// Calls emit(value) kRecordCols times per record.
template <typename Emit>
void EncodeUsageRecords(const std::deque<UsageRecord>& records, RecordNames& names, Emit&& emit) {
  uint64_t seq = 0;
  int64_t start = 0;
  for (const auto& r : records) {
    emit(r.seq - seq);
    seq = r.seq;
    emit(r.job);
    emit(r.task);
    emit(r.attempt);
    emit(r.session ? 1 : 0);
    for (const std::string* s : RecordNames::Strings(r)) emit(names.Id(*s));
    emit(r.gpus);
    emit(r.gpu_milli);
    emit(r.share_memory_mib);
    emit(r.share_memory_permille);
    emit(r.share_compute_pct);
    emit(r.cpu_milli);
    emit(r.memory_mib);
    emit(Zigzag(r.start_ms - start));
    start = r.start_ms;
    emit(Zigzag(r.end_ms - r.start_ms));
    emit(r.estimated ? 1 : 0);
    emit(r.gpu_mms);
    emit(r.cpu_core_ms);
    emit(r.memory_mib_s);
  }
}

// Reads columns back; refuses a table index or a narrow field out of range.
Status DecodeUsageRecords(const std::vector<std::vector<uint64_t>>& cols, const std::vector<std::string>& names,
                          std::vector<UsageRecord>& out) {
  uint64_t seq = 0;
  int64_t start = 0;
  return ForEachColumnRow(cols, kRecordCols, "usage record", [&](const uint64_t* c) -> Status {
    bool narrow_ok = true;
    auto u32 = [&](uint64_t v) {
      narrow_ok = narrow_ok && v <= UINT32_MAX;
      return static_cast<uint32_t>(v);
    };
    UsageRecord r;
    seq += c[0];
    r.seq = seq;
    r.job = c[1];
    r.task = u32(c[2]);
    r.attempt = u32(c[3]);
    r.session = c[4] != 0;
    std::array<std::string*, 8> strings = {&r.user, &r.queue, &r.queue_path, &r.pool,
                                           &r.node, &r.model, &r.priority_class, &r.outcome};
    for (size_t i = 0; i < strings.size(); ++i) {
      if (c[5 + i] >= names.size()) {
        return Status::Malformed("usage record " + std::to_string(r.seq) + " names an unknown string");
      }
      *strings[i] = names[c[5 + i]];
    }
    r.gpus = u32(c[13]);
    r.gpu_milli = u32(c[14]);
    r.share_memory_mib = c[15];
    r.share_memory_permille = u32(c[16]);
    r.share_compute_pct = u32(c[17]);
    r.cpu_milli = c[18];
    r.memory_mib = c[19];
    start += Unzigzag(c[20]);
    r.start_ms = start;
    r.end_ms = start + Unzigzag(c[21]);
    r.estimated = c[22] != 0;
    r.gpu_mms = c[23];
    r.cpu_core_ms = c[24];
    r.memory_mib_s = c[25];
    if (!narrow_ok) return Status::Malformed("usage record " + std::to_string(r.seq) + " has a field out of range");
    out.push_back(std::move(r));
    return Status::Ok();
  });
}

}  // namespace usage_image_detail

using usage_image_detail::ChunkedColumns;
using usage_image_detail::ImageColumnsSink;
using usage_image_detail::kRecordCols;
using usage_image_detail::kRollupCols;
using usage_image_detail::PackerColumnsSink;
using usage_image_detail::RecordNames;

// Calls emit(value) kRollupCols times per row.
template <typename Emit>
static void EncodeUsageRollup(const std::map<std::tuple<int64_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>,
                                             UsageSums>& rollup,
                              Emit&& emit) {
  int64_t bucket = 0;
  for (const auto& [key, sums] : rollup) {
    const auto& [at, user, queue, pool, model, klass] = key;
    emit(usage_image_detail::Zigzag(at - bucket));
    bucket = at;
    for (uint32_t id : {user, queue, pool, model, klass}) emit(id);
    emit(sums.records);
    emit(sums.gpu_mms);
    emit(sums.share_gpu_mms);
    emit(sums.cpu_core_ms);
    emit(sums.memory_mib_s);
    emit(sums.estimated);
  }
}

UsageLedger::Image UsageLedger::ToImage() const {
  Image image;
  image.next_seq = next_seq_;
  image.checkpoint_ms = checkpoint_ms_;
  image.names = names_;
  RecordNames record_names(records_);
  ImageColumnsSink records{image.record_cols}, hourly{image.hourly_cols}, daily{image.daily_cols};
  usage_image_detail::EncodeUsageRecords(records_, record_names,
                                         ChunkedColumns(records, kRecordCols, records_.size()));
  image.record_names = record_names.names();
  EncodeUsageRollup(hourly_, ChunkedColumns(hourly, kRollupCols, hourly_.size()));
  EncodeUsageRollup(daily_, ChunkedColumns(daily, kRollupCols, daily_.size()));
  image.prices_set = prices_set_;
  image.prices = prices_;
  image.hourly_from_ms = hourly_from_ms_;
  image.daily_from_ms = daily_from_ms_;
  return image;
}

void UsageLedger::PackImage(wire::Packer& packer) const {
  wire::FieldCounter fields;
  Image().Fields(fields);
  packer.BeginMap(fields.count);
  // The field-named arrays of images before issue 49, empty.
  packer.Field("records", std::vector<UsageRecord>{});
  packer.Field("next_seq", next_seq_);
  packer.Field("checkpoint_ms", checkpoint_ms_);
  packer.Field("names", names_);
  packer.Field("hourly", std::vector<RollupRow>{});
  packer.Field("daily", std::vector<RollupRow>{});
  packer.Field("prices_set", prices_set_);
  packer.Field("prices", prices_);
  packer.Field("hourly_from_ms", hourly_from_ms_);
  RecordNames record_names(records_);
  packer.Field("record_names", record_names.names());
  PackerColumnsSink sink{packer};
  packer.Key("record_cols");
  usage_image_detail::EncodeUsageRecords(records_, record_names, ChunkedColumns(sink, kRecordCols, records_.size()));
  packer.Key("hourly_cols");
  EncodeUsageRollup(hourly_, ChunkedColumns(sink, kRollupCols, hourly_.size()));
  packer.Key("daily_cols");
  EncodeUsageRollup(daily_, ChunkedColumns(sink, kRollupCols, daily_.size()));
  packer.Field("daily_from_ms", daily_from_ms_);
}

Status UsageLedger::FromImage(Image image) {
  std::map<Key, UsageSums> hourly, daily;
  const size_t name_count = image.names.size();
  auto bad_row = [](int64_t at) {
    return Status::Malformed("usage rollup row at " + std::to_string(at) + " names an unknown key");
  };
  auto rows = [&](const std::vector<RollupRow>& legacy, const std::vector<std::vector<uint64_t>>& cols,
                  std::map<Key, UsageSums>& out) -> Status {
    for (const auto& row : legacy) {
      if (row.names.size() != 5 ||
          std::any_of(row.names.begin(), row.names.end(), [&](uint32_t id) { return id >= name_count; })) {
        return bad_row(row.bucket_ms);
      }
      out[Key{row.bucket_ms, row.names[0], row.names[1], row.names[2], row.names[3], row.names[4]}].Add(row.sums);
    }
    int64_t bucket = 0;
    return usage_image_detail::ForEachColumnRow(cols, kRollupCols, "usage rollup", [&](const uint64_t* c) {
      bucket += usage_image_detail::Unzigzag(c[0]);
      if (std::any_of(c + 1, c + 6, [&](uint64_t id) { return id >= name_count; })) return bad_row(bucket);
      UsageSums sums;
      sums.records = c[6];
      sums.gpu_mms = c[7];
      sums.share_gpu_mms = c[8];
      sums.cpu_core_ms = c[9];
      sums.memory_mib_s = c[10];
      sums.estimated = c[11];
      const Key key{bucket, static_cast<uint32_t>(c[1]), static_cast<uint32_t>(c[2]), static_cast<uint32_t>(c[3]),
                    static_cast<uint32_t>(c[4]), static_cast<uint32_t>(c[5])};
      // Rows come in key order: appended at the end without a search.
      if (out.empty() || std::prev(out.end())->first < key) {
        out.emplace_hint(out.end(), key, sums);
      } else {
        out[key].Add(sums);
      }
      return Status::Ok();
    });
  };
  if (Status s = rows(image.hourly, image.hourly_cols, hourly); !s.ok()) return s;
  if (Status s = rows(image.daily, image.daily_cols, daily); !s.ok()) return s;
  std::vector<UsageRecord> records = std::move(image.records);
  if (Status s = usage_image_detail::DecodeUsageRecords(image.record_cols, image.record_names, records); !s.ok()) {
    return s;
  }
  records_.assign(std::make_move_iterator(records.begin()), std::make_move_iterator(records.end()));
  next_seq_ = std::max<uint64_t>(image.next_seq, records_.empty() ? 1 : records_.back().seq + 1);
  checkpoint_ms_ = image.checkpoint_ms;
  names_ = std::move(image.names);
  name_ids_.clear();
  for (uint32_t i = 0; i < names_.size(); ++i) name_ids_.emplace(names_[i], i);
  hourly_ = std::move(hourly);
  daily_ = std::move(daily);
  prices_set_ = image.prices_set;
  prices_ = std::move(image.prices);
  hourly_from_ms_ = image.hourly_from_ms;
  daily_from_ms_ = image.daily_from_ms;
  // Records without any rollup, from a ledger that never trimmed one: an
  // image of records alone. Rolled up here, so reports read them as if they
  // had been applied with rollups.
  if (hourly_.empty() && daily_.empty() && hourly_from_ms_ == 0 && daily_from_ms_ == 0) {
    for (const auto& r : records_) Roll(r);
  }
  return Status::Ok();
}

}  // namespace gpool::state
