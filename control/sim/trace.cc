#include "control/sim/trace.h"

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

namespace gpool::sim {
namespace {

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

// One CSV file: its header's columns by name, then rows checked field by field.
class CsvReader {
 public:
  CsvReader(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}

  Status ReadHeader(const std::vector<std::string>& required) {
    std::string_view line;
    if (!NextLine(line)) return Status::InvalidArgument(source_ + ": empty file (expected a header line)");
    const auto names = SplitCsv(line);
    for (size_t i = 0; i < names.size(); ++i) columns_[std::string(names[i])] = i;
    for (const auto& name : required) {
      if (!columns_.count(name)) return Status::InvalidArgument(source_ + ":1: missing column '" + name + "'");
    }
    return Status::Ok();
  }

  // False at the end of the file; blank lines are skipped.
  bool NextRow() {
    std::string_view line;
    while (NextLine(line)) {
      if (line.empty()) continue;
      row_ = SplitCsv(line);
      return true;
    }
    return false;
  }

  bool Has(const std::string& column) const { return columns_.count(column) > 0; }

  Result<std::string> Text(const std::string& column) const {
    auto it = columns_.find(column);
    if (it == columns_.end()) return std::string();
    if (it->second >= row_.size()) return Error(column, "missing (the row has " + std::to_string(row_.size()) + " fields)");
    return std::string(row_[it->second]);
  }

  template <typename T>
  Result<T> Number(const std::string& column) const {
    GPOOL_ASSIGN_OR_RETURN(std::string text, Text(column));
    if (text.empty()) return T{};
    T value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return Error(column, "'" + text.substr(0, 32) + "' is not a number");
    }
    return value;
  }

  Status Error(const std::string& column, const std::string& why) const {
    return Status::InvalidArgument(source_ + ":" + std::to_string(line_) + ": " + column + ": " + why);
  }

 private:
  bool NextLine(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const size_t end = text_.find('\n', pos_);
    line = text_.substr(pos_, end == std::string_view::npos ? std::string_view::npos : end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = end == std::string_view::npos ? text_.size() : end + 1;
    ++line_;
    return true;
  }

  std::string_view text_;
  std::string source_;
  size_t pos_ = 0;
  size_t line_ = 0;
  std::map<std::string, size_t> columns_;
  std::vector<std::string_view> row_;
};

// A placement policy cell: empty (or no column) is the default.
Result<PlacementPolicy> TracePolicyCell(const CsvReader& csv, const std::string& column) {
  GPOOL_ASSIGN_OR_RETURN(std::string text, csv.Text(column));
  if (text.empty()) return PlacementPolicy::kDefault;
  auto policy = PlacementPolicyFromString(text);
  if (!policy) return csv.Error(column, "'" + text.substr(0, 32) + "' is not " + Choices<PlacementPolicy>());
  return *policy;
}

Result<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open the trace file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status(StatusCode::kIoError, path + ": cannot read the trace file");
  return text.str();
}

}  // namespace

Result<std::vector<TraceNode>> ParseTraceNodes(std::string_view text, const std::string& source) {
  CsvReader csv(text, source);
  GPOOL_RETURN_IF_ERROR(csv.ReadHeader({"sn", "cpu_milli", "memory_mib", "gpu"}));
  std::vector<TraceNode> nodes;
  while (csv.NextRow()) {
    TraceNode node;
    GPOOL_ASSIGN_OR_RETURN(node.name, csv.Text("sn"));
    if (node.name.empty()) return csv.Error("sn", "empty");
    GPOOL_ASSIGN_OR_RETURN(node.cpu_milli, csv.Number<uint64_t>("cpu_milli"));
    GPOOL_ASSIGN_OR_RETURN(node.memory_mib, csv.Number<uint64_t>("memory_mib"));
    GPOOL_ASSIGN_OR_RETURN(node.gpus, csv.Number<uint32_t>("gpu"));
    GPOOL_ASSIGN_OR_RETURN(node.model, csv.Text("model"));
    if (node.gpus > 64) return csv.Error("gpu", std::to_string(node.gpus) + " GPUs is more than a node has");
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Result<std::vector<TracePod>> ParseTracePods(std::string_view text, const std::string& source) {
  CsvReader csv(text, source);
  GPOOL_RETURN_IF_ERROR(csv.ReadHeader({"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}));
  std::vector<TracePod> pods;
  while (csv.NextRow()) {
    TracePod pod;
    GPOOL_ASSIGN_OR_RETURN(pod.name, csv.Text("name"));
    if (pod.name.empty()) return csv.Error("name", "empty");
    GPOOL_ASSIGN_OR_RETURN(pod.cpu_milli, csv.Number<uint64_t>("cpu_milli"));
    GPOOL_ASSIGN_OR_RETURN(pod.memory_mib, csv.Number<uint64_t>("memory_mib"));
    GPOOL_ASSIGN_OR_RETURN(pod.num_gpu, csv.Number<uint32_t>("num_gpu"));
    GPOOL_ASSIGN_OR_RETURN(pod.gpu_milli, csv.Number<uint32_t>("gpu_milli"));
    if (pod.num_gpu > 8) return csv.Error("num_gpu", std::to_string(pod.num_gpu) + " is more than 8");
    if (pod.gpu_milli > 1000) return csv.Error("gpu_milli", std::to_string(pod.gpu_milli) + " is above 1000");
    if (pod.num_gpu > 0 && pod.gpu_milli == 0) return csv.Error("gpu_milli", "0 with num_gpu above 0");
    if (pod.num_gpu > 1 && pod.gpu_milli < 1000) {
      return csv.Error("gpu_milli", "a share (below 1000) needs num_gpu 1, not " + std::to_string(pod.num_gpu));
    }
    GPOOL_ASSIGN_OR_RETURN(std::string spec, csv.Text("gpu_spec"));
    size_t start = 0;
    while (!spec.empty() && start <= spec.size()) {
      const size_t bar = spec.find('|', start);
      const std::string model = spec.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
      if (!model.empty()) pod.gpu_spec.push_back(model);
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    GPOOL_ASSIGN_OR_RETURN(pod.qos, csv.Text("qos"));
    GPOOL_ASSIGN_OR_RETURN(pod.node_policy, TracePolicyCell(csv, "node_policy"));
    GPOOL_ASSIGN_OR_RETURN(pod.gpu_policy, TracePolicyCell(csv, "gpu_policy"));
    GPOOL_ASSIGN_OR_RETURN(pod.creation_time, csv.Number<int64_t>("creation_time"));
    GPOOL_ASSIGN_OR_RETURN(pod.deletion_time, csv.Number<int64_t>("deletion_time"));
    GPOOL_ASSIGN_OR_RETURN(pod.scheduled_time, csv.Number<int64_t>("scheduled_time"));
    pods.push_back(std::move(pod));
  }
  return pods;
}

Result<std::vector<TraceNode>> LoadTraceNodes(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(std::string text, ReadWhole(path));
  return ParseTraceNodes(text, path);
}

Result<std::vector<TracePod>> LoadTracePods(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(std::string text, ReadWhole(path));
  return ParseTracePods(text, path);
}

}  // namespace gpool::sim
