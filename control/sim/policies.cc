#include "control/sim/policies.h"

namespace gpool::sim {

const std::vector<std::string>& PaperPolicies() {
  static const std::vector<std::string> kPolicies = {"random",  "dot-product", "gpu-clustering", "gpu-packing",
                                                     "best-fit", "fgd",         "fragmentation"};
  return kPolicies;
}

Result<scheduler::SchedulerConfig> PolicyConfig(std::string_view name) {
  if (name == "default") return scheduler::SchedulerConfig{};
  GPOOL_ASSIGN_OR_RETURN(auto strategy, scheduler::StrategyFromName(name));
  scheduler::SchedulerConfig config;
  config.actions = {scheduler::Action::kEnqueue, scheduler::Action::kAllocate};
  config.node_order.strategy = strategy;
  config.node_order.candidates = 100'000;
  config.gpu_cpu_ratio.cpu_milli_per_free_gpu = 0;
  config.gpu_cpu_ratio.memory_mib_per_free_gpu = 0;
  config.reservation.enabled = false;
  return config;
}

}  // namespace gpool::sim
