// The worker's version string, reported in RegisterNode and --version.
#pragma once

namespace gpool::worker {

#ifdef GPOOL_WORKER_VERSION
inline constexpr const char* kWorkerVersion = GPOOL_WORKER_VERSION;
#else
inline constexpr const char* kWorkerVersion = "0.0.0-dev";
#endif

}  // namespace gpool::worker
