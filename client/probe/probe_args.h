// gpool-probe's command line, parsed into options (pure, so it is tested
// without running a probe):
//
//   gpool-probe network --rank I --ring HOST:PORT,... [--bytes N] [--rounds N]
//                       [--pings N] [--timeout-ms N]
//   gpool-probe gpu [--bytes N] [--rounds N]
//
// Sizes are bytes, or with a binary suffix: 64Mi, 1Gi, 512Ki. Flags take
// "--flag VALUE" or "--flag=VALUE".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "client/probe/gpu_probe.h"
#include "client/probe/net_probe.h"
#include "protocol/base/status.h"

namespace gpool::probe {

struct ProbeArgs {
  std::string kind;  // "network" or "gpu"
  NetworkProbeOptions network;
  GpuProbeOptions gpu;
  bool help = false;
};

// `args` are the arguments after the program name. InvalidArgument naming
// the flag for anything wrong: unknown flags, missing values, values out of
// range, a missing --rank or --ring, a rank outside the ring.
Result<ProbeArgs> ParseProbeArgs(const std::vector<std::string>& args);

std::string ProbeUsage();

}  // namespace gpool::probe
