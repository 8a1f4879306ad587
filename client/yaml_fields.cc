#include "client/yaml_fields.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "topology/yaml_budget.h"

namespace gpool::yaml_fields {

Status FieldError(const std::string& path, const std::string& message) {
  return Status::InvalidArgument(path + ": " + message);
}

std::string Quote(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "nothing";
}

std::string Join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string NearestOf(std::string_view word, const std::vector<std::string>& candidates, size_t below) {
  std::string best;
  for (const auto& candidate : candidates) {
    // At least the difference in length apart: a long key (a paste, a
    // hostile file) costs nothing instead of a full table per candidate.
    const size_t gap = word.size() > candidate.size() ? word.size() - candidate.size() : candidate.size() - word.size();
    if (gap >= below) continue;
    const size_t d = EditDistance(word, candidate);
    if (d < below) {
      below = d;
      best = candidate;
    }
  }
  return best;
}

Status CheckKeys(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed,
                 std::string_view document, KeyHint hint) {
  const std::string where = path.empty() ? std::string(document) : path;
  if (!node.IsMap()) return FieldError(where, "expected a map, got " + Quote(node));
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return FieldError(where, "keys must be plain strings");
    const std::string& key = kv.first.Scalar();
    if (!seen.insert(key).second) return FieldError(Join(path, key), "duplicate key");
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string message = "unknown key";
    if (const std::string nearest = hint(key, allowed); !nearest.empty()) {
      message += " (did you mean '" + nearest + "'?)";
    }
    std::string known;
    for (const auto& k : allowed) known += (known.empty() ? "" : ", ") + k;
    return FieldError(Join(path, key), message + "; allowed keys: " + known);
  }
  return Status::Ok();
}

Status WithSource(const Status& status, std::string_view source) {
  return source.empty() ? status : status.WithContext(source);
}

Result<YAML::Node> LoadYaml(std::string_view text, std::string_view source) {
  try {
    // Before loading, and before any reader copies an alias once per use
    // (topology/yaml_budget.h).
    GPOOL_RETURN_IF_ERROR(topology::CheckYamlBudget(text, topology::YamlBudget::ForText(text.size()), source));
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    // e.mark is 0-based; people count lines from 1.
    std::string where = source.empty() ? "line " : std::string(source) + ":";
    where += std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    return Status::InvalidArgument(where + ": not valid YAML or JSON: " + e.msg);
  }
}

Result<std::string> ReadUserFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot open the " + std::string(what));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(path + ": cannot read the " + std::string(what));
  return text.str();
}

}  // namespace gpool::yaml_fields
