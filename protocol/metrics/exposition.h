// Exposition: writes metrics in the Prometheus text format (0.0.4), the
// format every scraper reads (Prometheus, VictoriaMetrics, the OpenTelemetry
// collector) and `promtool check metrics` lints.
//
// Families are written whole, one after another: HELP, TYPE, then every
// sample, so a family's series are contiguous as the format requires. Names
// follow the ecosystem's rules: a `gpool_` prefix, base units in the name
// (`_seconds`, `_bytes`, `_ratio`), `_total` on counters only.
//
// Built for large scrapes (a 12,500-node cluster has ~10^5 GPU series): one
// growing string, numbers formatted with std::to_chars, no per-sample
// allocation beyond label escaping.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpool::metrics {

using Label = std::pair<std::string_view, std::string_view>;
using Labels = std::initializer_list<Label>;

enum class Type : uint8_t { kCounter, kGauge, kHistogram };

class Histogram;

class Exposition {
 public:
  // Starts a family. `name` carries no suffix (a counter's `_total` is part
  // of its name here, as Prometheus 2 reads it).
  void Family(std::string_view name, Type type, std::string_view help);
  // One sample of the current family; `suffix` for histogram parts.
  void Sample(Labels labels, double value, std::string_view suffix = {});
  void Sample(const std::vector<Label>& labels, double value, std::string_view suffix = {});
  // A histogram's buckets, _sum and _count under the current family.
  void Observe(Labels labels, const Histogram& histogram);
  // A whole one-sample family.
  void Single(std::string_view name, Type type, std::string_view help, double value);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }
  size_t families() const { return families_; }

 private:
  void Write(const Label* begin, const Label* end, double value, std::string_view suffix,
             const Label* extra = nullptr);
  std::string out_;
  std::string family_;
  size_t families_ = 0;
};

// Label values may hold anything; the format escapes \, " and newlines.
void AppendEscaped(std::string& out, std::string_view value);
// Prometheus' number format: integers without a fraction, +Inf/-Inf/NaN.
void AppendNumber(std::string& out, double value);

// A cumulative histogram with fixed upper bounds (an implicit +Inf bucket).
// Not thread-safe: owned by one loop thread like the component it measures.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket counts, not cumulative; the last is the +Inf bucket.
  const std::vector<uint64_t>& counts() const { return counts_; }
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Bounds for latencies from 100 us to ~100 s, x2.5 apart (Prometheus'
// client libraries' defaults cover 5 ms-10 s; a commit and a scheduling
// cycle are often well under 5 ms).
std::vector<double> LatencyBounds();
// Bounds for waits (submit to running): 0.1 s to ~a day.
std::vector<double> WaitBounds();
// Bounds for counts (decisions per cycle): 1, 2, 5, 10, ... 100000.
std::vector<double> CountBounds();

}  // namespace gpool::metrics
