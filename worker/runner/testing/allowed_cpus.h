// Test support: the CPUs this process may run on, for tests that pin tasks
// to real cores (cpusets, exclusive cores) and need two of them.
#pragma once

#include <sched.h>

#include <cstdint>
#include <vector>

namespace gpool::worker {

// The first `n` CPUs in this process's affinity mask (fewer if it has fewer;
// empty if the mask cannot be read).
inline std::vector<uint32_t> FirstAllowedCpus(size_t n) {
  std::vector<uint32_t> out;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return out;
  for (uint32_t cpu = 0; cpu < CPU_SETSIZE && out.size() < n; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) out.push_back(cpu);
  }
  return out;
}

}  // namespace gpool::worker
