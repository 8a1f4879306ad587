// The helpers cli_internal.h declares for more than one command file: small
// number parsers and the label/taint rules.
#include "client/cli_internal.h"

#include <algorithm>
#include <limits>

namespace gpool::cli {
namespace {

constexpr size_t kMaxLabelLength = 63;

bool IsLabelChar(char c, std::string_view extra) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         extra.find(c) != std::string_view::npos;
}

}  // namespace

void NoOptions(cxxopts::Options&) {}

// --- Small parsers -------------------------------------------------------------

Result<uint64_t> ParseUnsignedText(std::string_view text, uint64_t max) {
  if (text.empty() || text.size() > 20) return Status::InvalidArgument("");
  unsigned __int128 v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Status::InvalidArgument("");
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > max) return Status::InvalidArgument("");
  return static_cast<uint64_t>(v);
}

Result<uint64_t> ParseUnsignedFlag(std::string_view flag, const std::string& text, uint64_t max) {
  auto v = ParseUnsignedText(text, max);
  if (!v.ok()) {
    return Status::InvalidArgument(std::string(flag) + ": expected an integer from 0 to " + std::to_string(max) +
                                   ", got '" + text + "'");
  }
  return v;
}

Result<int32_t> ParseInt32Flag(std::string_view flag, const std::string& text) {
  std::string_view digits = text;
  bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.remove_prefix(1);
  auto v = ParseUnsignedText(digits, static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) + (negative ? 1 : 0));
  if (!v.ok()) return Status::InvalidArgument(std::string(flag) + ": expected an integer, got '" + text + "'");
  return static_cast<int32_t>(negative ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v));
}

// --- Labels and taints -------------------------------------------------------------

Status CheckLabelKey(std::string_view context, std::string_view kind, const std::string& arg,
                     const std::string& key) {
  const std::string where = std::string(context) + ": ";
  if (key.empty()) return Status::InvalidArgument(where + "'" + arg + "': the " + std::string(kind) + " key is empty");
  if (key.size() > kMaxLabelLength) {
    return Status::InvalidArgument(where + std::string(kind) + " key '" + key + "' is longer than 63 characters");
  }
  for (char c : key) {
    if (!IsLabelChar(c, "._/-")) {
      return Status::InvalidArgument(where + std::string(kind) + " key '" + key +
                                     "' may only contain letters, digits, '.', '_', '/' and '-'");
    }
  }
  return Status::Ok();
}

Status CheckLabelValue(std::string_view context, const std::string& key, const std::string& value) {
  const std::string where = std::string(context) + ": ";
  if (value.size() > kMaxLabelLength) {
    return Status::InvalidArgument(where + "the value of " + key + " is longer than 63 characters");
  }
  for (char c : value) {
    if (!IsLabelChar(c, "._-")) {
      return Status::InvalidArgument(where + "the value of " + key + " ('" + value +
                                     "') may only contain letters, digits, '.', '_' and '-'");
    }
  }
  return Status::Ok();
}

Status AddKeyValue(std::string_view context, std::string_view kind, const std::string& arg,
                   std::map<std::string, std::string>& out) {
  const size_t eq = arg.find('=');
  std::string key = arg.substr(0, eq);
  std::string value = arg.substr(eq + 1);
  GPOOL_RETURN_IF_ERROR(CheckLabelKey(context, kind, arg, key));
  GPOOL_RETURN_IF_ERROR(CheckLabelValue(context, key, value));
  auto [it, inserted] = out.emplace(key, value);
  if (!inserted && it->second != value) {
    return Status::InvalidArgument(std::string(context) + ": " + key + " is set twice ('" + it->second + "' and '" +
                                   value + "')");
  }
  return Status::Ok();
}

Status ParseKeyValueArgs(std::string_view context, std::string_view kind, std::span<const std::string> args,
                         std::map<std::string, std::string>& set, std::vector<std::string>& remove) {
  for (const std::string& arg : args) {
    if (arg.find('=') != std::string::npos) {
      GPOOL_RETURN_IF_ERROR(AddKeyValue(context, kind, arg, set));
    } else if (!arg.empty() && arg.back() == '-') {
      std::string key = arg.substr(0, arg.size() - 1);
      GPOOL_RETURN_IF_ERROR(CheckLabelKey(context, kind, arg, key));
      if (std::find(remove.begin(), remove.end(), key) == remove.end()) remove.push_back(std::move(key));
    } else {
      return Status::InvalidArgument(std::string(context) + ": '" + arg + "' is neither KEY=VALUE (set a " +
                                     std::string(kind) + ") nor KEY- (remove one)");
    }
  }
  for (const auto& key : remove) {
    if (set.count(key)) return Status::InvalidArgument(std::string(context) + ": " + key + " is both set and removed");
  }
  return Status::Ok();
}

}  // namespace gpool::cli
