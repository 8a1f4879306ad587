// The process's open-file limit. Every worker connection, client connection
// and LevelDB table holds a descriptor, and distributions ship a soft limit
// of 1,024: a coordinator for a few thousand nodes, or a fleet simulating
// them, must raise it toward the hard limit (which needs no privilege) or
// start refusing connections once it is reached.
#pragma once

#include <cstdint>

#include "protocol/base/status.h"

namespace gpool {

struct OpenFileLimit {
  uint64_t before = 0;  // the soft limit found (UINT64_MAX: unlimited)
  uint64_t now = 0;     // the soft limit in effect afterwards
  uint64_t hard = 0;    // the hard limit, the most an unprivileged process may raise it to
};

// Raises the soft limit to `wanted`, or to the hard limit where that is
// lower; never lowers it. Fails only if the limits cannot be read.
Result<OpenFileLimit> RaiseOpenFileLimit(uint64_t wanted);

}  // namespace gpool
