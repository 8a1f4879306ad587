// Exclusive whole cores (Resources::exclusive_cores), HBox's static CPU
// manager: a task asking for them gets cpu_milli / 1000 CPU ids of its node
// that no other task holds. Ids come from the node's NUMA inventory
// (NumaSlot::cpu_ids_free, the spec's cpulists less what tasks hold), so a
// node whose spec lists no cpulist offers none.
//
// Where the ids come from: the task's NUMA node when its NUMA policy placed
// it on one (single-numa-node: there or nowhere; best-effort: there if it
// has room, else as for no policy); otherwise the NUMA node with the fewest
// free ids that still holds them all (packing, so whole NUMA nodes stay free
// for single-numa-node work); otherwise, with no policy asking for one NUMA
// node, the lowest free ids across NUMA nodes in order.
//
// Pure functions over values: the session calls them on its working copy.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "topology/cluster_view.h"

namespace gpool::scheduler {

// How many ids a request takes: 0 when it does not ask for exclusive cores.
uint32_t ExclusiveCoresWanted(const Resources& need);

// The ids to hand out (sorted), or nullopt when the node cannot give them.
// `numa_node`: the NUMA node the task was placed on (-1: none);
// `single_node`: the ids must all come from one NUMA node.
std::optional<std::vector<uint32_t>> PickExclusiveCpus(const std::vector<topology::NumaSlot>& numa,
                                                       int32_t numa_node, bool single_node, uint32_t count);

// Takes `ids` out of (add = false) or puts them back into (add = true) the
// free ids of the NUMA nodes that own them (by the slots' inventories).
void MarkExclusiveCpus(std::vector<topology::NumaSlot>& numa, const std::vector<uint32_t>& ids, bool add,
                       const std::vector<topology::NumaSlot>& inventory);

}  // namespace gpool::scheduler
