// gpool-probe: the built-in probe job that `gpool probe` runs on every node
// (client/probe/probe_args.h for the command line). Prints one JSON line per
// result to stdout (probe_line.h); diagnostics go to stderr.
#include <iostream>
#include <string>
#include <vector>

#include "client/probe/gpu_probe.h"
#include "client/probe/net_probe.h"
#include "client/probe/probe_args.h"
#include "client/probe/probe_line.h"

namespace {

int Network(const gpool::probe::NetworkProbeOptions& options) {
  using namespace gpool::probe;
  bool printed = false;
  auto result = RunNetworkProbe(options, [&](const NetworkProbeResult& r) {
    std::cout << FormatNetworkLine({r.measurement.bandwidth_mib_s, r.measurement.latency_us, r.peer}) << std::endl;
    printed = true;
  });
  if (!result.ok()) {
    std::cerr << "gpool-probe: " << result.status().ToString() << "\n";
    std::cout << FormatErrorLine("network", result.status().ToString()) << std::endl;
    return 1;
  }
  if (!result->served.ok()) {
    // The predecessor's problem, not this node's: its own task reports it.
    std::cerr << "gpool-probe: serving the previous ring member: " << result->served.ToString() << "\n";
  }
  return printed ? 0 : 1;
}

int Gpu(const gpool::probe::GpuProbeOptions& options) {
  using namespace gpool::probe;
  auto api = LoadCudaDriver();
  if (!api.ok()) {
    std::cout << FormatErrorLine("gpu", api.status().message()) << std::endl;
    // No driver is not a failure of the probe: the machine has nothing to measure.
    return api.status().code() == gpool::StatusCode::kNotFound ? 0 : 1;
  }
  auto lines = RunGpuProbe(*api, options);
  if (!lines.ok()) {
    std::cerr << "gpool-probe: " << lines.status().ToString() << "\n";
    std::cout << FormatErrorLine("gpu", lines.status().ToString()) << std::endl;
    return 1;
  }
  for (const auto& line : *lines) std::cout << FormatGpuLine(line) << "\n";
  std::cout.flush();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpool::probe;
  auto args = ParseProbeArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!args.ok()) {
    std::cerr << "gpool-probe: " << args.status().ToString() << "\n" << ProbeUsage();
    return 2;
  }
  if (args->help) {
    std::cout << ProbeUsage();
    return 0;
  }
  return args->kind == "network" ? Network(args->network) : Gpu(args->gpu);
}
