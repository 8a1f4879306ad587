#include "client/price_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <vector>

#include "client/yaml_fields.h"
#include "protocol/model/prices.h"
#include "protocol/validate_usage.h"

namespace gpool::cli {
namespace {

const std::vector<std::string> kPriceKeys = {"currency",         "gpu_hour",      "share_gpu_hour", "pool_multiplier",
                                             "class_multiplier", "cpu_core_hour", "memory_gib_hour",
                                             // Issue 50: billing rules.
                                             "min_period_minutes", "off_peak", "volume_discount"};

std::string NearestPriceKey(std::string_view key, const std::vector<std::string>& allowed) {
  return yaml_fields::NearestOf(key, allowed, 4);
}

Result<int64_t> ScalarDecimal(const YAML::Node& node, const std::string& path, int digits) {
  if (!node.IsScalar()) return yaml_fields::FieldError(path, "expected a number, got " + yaml_fields::Quote(node));
  return ParseScaledDecimal(path, node.Scalar(), digits);
}

// A map of name -> decimal (prices at 6 places, multipliers at 3).
Result<std::map<std::string, int64_t>> DecimalMap(const YAML::Node& node, const std::string& path, int digits) {
  if (!node.IsMap()) return yaml_fields::FieldError(path, "expected a map of name: number, got " + yaml_fields::Quote(node));
  std::map<std::string, int64_t> out;
  for (const auto& entry : node) {
    const std::string name = entry.first.Scalar();
    GPOOL_ASSIGN_OR_RETURN(out[name], ScalarDecimal(entry.second, yaml_fields::Join(path, name), digits));
  }
  return out;
}

Result<uint64_t> ScalarCount(const YAML::Node& node, const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(const int64_t value, ScalarDecimal(node, path, 0));
  return static_cast<uint64_t>(value);
}

// Issue 50: min_period_minutes {class: {high: 10}, queue: {web: 5}},
// off_peak {from_hour, to_hour, multiplier}, volume_discount [{gpu_hours,
// multiplier}, ...].
Status ReadBillingRules(const YAML::Node& root, BillingRules& rules) {
  if (const YAML::Node min = root["min_period_minutes"]) {
    GPOOL_RETURN_IF_ERROR(yaml_fields::CheckKeys(min, "min_period_minutes", {"class", "queue"}, "min_period_minutes",
                                                 NearestPriceKey));
    for (const auto& [key, out] : {std::pair{"class", &rules.min_period_ms_by_class},
                                   std::pair{"queue", &rules.min_period_ms_by_queue}}) {
      if (!min[key]) continue;
      GPOOL_ASSIGN_OR_RETURN(const auto minutes, DecimalMap(min[key], std::string("min_period_minutes.") + key, 0));
      for (const auto& [name, value] : minutes) (*out)[name] = value * 60'000;
    }
  }
  if (const YAML::Node off = root["off_peak"]) {
    GPOOL_RETURN_IF_ERROR(
        yaml_fields::CheckKeys(off, "off_peak", {"from_hour", "to_hour", "multiplier"}, "off_peak", NearestPriceKey));
    for (const char* key : {"from_hour", "to_hour", "multiplier"}) {
      if (!off[key]) return yaml_fields::FieldError(std::string("off_peak.") + key, "is required");
    }
    GPOOL_ASSIGN_OR_RETURN(const uint64_t from, ScalarCount(off["from_hour"], "off_peak.from_hour"));
    GPOOL_ASSIGN_OR_RETURN(const uint64_t to, ScalarCount(off["to_hour"], "off_peak.to_hour"));
    GPOOL_ASSIGN_OR_RETURN(const int64_t permille, ScalarDecimal(off["multiplier"], "off_peak.multiplier", 3));
    rules.off_peak = OffPeakWindow{static_cast<uint32_t>(std::min<uint64_t>(from, 99)),
                                   static_cast<uint32_t>(std::min<uint64_t>(to, 99)), static_cast<uint64_t>(permille)};
  }
  if (const YAML::Node volume = root["volume_discount"]) {
    if (!volume.IsSequence()) {
      return yaml_fields::FieldError("volume_discount", "expected a list of {gpu_hours, multiplier}");
    }
    for (size_t i = 0; i < volume.size(); ++i) {
      const std::string path = "volume_discount[" + std::to_string(i) + "]";
      const YAML::Node tier = volume[i];
      GPOOL_RETURN_IF_ERROR(yaml_fields::CheckKeys(tier, path, {"gpu_hours", "multiplier"}, path, NearestPriceKey));
      if (!tier["gpu_hours"] || !tier["multiplier"]) {
        return yaml_fields::FieldError(path, "needs gpu_hours and multiplier");
      }
      GPOOL_ASSIGN_OR_RETURN(const uint64_t hours, ScalarCount(tier["gpu_hours"], path + ".gpu_hours"));
      GPOOL_ASSIGN_OR_RETURN(const int64_t permille, ScalarDecimal(tier["multiplier"], path + ".multiplier", 3));
      rules.volume.push_back(VolumeTier{hours, static_cast<uint64_t>(permille)});
    }
  }
  return Status::Ok();
}

Result<PriceTable> ReadPrices(const YAML::Node& root) {
  GPOOL_RETURN_IF_ERROR(yaml_fields::CheckKeys(root, "", kPriceKeys, "price file", NearestPriceKey));
  PriceTable table;
  if (root["currency"]) {
    if (!root["currency"].IsScalar()) return yaml_fields::FieldError("currency", "expected a currency code");
    table.currency = root["currency"].Scalar();
  }
  if (!root["gpu_hour"]) return yaml_fields::FieldError("gpu_hour", "is required (a price per device model)");
  GPOOL_ASSIGN_OR_RETURN(const auto gpu, DecimalMap(root["gpu_hour"], "gpu_hour", 6));
  std::map<std::string, int64_t> share;
  if (root["share_gpu_hour"]) {
    GPOOL_ASSIGN_OR_RETURN(share, DecimalMap(root["share_gpu_hour"], "share_gpu_hour", 6));
  }
  for (const auto& [model, micro] : gpu) {
    ModelPrice price{model, micro, 0};
    if (auto it = share.find(model); it != share.end()) price.share_gpu_hour_micro = it->second;
    table.models.push_back(price);
  }
  for (const auto& [model, micro] : share) {
    if (gpu.count(model) == 0) {
      return yaml_fields::FieldError("share_gpu_hour." + model, "has no gpu_hour price for its model");
    }
  }
  for (const auto& [key, out] : {std::pair{"pool_multiplier", &table.pool_permille},
                                 std::pair{"class_multiplier", &table.class_permille}}) {
    if (!root[key]) continue;
    GPOOL_ASSIGN_OR_RETURN(const auto multipliers, DecimalMap(root[key], key, 3));
    for (const auto& [name, permille] : multipliers) (*out)[name] = static_cast<uint64_t>(permille);
  }
  if (root["cpu_core_hour"]) {
    GPOOL_ASSIGN_OR_RETURN(table.cpu_core_hour_micro, ScalarDecimal(root["cpu_core_hour"], "cpu_core_hour", 6));
  }
  if (root["memory_gib_hour"]) {
    GPOOL_ASSIGN_OR_RETURN(table.memory_gib_hour_micro, ScalarDecimal(root["memory_gib_hour"], "memory_gib_hour", 6));
  }
  GPOOL_RETURN_IF_ERROR(ReadBillingRules(root, table.billing));
  GPOOL_RETURN_IF_ERROR(ValidatePriceTable(table));
  return table;
}

}  // namespace

Result<int64_t> ParseScaledDecimal(std::string_view field, std::string_view text, int digits) {
  const auto bad = [&] {
    return Status::InvalidArgument(std::string(field) + ": expected a non-negative number with at most " +
                                   std::to_string(digits) + " decimal places, got '" +
                                   std::string(text.substr(0, 32)) + "'");
  };
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (whole.empty() || whole.size() > 12 || static_cast<int>(fraction.size()) > digits ||
      (dot != std::string_view::npos && fraction.empty())) {
    return bad();
  }
  int64_t value = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return bad();
    value = value * 10 + (c - '0');
  }
  for (int i = 0; i < digits; ++i) {
    const char c = i < static_cast<int>(fraction.size()) ? fraction[static_cast<size_t>(i)] : '0';
    if (c < '0' || c > '9') return bad();
    value = value * 10 + (c - '0');
  }
  return value;
}

std::string FormatScaledDecimal(int64_t value, int digits) {
  int64_t scale = 1;
  for (int i = 0; i < digits; ++i) scale *= 10;
  const bool negative = value < 0;
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  std::string fraction = std::to_string(magnitude % static_cast<uint64_t>(scale));
  fraction.insert(0, static_cast<size_t>(digits) - fraction.size(), '0');
  while (fraction.size() > 2 && fraction.back() == '0') fraction.pop_back();
  return (negative ? "-" : "") + std::to_string(magnitude / static_cast<uint64_t>(scale)) + "." + fraction;
}

Result<PriceTable> ParsePriceYaml(std::string_view yaml) {
  return yaml_fields::ReadYamlDocument<PriceTable>(yaml, "", ReadPrices);
}

Result<PriceTable> ReadPriceFile(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(const std::string text, yaml_fields::ReadUserFile(path, "price file"));
  return yaml_fields::ReadYamlDocument<PriceTable>(text, path, ReadPrices);
}

std::string FormatPriceYaml(const PriceTable& table) {
  std::string out = "currency: " + table.currency + "\ngpu_hour:\n";
  for (const auto& m : table.models) out += "  " + m.model + ": " + FormatScaledDecimal(m.gpu_hour_micro, 6) + "\n";
  bool any_share = false;
  for (const auto& m : table.models) {
    if (m.share_gpu_hour_micro == 0) continue;
    if (!any_share) out += "share_gpu_hour:\n";
    any_share = true;
    out += "  " + m.model + ": " + FormatScaledDecimal(m.share_gpu_hour_micro, 6) + "\n";
  }
  for (const auto& [key, multipliers] : {std::pair{"pool_multiplier", &table.pool_permille},
                                         std::pair{"class_multiplier", &table.class_permille}}) {
    if (multipliers->empty()) continue;
    out += std::string(key) + ":\n";
    for (const auto& [name, permille] : *multipliers) {
      out += "  " + name + ": " + FormatScaledDecimal(static_cast<int64_t>(permille), 3) + "\n";
    }
  }
  if (table.cpu_core_hour_micro != 0) out += "cpu_core_hour: " + FormatScaledDecimal(table.cpu_core_hour_micro, 6) + "\n";
  if (table.memory_gib_hour_micro != 0) {
    out += "memory_gib_hour: " + FormatScaledDecimal(table.memory_gib_hour_micro, 6) + "\n";
  }
  const BillingRules& rules = table.billing;
  if (!rules.min_period_ms_by_class.empty() || !rules.min_period_ms_by_queue.empty()) {
    out += "min_period_minutes:\n";
    for (const auto& [key, periods] : {std::pair{"class", &rules.min_period_ms_by_class},
                                       std::pair{"queue", &rules.min_period_ms_by_queue}}) {
      if (periods->empty()) continue;
      out += std::string("  ") + key + ":\n";
      for (const auto& [name, ms] : *periods) out += "    " + name + ": " + std::to_string(ms / 60'000) + "\n";
    }
  }
  if (rules.off_peak.from_hour != rules.off_peak.to_hour) {
    out += "off_peak:\n  from_hour: " + std::to_string(rules.off_peak.from_hour) +
           "\n  to_hour: " + std::to_string(rules.off_peak.to_hour) +
           "\n  multiplier: " + FormatScaledDecimal(static_cast<int64_t>(rules.off_peak.permille), 3) + "\n";
  }
  if (!rules.volume.empty()) {
    out += "volume_discount:\n";
    for (const auto& tier : rules.volume) {
      out += "  - gpu_hours: " + std::to_string(tier.gpu_hours) +
             "\n    multiplier: " + FormatScaledDecimal(static_cast<int64_t>(tier.permille), 3) + "\n";
    }
  }
  return out;
}

}  // namespace gpool::cli
