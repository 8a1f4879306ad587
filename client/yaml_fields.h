// Reading the fields of a user's YAML (or JSON) file with errors that name
// the file and the field: "job.yaml: tasks[0].resources.gpus: expected ...".
//
// The job spec file and the topology file share these so that both report
// syntax errors, unknown keys and wrong kinds in the same words. Each format
// keeps its own choice of how close a typo must be to get a "did you mean".
//
// Pure functions; thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::yaml_fields {

// InvalidArgument "PATH: MESSAGE".
Status FieldError(const std::string& path, const std::string& message);

// How a value is shown in an error: 'text' for a scalar, else "a list",
// "a map" or "nothing".
std::string Quote(const YAML::Node& node);

// "PATH.KEY", or "KEY" at the top level (empty `path`).
std::string Join(const std::string& path, const std::string& key);

// Levenshtein distance: single-character inserts, deletes and substitutions.
size_t EditDistance(std::string_view a, std::string_view b);

// The first candidate nearest `word` that is fewer than `below` edits away,
// else "".
std::string NearestOf(std::string_view word, const std::vector<std::string>& candidates, size_t below);

// The "did you mean" candidate for an unknown `key` among `allowed`, or "".
using KeyHint = std::string (*)(std::string_view key, const std::vector<std::string>& allowed);

// Checks that `node` is a map whose keys are all scalars, unique and in
// `allowed`. `path` names the map; at the top level (empty `path`) errors
// name `document` instead ("job spec", "topology file").
Status CheckKeys(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed,
                 std::string_view document, KeyHint hint);

// `status` with "SOURCE: " in front; unchanged when `source` is empty.
Status WithSource(const Status& status, std::string_view source);

// Parses `text`. A syntax error is InvalidArgument naming where it is, as
// editors count: "SOURCE:LINE:COLUMN: not valid YAML or JSON: ..." ("line
// LINE:COLUMN: ..." without a source). A document that its aliases expand
// past topology::YamlBudget::ForText(text) is ResourceExhausted.
Result<YAML::Node> LoadYaml(std::string_view text, std::string_view source);

// LoadYaml, then `read` on the root; errors from `read` get WithSource.
template <typename T>
Result<T> ReadYamlDocument(std::string_view text, std::string_view source, Result<T> (*read)(const YAML::Node&)) {
  GPOOL_ASSIGN_OR_RETURN(const YAML::Node root, LoadYaml(text, source));
  Result<T> out = Status::Internal("unset");
  try {
    out = read(root);
  } catch (const YAML::Exception& e) {
    // Defensive: the readers check node kinds first, so this should not happen.
    out = Status::InvalidArgument(std::string("unexpected YAML structure: ") + e.what());
  }
  if (!out.ok()) return WithSource(out.status(), source);
  return out;
}

// The whole of the file at `path`. A file that cannot be opened or read is
// InvalidArgument too (it is the user's argument): "PATH: cannot open the
// WHAT" (`what`: "job spec file", "topology file").
Result<std::string> ReadUserFile(const std::string& path, std::string_view what);

}  // namespace gpool::yaml_fields
