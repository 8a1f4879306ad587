// Linux cpulist strings ("0-3,8,10-11"): the format of
// /sys/devices/system/node/node<N>/cpulist, of Cpus_allowed_list in
// /proc/<pid>/status, and of the node spec's NUMA `cpulist`. The same
// compact range form is what NEURON_RT_VISIBLE_CORES takes, so core lists
// are written with FormatCpuList too.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpool::topology {

// Ids above this are refused: a typo like "0-4000000000" must not allocate
// billions of entries. Linux supports at most 8192 CPUs (CONFIG_NR_CPUS).
inline constexpr uint32_t kMaxCpuId = 65535;

// The ids of a cpulist, sorted and without duplicates; "" is the empty
// list. nullopt when malformed (a reversed range, a non-number, an id above
// kMaxCpuId). A trailing newline is ignored.
std::optional<std::vector<uint32_t>> ParseCpuList(std::string_view list);

// The shortest cpulist for `ids` (any order, duplicates allowed):
// {3, 0, 1, 2, 8} -> "0-3,8".
std::string FormatCpuList(std::vector<uint32_t> ids);

}  // namespace gpool::topology
