#include "worker/discovery/discover.h"

#include "protocol/validate.h"
#include "topology/node_spec_file.h"
#include "worker/log.h"

namespace gpool::worker {

Result<NodeSpec> DiscoverNode(const DiscoveryOptions& options) {
  auto log = OrDefault(options.logger);
  const std::string hostname = LocalHostname();
  if (!options.spec_path.empty()) {
    topology::NodeSpecFileOptions file_options;
    file_options.name_override = options.node_name;
    file_options.default_name = hostname;
    file_options.default_hostname = hostname;
    auto spec = topology::LoadNodeSpecFile(options.spec_path, file_options);
    if (spec.ok()) {
      log->info("node spec loaded source={} node={} gpus={} cpu_milli={} memory_mib={}", Q(options.spec_path),
                spec->name, spec->gpus.size(), spec->cpu_milli, spec->memory_mib);
    }
    return spec;
  }

  auto host = ProbeHost(options.host);
  if (!host.ok()) return host.status().WithContext("probing the host");
  NodeSpec spec;
  spec.name = options.node_name.empty() ? host->hostname : options.node_name;
  spec.hostname = host->hostname;
  spec.cpu_milli = host->cpu_milli;
  spec.memory_mib = host->memory_mib;
  spec.numa = host->numa;
  spec.nics = host->nics;

  auto gpus = ProbeNvmlGpus(options.nvml);
  if (gpus.ok()) {
    spec.gpus = std::move(gpus.value());
    log->info("nvml probe ok gpus={}", spec.gpus.size());
    if (options.mig_dynamic) {
      for (auto& gpu : spec.gpus) {
        if (gpu.mig_mode == "static" && gpu.mig_instances.empty()) {
          gpu.mig_mode = "dynamic";
          gpu.mig_enabled = true;  // a real GPU cannot leave MIG mode without a reset
          log->info("gpu offered for dynamic MIG index={} model={}", gpu.index, Q(gpu.model));
        }
      }
    }
  } else {
    if (gpus.status().code() == StatusCode::kNotFound) {
      log->info("no NVIDIA GPUs reason={}", Q(gpus.status().message()));
    } else {
      log->warn("nvml probe failed error={}", Q(gpus.status().ToString()));
    }
    auto vendor = options.vendor_tools ? ProbeVendorGpus(options.vendor)
                                       : Result<VendorProbeResult>(Status::NotFound("vendor tools off"));
    if (vendor.ok()) {
      spec.gpus = std::move(vendor->gpus);
      log->info("vendor tool probe ok vendor={} gpus={}", ProfileOf(vendor->vendor).name, spec.gpus.size());
    } else if (vendor.status().code() == StatusCode::kNotFound) {
      log->info("no NVIDIA GPUs, running as a CPU-only node reason={}", Q(vendor.status().message()));
    } else {
      return vendor.status();
    }
  }
  GPOOL_RETURN_IF_ERROR(ValidateNodeSpec(spec).WithContext("discovered node"));
  log->info("node discovered node={} gpus={} cpu_milli={} memory_mib={} numa_nodes={} nics={}", spec.name,
            spec.gpus.size(), spec.cpu_milli, spec.memory_mib, spec.numa.size(), spec.nics.size());
  return spec;
}

}  // namespace gpool::worker
