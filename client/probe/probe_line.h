// The one line of JSON a probe task prints to stdout per result, written by
// gpool-probe and read back from the task's log by `gpool probe`: the schema
// lives here so both sides agree.
//
//   {"probe":"network","bandwidth_mib_s":2950.1,"latency_us":41.2,"peer":"host-b:29011"}
//   {"probe":"gpu","device":0,"name":"NVIDIA H100","h2d_mib_s":24001.5,"d2h_mib_s":25110.0,
//    "bandwidth_mib_s":24001.5}                       (one per GPU; bandwidth = the slower way)
//   {"probe":"network","error":"..."}               (the probe could not measure)
//   {"probe":"gpu","error":"no CUDA driver"}
#pragma once

#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::probe {

struct NetworkLine {
  double bandwidth_mib_s = 0;  // one-way, to `peer`: the best of the rounds
  double latency_us = 0;       // median round trip
  std::string peer;            // HOST:PORT of the ring's next member
};

struct GpuLine {
  int device = 0;  // CUDA device ordinal (of the visible devices)
  std::string name;
  double h2d_mib_s = 0;  // host to device
  double d2h_mib_s = 0;  // device to host
};

std::string FormatNetworkLine(const NetworkLine& line);
std::string FormatGpuLine(const GpuLine& line);
// `kind` is "network" or "gpu".
std::string FormatErrorLine(std::string_view kind, std::string_view error);

// One node's measurement, from its task's output.
struct NodeMeasurement {
  double bandwidth_mib_s = 0;  // network: the line's; gpu: the slowest GPU's slower direction
  double latency_us = 0;       // network only
  std::string detail;          // network: the peer; gpu: "N GPUs"
};

// Reads a probe task's log (stdout and stderr mixed; other lines are
// skipped) for its `kind` lines. FailedPrecondition with the probe's own
// message when it printed an error line; NotFound when there is no line of
// that kind; Malformed when a line of that kind lacks its numbers.
Result<NodeMeasurement> ParseProbeOutput(std::string_view kind, std::string_view log);

}  // namespace gpool::probe
