// How `gpool nodes` and `gpool node show` render what issue 50 added to a
// node: GPUs advertised as time-sliced replicas, and the CPU ids per NUMA
// node that tasks hold as exclusive whole cores.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "protocol/messages_nodes.h"

namespace gpool {

// The nodes table's GPUS cell: "1/2", and with time-sliced GPUs the
// replicas held of those advertised: "1/2 (3/4 slices)".
std::string NodeGpusCell(const NodeSummary& node);

// A device's time-slicing for its SHARING cell: "time-sliced 3/4 (no memory
// isolation)" (replicas held of advertised); "" for an ordinary GPU.
std::string TimeSliceCell(const DeviceSummary& device);

// The NUMA table of `gpool node show`; with the nodes' cpulists known, their
// CPUs and the ids held as exclusive cores ("-" none).
std::string FormatNumaTable(const NodeSummary& node, std::string_view indent);

}  // namespace gpool
