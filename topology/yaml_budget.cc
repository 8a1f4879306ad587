#include "topology/yaml_budget.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

namespace gpool::topology {

YamlBudget YamlBudget::ForText(size_t text_bytes) {
  const size_t scaled = text_bytes > SIZE_MAX / kExpansionFactor ? SIZE_MAX : text_bytes * kExpansionFactor;
  return YamlBudget{.max_nodes = std::max(kMinNodes, scaled), .max_scalar_bytes = std::max(kMinScalarBytes, scaled)};
}

namespace {

enum class Outcome { kWithin, kOverNodes, kOverBytes, kCycle };

// Thrown out of the parser to stop it at the first event past the budget.
struct Stop {
  Outcome outcome;
};

struct Cost {
  size_t nodes = 0;
  size_t scalar_bytes = 0;
};

// Sums the expanded document as its events arrive: each node adds itself
// (a scalar its bytes too) to the running total, and an alias adds the cost
// its anchored node was found to have. A map or sequence that carries an
// anchor remembers the total at its start, so at its end its own cost is
// the difference. An alias whose anchored node has not ended yet lies inside
// it: a cycle.
class Costing : public YAML::EventHandler {
 public:
  explicit Costing(const YamlBudget& budget) : budget_(budget) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { Leaf(anchor, Cost{1, 0}); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    Leaf(anchor, Cost{1, value.size()});
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    auto it = costs_.find(anchor);
    if (it == costs_.end()) throw Stop{Outcome::kCycle};
    Add(it->second);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    Open(anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  void Leaf(YAML::anchor_t anchor, const Cost& cost) {
    if (anchor != YAML::NullAnchor) costs_[anchor] = cost;
    Add(cost);
  }
  void Open(YAML::anchor_t anchor) {
    open_.push_back({anchor, total_});
    Add(Cost{1, 0});
  }
  void Close() {
    if (open_.empty()) return;
    const auto [anchor, at_start] = open_.back();
    open_.pop_back();
    if (anchor != YAML::NullAnchor) {
      costs_[anchor] = Cost{total_.nodes - at_start.nodes, total_.scalar_bytes - at_start.scalar_bytes};
    }
  }
  void Add(const Cost& more) {
    // Never past the budget, so never near overflow: the total stops first.
    total_.nodes += more.nodes;
    total_.scalar_bytes += more.scalar_bytes;
    if (total_.nodes > budget_.max_nodes) throw Stop{Outcome::kOverNodes};
    if (total_.scalar_bytes > budget_.max_scalar_bytes) throw Stop{Outcome::kOverBytes};
  }

  const YamlBudget& budget_;
  Cost total_;
  std::vector<std::pair<YAML::anchor_t, Cost>> open_;
  std::map<YAML::anchor_t, Cost> costs_;
};

}  // namespace

Status CheckYamlBudget(std::string_view text, const YamlBudget& budget, std::string_view source) {
  // Every alias starts with '*'; without one the document is its own text,
  // within any budget ForText gives it, and is not parsed twice.
  if (text.find('*') == std::string_view::npos && budget.max_nodes >= text.size() &&
      budget.max_scalar_bytes >= text.size()) {
    return Status::Ok();
  }
  Outcome outcome = Outcome::kWithin;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    Costing costing(budget);
    parser.HandleNextDocument(costing);
  } catch (const Stop& stop) {
    outcome = stop.outcome;
  } catch (const YAML::Exception&) {
    return Status::Ok();  // not valid YAML: the loader says so, with its position
  }
  if (outcome == Outcome::kWithin) return Status::Ok();
  std::string message;
  if (outcome == Outcome::kCycle) {
    message = "a YAML alias lies inside the node its anchor names, so the document has no end once expanded";
  } else {
    const std::string what = outcome == Outcome::kOverNodes
                                 ? std::to_string(budget.max_nodes) + " nodes"
                                 : std::to_string(budget.max_scalar_bytes) + " bytes of strings";
    message = "with its YAML aliases expanded the document holds more than " + what + " (the limit is " +
              std::to_string(YamlBudget::kExpansionFactor) +
              " times its text, at least 1000000 nodes and 16 MiB); refused unread";
  }
  if (!source.empty()) message = std::string(source) + ": " + message;
  return Status::ResourceExhausted(std::move(message));
}

}  // namespace gpool::topology
