// Scheduler throughput: placements per second of the pure scheduler on
// synthetic clusters of 8-GPU nodes, printed as JSON lines. The baseline in
// the same run is the cost of building the input view copy, so the ratio
// shows how much of a cycle is placement logic.
#include <chrono>
#include <cstdio>
#include <string>

#include "control/scheduler/scheduler.h"

namespace {

using Clock = std::chrono::steady_clock;

gpool::topology::ClusterView MakeView(uint32_t nodes, uint32_t jobs) {
  gpool::topology::ClusterView view;
  for (uint32_t n = 0; n < nodes; ++n) {
    gpool::topology::NodeView node;
    node.name = "node-" + std::to_string(n);
    node.cpu_milli_total = node.cpu_milli_free = 128'000;
    node.memory_mib_total = node.memory_mib_free = 1024 * 1024;
    for (uint32_t g = 0; g < 8; ++g) node.gpus.push_back({g, "H100", 81920, true, false});
    view.nodes.push_back(std::move(node));
  }
  for (uint32_t j = 0; j < jobs; ++j) {
    gpool::topology::PendingJob job;
    job.id = gpool::JobId(j + 1);
    job.arrival = j;
    const uint32_t gpus = 1u << (j % 4);  // 1, 2, 4, 8 GPUs
    job.tasks.push_back({0, gpool::Resources{gpus, 4000, 32 * 1024}});
    view.pending.push_back(std::move(job));
  }
  return view;
}

void Run(uint32_t nodes, uint32_t jobs, gpool::scheduler::Strategy strategy) {
  auto view = MakeView(nodes, jobs);
  auto copy_start = Clock::now();
  auto copy = view;
  double copy_s = std::chrono::duration<double>(Clock::now() - copy_start).count();
  auto start = Clock::now();
  auto plan = gpool::scheduler::Schedule(copy, {strategy});
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double decisions = static_cast<double>(plan.binds.size() + plan.pending.size());
  std::printf(
      "{\"metric\": \"scheduler_decisions_per_s\", \"value\": %.0f, \"unit\": \"decisions/s\", \"params\": "
      "{\"nodes\": %u, \"gpus\": %u, \"pending_jobs\": %u, \"strategy\": \"%s\", \"placed\": %zu, "
      "\"cycle_ms\": %.2f, \"view_copy_ms\": %.2f, \"cycle_to_copy_ratio\": %.1f}}\n",
      decisions / seconds, nodes, nodes * 8, jobs, std::string(gpool::scheduler::StrategyName(strategy)).c_str(),
      plan.binds.size(), seconds * 1000, copy_s * 1000, seconds / copy_s);
}

}  // namespace

int main() {
  for (uint32_t nodes : {1'250u, 12'500u}) {
    Run(nodes, nodes * 2, gpool::scheduler::Strategy::kBinpack);
    Run(nodes, nodes * 2, gpool::scheduler::Strategy::kSpread);
  }
  return 0;
}
