// gpool-raft-sim: runs many seeds of the deterministic Raft simulation
// (sim/cluster.h) and prints one JSON line with the count, then the first
// failing seeds with their replay commands. Opt-in (`make raft-sim`); CI runs
// a small slice of the same thing in sim_test.cc.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include <cxxopts.hpp>

#include "control/raft/sim/cluster.h"

int main(int argc, char** argv) {
  cxxopts::Options options("gpool-raft-sim", "Deterministic simulation of the gpool Raft core");
  options.add_options()                                                                        //
      ("seeds", "number of seeds to run", cxxopts::value<uint64_t>()->default_value("1000"))  //
      ("start", "first seed", cxxopts::value<uint64_t>()->default_value("1"))                  //
      ("nodes", "voters: 3 or 5", cxxopts::value<int>()->default_value("3"))                   //
      ("steps", "chaos steps per seed", cxxopts::value<int>()->default_value("3000"))          //
      ("show", "failing seeds to report in full", cxxopts::value<int>()->default_value("3"))   //
      ("rogue", "per mille of seeds with a rogue peer forging and replaying messages",          //
       cxxopts::value<uint32_t>()->default_value("250"))                                        //
      ("trace", "keep and print the whole trace of failing seeds")                            //
      ("verbose", "print each seed's statistics")                                             //
      ("h,help", "show this help");
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n" << options.help() << "\n";
    return 2;
  }
  if (args.count("help")) {
    std::cout << options.help() << "\n";
    return 0;
  }
  const uint64_t seeds = args["seeds"].as<uint64_t>();
  const uint64_t start = args["start"].as<uint64_t>();
  const int nodes = args["nodes"].as<int>();
  const int steps = args["steps"].as<int>();
  const int show = args["show"].as<int>();
  const bool trace = args.count("trace") > 0;
  const bool verbose = args.count("verbose") > 0;
  const uint32_t rogue = args["rogue"].as<uint32_t>();
  if (nodes < 1 || nodes > 9 || steps < 0 || rogue > 1000) {
    std::cerr << "--nodes must be in [1, 9], --steps >= 0 and --rogue in [0, 1000]\n";
    return 2;
  }

  const auto t0 = std::chrono::steady_clock::now();
  uint64_t ran = 0, failed = 0;
  std::vector<uint64_t> failing;
  std::vector<std::string> reports;
  for (uint64_t seed = start; seed < start + seeds; ++seed) {
    gpool::raft::sim::SimCluster cluster(
        {.seed = seed, .nodes = nodes, .steps = steps, .keep_full_trace = trace, .rogue_per_mille = rogue});
    gpool::Status s = cluster.Run();
    ++ran;
    if (verbose) {
      const auto& st = cluster.stats();
      std::printf(
          "seed %llu: %s ticks=%llu delivered=%llu leaders=%llu commit=%llu proposals=%llu crashes=%llu "
          "snapshots=%llu conf_changes=%llu transfers=%llu reads=%llu sent=%llu dropped=%llu leader_steps=%llu "
          "forged=%llu replayed=%llu refused=%llu\n",
          static_cast<unsigned long long>(seed), s.ok() ? "ok" : "FAILED",
          static_cast<unsigned long long>(st.ticks), static_cast<unsigned long long>(st.delivered),
          static_cast<unsigned long long>(st.leaders), static_cast<unsigned long long>(st.max_commit),
          static_cast<unsigned long long>(st.proposals_accepted), static_cast<unsigned long long>(st.crashes),
          static_cast<unsigned long long>(st.snapshots_installed), static_cast<unsigned long long>(st.conf_changes),
          static_cast<unsigned long long>(st.transfers), static_cast<unsigned long long>(st.reads),
          static_cast<unsigned long long>(st.sent), static_cast<unsigned long long>(st.dropped),
          static_cast<unsigned long long>(st.leader_steps), static_cast<unsigned long long>(st.forged),
          static_cast<unsigned long long>(st.replayed), static_cast<unsigned long long>(st.refused));
    }
    if (s.ok()) {
      // A single traced seed prints its run even when it passes.
      if (trace && seeds == 1) std::printf("%s", cluster.Report(s, SIZE_MAX).c_str());
      continue;
    }
    ++failed;
    if (failing.size() < 20) failing.push_back(seed);
    if (static_cast<int>(reports.size()) < show) reports.push_back(cluster.Report(s, trace ? SIZE_MAX : 40));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"metric\": \"raft_sim_seeds\", \"value\": %llu, \"unit\": \"seeds\", \"params\": {\"failed\": %llu, "
      "\"nodes\": %d, \"steps\": %d, \"start\": %llu, \"rogue_per_mille\": %u, \"seconds\": %.2f}}\n",
      static_cast<unsigned long long>(ran), static_cast<unsigned long long>(failed), nodes, steps,
      static_cast<unsigned long long>(start), rogue, seconds);
  if (!failing.empty()) {
    std::printf("first failing seeds:");
    for (uint64_t s : failing) std::printf(" %llu", static_cast<unsigned long long>(s));
    std::printf("\n");
    for (const auto& r : reports) std::printf("%s", r.c_str());
  }
  return failed == 0 ? 0 : 1;
}
