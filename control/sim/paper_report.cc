#include "control/sim/paper_report.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "control/sim/published.h"

namespace gpool::sim {

namespace {

std::string Fixed(double value, int digits = 2) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace

nlohmann::json PolicyJson(const PaperRunInfo& info, const PolicyResult& result, double seconds) {
  const uint32_t arrival = info.options.arrival_pct;
  nlohmann::json out;
  out["policy"] = result.policy;
  out["nodes_file"] = info.nodes_path;
  out["pods_file"] = info.pods_path;
  out["nodes"] = info.nodes;
  out["pod_specs"] = info.pods;
  out["seeds"] = info.options.seeds;
  out["first_seed"] = info.options.first_seed;
  out["arrival_pct"] = arrival;
  out["alloc_pct_at_" + std::to_string(arrival)] = result.MeanAllocAt(arrival);
  if (arrival >= 130) out["alloc_pct_at_130"] = result.MeanAllocAt(130);
  out["alloc_pct_at_100"] = result.MeanAllocAt(100);
  out["frag_pct_at_100"] = result.MeanFragAt100();
  out["frag_idle_pct_at_100"] = result.MeanFragIdleAt100();
  out["empty_cluster_frag_pct"] = info.empty_frag_pct;
  out["unallocated_at_end_pct"] = {{"cpu_bound_nodes", result.Mean(&SeedResult::left_cpu_bound_pct)},
                                   {"idle_gpus", result.Mean(&SeedResult::left_idle_gpus_pct)},
                                   {"partly_used_gpus", result.Mean(&SeedResult::left_partial_gpus_pct)}};
  out["share_packing"] = {{"devices", result.Mean(&SeedResult::share_devices)},
                          {"free_pct", result.Mean(&SeedResult::share_free_pct)},
                          {"offline_ffd_devices", result.Mean(&SeedResult::ffd_share_devices)},
                          {"offline_ffd_free_pct", result.Mean(&SeedResult::ffd_share_free_pct)}};
  std::map<uint32_t, double> failed;
  for (const auto& seed : result.seeds) {
    for (const auto& [gpus, pct] : seed.failed_pct_by_gpus) failed[gpus] += pct / static_cast<double>(result.seeds.size());
  }
  nlohmann::json failed_json = nlohmann::json::object();
  for (const auto& [gpus, pct] : failed) failed_json[gpus == 0 ? "share" : std::to_string(gpus) + "_gpu"] = pct;
  out["failed_demand_pct_by_gpus"] = failed_json;
  nlohmann::json per_seed = nlohmann::json::array();
  for (const auto& seed : result.seeds) {
    per_seed.push_back({{"seed", seed.seed},
                        {"alloc_pct_at_end", seed.alloc_pct.empty() ? 0.0 : seed.alloc_pct.back()},
                        {"frag_pct_at_100", seed.frag_pct_at_100},
                        {"pods", seed.pods},
                        {"placed", seed.placed}});
  }
  out["per_seed"] = per_seed;
  const auto published =
      info.paper_cluster ? PublishedAllocPct(VariantOfPodFile(info.pods_path), result.policy) : std::nullopt;
  out["paper_cluster"] = info.paper_cluster;
  out["published_alloc_pct_at_130"] = published ? nlohmann::json(*published) : nlohmann::json(nullptr);
  out["seconds"] = seconds;
  return out;
}

std::vector<std::string> BenchLines(const nlohmann::json& policy_json) {
  const std::string arrival = std::to_string(policy_json.at("arrival_pct").get<uint32_t>());
  nlohmann::json params = {{"policy", policy_json.at("policy")},
                           {"variant", std::string(VariantOfPodFile(policy_json.at("pods_file").get<std::string>()))},
                           {"seeds", policy_json.at("seeds")},
                           {"published_fgd_alloc_pct_at_130", nullptr}};
  const auto published = policy_json.value("paper_cluster", true)
                              ? PublishedAllocPct(params["variant"].get<std::string>(), "fgd")
                              : std::nullopt;
  if (published) params["published_fgd_alloc_pct_at_130"] = *published;
  auto line = [&](const std::string& metric, const nlohmann::json& value, const char* unit) {
    // The field order and spacing of every gpool benchmark line.
    return "{\"metric\": " + nlohmann::json(metric).dump() + ", \"value\": " + value.dump() + ", \"unit\": \"" +
           unit + "\", \"params\": " + params.dump() + "}";
  };
  return {line("sim_alloc_pct_at_" + arrival, policy_json.at("alloc_pct_at_" + arrival), "%"),
          line("sim_frag_pct_at_100", policy_json.at("frag_pct_at_100"), "%"),
          line("sim_run_seconds", policy_json.at("seconds"), "s")};
}

std::string ComparisonTable(const PaperRunInfo& info, const std::vector<PolicyResult>& results) {
  const std::string_view variant = VariantOfPodFile(info.pods_path);
  const uint32_t arrival = info.options.arrival_pct;
  std::ostringstream out;
  out << "pods: " << info.pods_path << " (" << info.pods << " specs), nodes: " << info.nodes_path << " (" << info.nodes
      << "), " << info.options.seeds << " seeds, arrival " << arrival << " %, empty-cluster fragmentation "
      << Fixed(info.empty_frag_pct) << " %\n\n";
  out << "| policy | alloc % at " << arrival << " | published | diff | frag % at 100 (of total / of idle) |\n";
  out << "|---|---|---|---|---|\n";
  for (const auto& result : results) {
    const double alloc = result.MeanAllocAt(arrival);
    const auto known =
        arrival == 130 && info.paper_cluster ? PublishedAllocPct(variant, result.policy) : std::nullopt;
    const double published = known.value_or(0);
    out << "| " << result.policy << " | " << Fixed(alloc) << " | " << (known ? Fixed(published) : "-") << " | "
        << (known ? (alloc >= published ? "+" : "") + Fixed(alloc - published) : "-") << " | "
        << Fixed(result.MeanFragAt100()) << " / " << Fixed(result.MeanFragIdleAt100()) << " |\n";
  }
  if (!info.paper_cluster) out << "\n(no published figures: the paper measured the trace's own cluster)\n";
  return out.str();
}

std::string ArrivalCurveCsv(const std::vector<PolicyResult>& results, uint32_t arrival_pct) {
  std::ostringstream out;
  out << "arrival_pct";
  for (const auto& result : results) out << ",alloc_pct_" << result.policy;
  out << "\n";
  for (uint32_t pct = 0; pct <= arrival_pct; ++pct) {
    out << pct;
    for (const auto& result : results) out << "," << Fixed(result.MeanAllocAt(pct), 3);
    out << "\n";
  }
  return out.str();
}

}  // namespace gpool::sim
