#include "client/price_file.h"

#include <yaml-cpp/yaml.h>

#include <vector>

#include "client/yaml_fields.h"
#include "protocol/model/prices.h"
#include "protocol/validate_usage.h"

namespace gpool::cli {
namespace {

const std::vector<std::string> kPriceKeys = {"currency",         "gpu_hour",      "share_gpu_hour", "pool_multiplier",
                                             "class_multiplier", "cpu_core_hour", "memory_gib_hour"};

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
  return out;
}

}  // namespace gpool::cli
