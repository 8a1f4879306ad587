#include "control/config_reload.h"

#include <spdlog/spdlog.h>

#include "control/health/policy_config.h"
#include "control/scheduler/config.h"

namespace gpool::control {

void ReloadSchedulerConfig(const std::string& path, SchedulerDriver& scheduler_driver, HealthDriver& health_driver) {
  if (path.empty()) {
    spdlog::warn("scheduler config reload requested but the coordinator was started without --scheduler-config");
    return;
  }
  auto config = scheduler::LoadSchedulerConfig(path);
  if (!config.ok()) {
    spdlog::error("scheduler config reload refused, keeping the running one path={} error=\"{}\"",
                  path, config.status().ToString());
    return;
  }
  scheduler_driver.SetPolicy(*config);
  auto health = health::LoadHealthPolicyConfig(path);
  if (health.ok()) {
    health_driver.Reconfigure(*health);
  } else {
    spdlog::error("health policy reload refused, keeping the running one path={} error=\"{}\"",
                  path, health.status().ToString());
  }
  spdlog::info("scheduler config reloaded path={} strategy={} actions={}", path,
               scheduler::StrategyName(config->node_order.strategy), config->actions.size());
}

}  // namespace gpool::control
