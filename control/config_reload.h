// ReloadSchedulerConfig: SIGHUP's work. Re-reads the --scheduler-config file
// and hands the scheduler its [scheduler] policy and the health driver its
// [health] sections. A file that no longer loads leaves the running
// configuration in place and says why in the log.
#pragma once

#include <string>

#include "control/health_driver.h"
#include "control/scheduler_driver.h"

namespace gpool::control {

// path: empty when the coordinator was started without --scheduler-config.
void ReloadSchedulerConfig(const std::string& path, SchedulerDriver& scheduler_driver, HealthDriver& health_driver);

}  // namespace gpool::control
