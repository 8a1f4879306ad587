// gpool-sim: runs the production scheduler on a simulated cluster.
//
//   Paper experiment (the FGD paper's, see paper_experiment.h):
//     gpool-sim --nodes NODES.csv --pods PODS.csv --policy NAME --seeds K --arrival-pct 130 --json
//   The cluster is the trace's node list, or N copies of a gpool node spec
//   file: --nodes node.yaml --node-count N (node_file.h).
//   --policy all runs every policy of the comparison and prints the table
//   beside the published figures (--json: one object per policy, one per line).
//
//   Event-driven run (arrivals, run times, cycles on a simulated clock; see
//   event_sim.h): --mode events with --pods PODS.csv or --workload JOBS.jsonl.
//
// Exit codes: 0 done, 1 bad input file, 2 bad command line.
#include <chrono>
#include <fstream>
#include <iostream>

#include <cxxopts.hpp>
#include <spdlog/spdlog.h>

#include "control/scheduler/config.h"
#include "control/sim/event_sim.h"
#include "control/sim/node_file.h"
#include "control/sim/paper_experiment.h"
#include "control/sim/paper_report.h"
#include "control/sim/plot.h"
#include "control/sim/policies.h"
#include "control/sim/workload.h"

namespace {

using gpool::sim::PaperOptions;

int Fail(int code, const std::string& message) {
  std::cerr << "gpool-sim: " << message << "\n";
  return code;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  cxxopts::Options cli("gpool-sim", "gpool's scheduler on a simulated cluster, on a simulated clock");
  cli.add_options()
      ("nodes", "cluster: the trace's node list CSV, or a gpool node spec file (YAML or JSON, as gpool-worker "
       "--spec reads)", cxxopts::value<std::string>())
      ("node-count", "with a node spec file: how many nodes of that spec (1 to 10000; default 1)",
       cxxopts::value<uint32_t>())
      ("pods", "workload: the trace's pod list CSV", cxxopts::value<std::string>())
      ("workload", "workload: gpool JSONL jobs (event mode)", cxxopts::value<std::string>())
      ("mode", "paper (one-by-one placement, the FGD paper's experiment) or events",
       cxxopts::value<std::string>()->default_value("paper"))
      ("policy", "default (the coordinator's configuration), all, or a strategy: fragmentation, fgd, random, "
       "dot-product, gpu-packing, gpu-clustering, best-fit, binpack, spread",
       cxxopts::value<std::string>()->default_value("default"))
      ("config", "a scheduler config file (the coordinator's format) instead of --policy",
       cxxopts::value<std::string>())
      ("seeds", "paper mode: seeds to average over", cxxopts::value<uint32_t>()->default_value("10"))
      ("first-seed", "paper mode: the first seed", cxxopts::value<uint64_t>()->default_value("1"))
      ("arrival-pct", "paper mode: arriving GPU demand, % of capacity", cxxopts::value<uint32_t>()->default_value("130"))
      ("threads", "worker threads (0: one per hardware thread)", cxxopts::value<uint32_t>()->default_value("0"))
      ("cycle-ms", "event mode: simulated time between scheduling cycles", cxxopts::value<int64_t>()->default_value("1000"))
      ("csv", "write the time series (event mode) or arrival curves (paper mode) here", cxxopts::value<std::string>())
      ("plot", "also draw the series as a PNG chart here (needs gnuplot)", cxxopts::value<std::string>())
      ("json", "print JSON instead of a table")
      ("bench-json", "paper mode: print benchmark lines {metric, value, unit, params} (bench/run-all.sh)")
      ("h,help", "this help");
  cxxopts::ParseResult args;
  try {
    args = cli.parse(argc, argv);
  } catch (const std::exception& e) {
    return Fail(2, e.what());
  }
  if (args.count("help")) {
    std::cout << cli.help() << "\n";
    return 0;
  }
  if (!args.unmatched().empty()) return Fail(2, "unexpected argument '" + args.unmatched().front() + "'");
  if (!args.count("nodes")) return Fail(2, "--nodes is required");
  const std::string mode = args["mode"].as<std::string>();
  if (mode != "paper" && mode != "events") return Fail(2, "--mode: '" + mode + "' is not paper or events");
  const bool json = args.count("json") > 0;

  std::vector<std::string> policies;
  std::vector<gpool::scheduler::SchedulerConfig> configs;
  if (args.count("config")) {
    auto config = gpool::scheduler::LoadSchedulerConfig(args["config"].as<std::string>());
    if (!config.ok()) return Fail(1, config.status().message());
    policies.push_back(args["config"].as<std::string>());
    configs.push_back(*config);
  } else {
    const std::string policy = args["policy"].as<std::string>();
    const auto names = policy == "all" ? gpool::sim::PaperPolicies() : std::vector<std::string>{policy};
    for (const auto& name : names) {
      auto config = gpool::sim::PolicyConfig(name);
      if (!config.ok()) {
        return Fail(2, "--policy: " + config.status().message() + "; or default (the coordinator's configuration) or all");
      }
      policies.push_back(name);
      configs.push_back(*config);
    }
  }

  const std::string nodes_path = args["nodes"].as<std::string>();
  auto kind = gpool::sim::DetectNodeFile(nodes_path);
  if (!kind.ok()) return Fail(1, kind.status().message());
  const bool spec_cluster = *kind == gpool::sim::NodeFileKind::kSpec;
  gpool::sim::NodeFileOptions node_options;
  if (args.count("node-count")) {
    if (!spec_cluster) return Fail(2, "--node-count is for node spec files; " + nodes_path + " is a trace node list");
    node_options.count = args["node-count"].as<uint32_t>();
    if (node_options.count == 0 || node_options.count > gpool::sim::kMaxSpecNodes) {
      return Fail(2, "--node-count must be 1.." + std::to_string(gpool::sim::kMaxSpecNodes));
    }
  }
  // Trace pods ask for shares in thousandths of a GPU; JSONL jobs in MiB.
  node_options.trace_gpu_units = !(mode == "events" && args.count("workload"));
  auto nodes = gpool::sim::LoadNodeFile(nodes_path, node_options);
  if (!nodes.ok()) return Fail(1, nodes.status().message());

  if (mode == "events") {
    gpool::sim::EventOptions options;
    options.cycle_ms = args["cycle-ms"].as<int64_t>();
    if (options.cycle_ms <= 0) return Fail(2, "--cycle-ms must be positive");
    std::vector<gpool::sim::SimJob> jobs;
    std::vector<gpool::topology::WorkloadShape> workload;
    if (args.count("workload")) {
      auto loaded = gpool::sim::LoadJsonlWorkload(args["workload"].as<std::string>());
      if (!loaded.ok()) return Fail(1, loaded.status().message());
      jobs = std::move(*loaded);
    } else if (args.count("pods")) {
      auto pods = gpool::sim::LoadTracePods(args["pods"].as<std::string>());
      if (!pods.ok()) return Fail(1, pods.status().message());
      jobs = gpool::sim::JobsFromTrace(*pods);
      workload = gpool::sim::TraceWorkload(*pods);
    } else {
      return Fail(2, "--mode events needs --pods or --workload");
    }
    nlohmann::json all = nlohmann::json::array();
    for (size_t p = 0; p < policies.size(); ++p) {
      const auto run = gpool::sim::RunEvents(*nodes, jobs, workload, configs[p], options);
      if (args.count("csv")) {
        const std::string path = args["csv"].as<std::string>() + (policies.size() > 1 ? "." + policies[p] : "");
        if (!WriteFile(path, gpool::sim::TimeSeriesCsv(run))) return Fail(1, path + ": cannot write");
      }
      if (args.count("plot")) {
        const std::string path = args["plot"].as<std::string>() + (policies.size() > 1 ? "." + policies[p] + ".png" : "");
        if (auto status = gpool::sim::PlotTimeSeries(run, policies[p], path); !status.ok()) {
          return Fail(1, status.message());
        }
      }
      auto summary = gpool::sim::EventSummaryJson(run);
      summary["policy"] = policies[p];
      if (json) {
        std::cout << summary.dump() << "\n";
      } else {
        std::cout << policies[p] << ": " << summary.dump(2) << "\n";
      }
    }
    return 0;
  }

  if (!args.count("pods")) return Fail(2, "--mode paper needs --pods");
  auto pods = gpool::sim::LoadTracePods(args["pods"].as<std::string>());
  if (!pods.ok()) return Fail(1, pods.status().message());
  uint64_t gpus = 0;
  for (const auto& node : *nodes) gpus += node.gpus;
  if (gpus == 0) {
    return Fail(1, nodes_path + ": the cluster has no GPUs (the paper experiment measures GPU allocation)");
  }
  PaperOptions options;
  options.seeds = args["seeds"].as<uint32_t>();
  options.first_seed = args["first-seed"].as<uint64_t>();
  options.arrival_pct = args["arrival-pct"].as<uint32_t>();
  options.threads = args["threads"].as<uint32_t>();
  if (options.seeds == 0 || options.seeds > 1000) return Fail(2, "--seeds must be 1..1000");
  if (options.arrival_pct == 0 || options.arrival_pct > 1000) return Fail(2, "--arrival-pct must be 1..1000");
  gpool::sim::PaperRunInfo info{nodes_path, args["pods"].as<std::string>(), nodes->size(),
                                pods->size(), options, gpool::sim::EmptyClusterFragPct(*nodes, *pods),
                                !spec_cluster};
  std::vector<gpool::sim::PolicyResult> results;
  for (size_t p = 0; p < policies.size(); ++p) {
    const auto start = std::chrono::steady_clock::now();
    results.push_back(gpool::sim::RunPaperExperiment(*nodes, *pods, policies[p], configs[p], options));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    nlohmann::json policy_json = gpool::sim::PolicyJson(info, results.back(), seconds);
    if (json) std::cout << policy_json.dump() << std::endl;
    if (args.count("bench-json")) {
      for (const auto& line : gpool::sim::BenchLines(policy_json)) {
        std::cout << line << std::endl;
      }
    }
  }
  if (!json && !args.count("bench-json")) std::cout << gpool::sim::ComparisonTable(info, results);
  if (args.count("csv")) {
    const std::string path = args["csv"].as<std::string>();
    if (!WriteFile(path, gpool::sim::ArrivalCurveCsv(results, options.arrival_pct))) return Fail(1, path + ": cannot write");
  }
  if (args.count("plot")) {
    if (auto status = gpool::sim::PlotArrivalCurves(results, options.arrival_pct, args["plot"].as<std::string>());
        !status.ok()) {
      return Fail(1, status.message());
    }
  }
  return 0;
}
