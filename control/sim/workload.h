// The simulator's workload: jobs with an arrival time and a run time, from
// the trace's pod list or from a gpool JSONL file.
//
// JSONL (one job per line; '#' lines and blank lines are skipped):
//   {"name": "train-1", "arrival_s": 0, "duration_s": 3600,
//    "queue": "default", "priority_class": "high", "replicas": 2,
//    "gpus": 8, "cpu_milli": 32000, "memory_mib": 262144,
//    "gpu_model": "A100|H100", "gpu_memory_mib": 0, "gpu_compute_pct": 0}
// Only arrival_s and (gpus or cpu_milli) are required; duration_s absent or
// negative runs until the end. Unknown fields are errors, naming the line.
//
// Trace pods: num_gpu GPUs, a share (gpu_milli of sim::kTraceGpuUnits
// units, no compute reserved) when gpu_milli < 1000, any of gpu_spec's
// models; qos LS -> high, BE -> low, others medium; arrival creation_time,
// run time deletion_time - scheduled_time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/sim/trace.h"
#include "protocol/base/status.h"
#include "topology/cluster_view.h"

namespace gpool::sim {

struct SimJob {
  int64_t arrival_ms = 0;
  int64_t duration_ms = -1;  // -1: runs until the simulation ends
  topology::PendingJob job;  // id, queue, class and tasks; the simulator fills the rest
  uint64_t gpu_milli = 0;    // GPU demand of all its tasks, in thousandths of a GPU
};

SimJob JobFromTracePod(const TracePod& pod, uint64_t id);
std::vector<SimJob> JobsFromTrace(const std::vector<TracePod>& pods);
// The trace's workload: every pod shape, weighted by its frequency (FGD's
// target workload is the part covering 95 %: scheduler::CommonestShapes).
std::vector<topology::WorkloadShape> TraceWorkload(const std::vector<TracePod>& pods);

Result<std::vector<SimJob>> ParseJsonlWorkload(const std::string& text, const std::string& source);
Result<std::vector<SimJob>> LoadJsonlWorkload(const std::string& path);

}  // namespace gpool::sim
