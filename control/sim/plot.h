// PNG charts of gpool-sim's results, drawn by gnuplot (Debian gnuplot-nox,
// installed by deploy/install-deps.sh). The data goes to gnuplot inline, so
// no temporary files are left behind.
#pragma once

#include <string>
#include <vector>

#include "control/sim/event_sim.h"
#include "control/sim/paper_experiment.h"
#include "protocol/base/status.h"

namespace gpool::sim {

// GPU allocation (%) against arrived demand (%), one line per policy.
Status PlotArrivalCurves(const std::vector<PolicyResult>& results, uint32_t arrival_pct, const std::string& png);
// Allocation and fragmentation (%) and waiting jobs over simulated time.
Status PlotTimeSeries(const EventRun& run, const std::string& title, const std::string& png);

// The gnuplot program for each (exposed for tests).
std::string ArrivalCurvesScript(const std::vector<PolicyResult>& results, uint32_t arrival_pct, const std::string& png);
std::string TimeSeriesScript(const EventRun& run, const std::string& title, const std::string& png);

}  // namespace gpool::sim
