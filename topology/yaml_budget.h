// A bound on how large a YAML document becomes once its aliases are expanded.
//
// yaml-cpp resolves an alias (`*a`) to the very node its anchor (`&a`) named,
// so the tree it loads is shared and cheap; the cost comes when a reader
// copies the shared node once per alias into its own structures: a 1 MB job
// spec whose `command` lists 300,000 aliases of a 64 KiB string asked the
// CLI for 19 GB (it aborted with std::bad_alloc after 3 GB), and merely
// loading that document takes yaml-cpp half a second. So every reader of
// users' YAML (job specs and topology files in the CLI, node specs in the
// worker) first runs the text through yaml-cpp's event parser with this
// budget: the expanded size is summed as the events arrive (an alias adds
// the size its anchored node was found to have, so the work follows the
// text, not the expansion) and parsing stops at the first event past the
// budget. A bomb is refused after its first few hundred aliases, in
// microseconds, whatever it would expand to.
//
// The budget follows the text: without aliases a document can never exceed
// it (its nodes and scalar bytes are fewer than its own bytes), and aliases
// may multiply it by kExpansionFactor, with floors for small documents, so
// anchors that share an env block between task groups stay usable.
//
// Pure functions; thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::topology {

struct YamlBudget {
  size_t max_nodes = 0;         // maps, sequences and scalars (keys included)
  size_t max_scalar_bytes = 0;  // the bytes of every scalar, keys included

  static constexpr size_t kExpansionFactor = 16;
  static constexpr size_t kMinNodes = 1'000'000;
  static constexpr size_t kMinScalarBytes = 16u << 20;
  // The budget for a document of `text_bytes` bytes.
  static YamlBudget ForText(size_t text_bytes);
};

// OK, or ResourceExhausted "SOURCE: with its YAML aliases expanded the
// document holds more than N nodes ..." when the first document of `text`
// (the one YAML::Load reads), aliases expanded, is over `budget`, or when an
// alias lies inside its own anchor (a document without end). Text that is
// not valid YAML passes: the caller's loader reports that in its own words.
// `source` names the file ("" for none).
Status CheckYamlBudget(std::string_view text, const YamlBudget& budget, std::string_view source);

}  // namespace gpool::topology
