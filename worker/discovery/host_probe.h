// Discovers the host's CPUs, memory, NUMA nodes and network interfaces from
// /sys and /proc. The roots are options so tests can point the probe at a
// fake tree.
//
//   CPUs:   <sys>/devices/system/cpu/online ("0-63,128-191"), else sysconf
//   memory: MemTotal in <proc>/meminfo
//   NUMA:   <sys>/devices/system/node/node<N>/{cpulist,meminfo}, when present;
//           the cpulist is kept as NumaInfo.cpus for pinning tasks
//   NICs:   <sys>/class/net/<if> that have a device link (physical), with
//           speed (Mb/s) rounded down to Gb/s; leaf_switch is unknown here
//
// Thread-safety: stateless; call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/types.h"

namespace gpool::worker {

struct HostProbeOptions {
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
};

struct HostInfo {
  std::string hostname;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  std::vector<NumaInfo> numa;
  std::vector<NicInfo> nics;
};

// Fails (IoError) only when CPU count or memory cannot be determined.
Result<HostInfo> ProbeHost(const HostProbeOptions& options = {});

// Counts the CPUs in a Linux cpulist ("0-3,8,10-11" -> 7); -1 if malformed.
int64_t CountCpuList(std::string_view list);

// The machine's hostname, or "localhost" when it cannot be read.
std::string LocalHostname();

}  // namespace gpool::worker
