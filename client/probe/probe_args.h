// gpool-probe's command line, parsed into options (pure, so it is tested
// without running a probe):
//
//   gpool-probe network --rank I --ring HOST:PORT,... [--bytes N] [--rounds N]
//                       [--pings N] [--timeout-ms N]
//   gpool-probe gpu [--bytes N] [--rounds N]
//
// Sizes are bytes, or with a binary suffix: 64Mi, 1Gi, 512Ki. Flags take
// "--flag VALUE" or "--flag=VALUE". The throttle for tests comes from the
// environment (GPOOL_PROBE_THROTTLE_MIB_S), not from a flag, so a test sets
// it on one worker and every task there inherits it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/probe/gpu_probe.h"
#include "client/probe/net_probe.h"
#include "protocol/base/status.h"

namespace gpool::probe {

inline constexpr char kThrottleEnv[] = "GPOOL_PROBE_THROTTLE_MIB_S";

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

// The throttle's value: unset or empty is none (0); otherwise a positive
// number of MiB/s. InvalidArgument naming the variable for anything else.
Result<double> ParseThrottle(const std::optional<std::string>& value);

std::string ProbeUsage();

}  // namespace gpool::probe
