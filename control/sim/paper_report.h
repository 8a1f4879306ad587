// gpool-sim's output for the paper experiment: one JSON object per run
// (the stable interface scripts read) and a comparison table beside the
// published figures.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/sim/paper_experiment.h"

namespace gpool::sim {

struct PaperRunInfo {
  std::string nodes_path;
  std::string pods_path;
  size_t nodes = 0;
  size_t pods = 0;
  PaperOptions options;
  double empty_frag_pct = 0;
  // Whether the cluster is a trace node list, the kind of cluster the
  // paper's figures were measured on. On a gpool spec cluster they compare
  // with nothing, so the JSON, bench lines and table leave them out.
  bool paper_cluster = true;
};

// Keys: policy, alloc_pct_at_<arrival> (and alloc_pct_at_130 whenever the
// arrival reaches it), frag_pct_at_100, frag_idle_pct_at_100, per-seed
// values, the published figure (null when the paper has none or the
// cluster is not a trace node list), paper_cluster, seconds.
nlohmann::json PolicyJson(const PaperRunInfo& info, const PolicyResult& result, double seconds);
// The benchmark suite's lines ({"metric", "value", "unit", "params"}) for
// one policy's JSON: allocation at the arrival, fragmentation at 100 %, and
// the run's wall time, with the published figure among the params.
std::vector<std::string> BenchLines(const nlohmann::json& policy_json);
// The markdown comparison table.
std::string ComparisonTable(const PaperRunInfo& info, const std::vector<PolicyResult>& results);
// CSV: arrival_pct, then one allocation column per policy (mean over seeds).
std::string ArrivalCurveCsv(const std::vector<PolicyResult>& results, uint32_t arrival_pct);

}  // namespace gpool::sim
