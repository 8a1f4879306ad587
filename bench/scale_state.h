// The offline half of gpool-bench-scale (issue 49): the state a large
// cluster has after months of use, built in-process with the commands a
// coordinator would have committed for it (ClusterState::Apply, times from a
// fake clock), and written as a snapshot file that `gpool admin snapshot
// restore` (gpool-coordinator --restore-snapshot) writes into each replica's
// data dir before the replicas start. Submitting a million jobs through a
// live cluster would take hours on the bench machine; applying the same
// commands directly takes a minute, and the state is the one a live cluster
// would reach (every record derived on apply: usage records, rollups,
// indexes).
#pragma once

#include <cstdint>
#include <string>

namespace gpool::bench {

struct ScaleStateOptions {
  std::string spec_path;       // the fleet's node spec (worker/examples/node-8gpu.yaml)
  uint32_t nodes = 12'500;     // fleet nodes, named as the fleet workers name them
  uint32_t nodes_per_fleet = 6'250;  // nodes per fleet worker (fleet-a-0001..., fleet-b-0001...)
  uint64_t jobs = 1'000'000;   // finished one-GPU jobs
  uint32_t usage_gpus = 10'000;  // the GPUs they ran on (the first nodes' GPUs)
  uint32_t usage_days = 90;    // ending now: every job ran in the last `usage_days`
  int64_t now_ms = 0;          // wall clock, Unix ms: the end of the period and the file's taken_ms
};

struct ScaleStateReport {
  uint64_t index = 0;          // the state's applied index (the file's header index)
  uint64_t jobs = 0;
  uint64_t nodes = 0;
  uint64_t usage_records = 0;
  uint64_t state_bytes = 0;    // the image
  double build_s = 0;          // applying every command
  double encode_s = 0;         // ClusterState::Snapshot
  uint64_t rss_bytes = 0;      // the building process's VmRSS with the state built (the state alone, in-process)
  uint64_t peak_rss_bytes = 0; // its VmHWM once the image is encoded too
};

// The --node-name of fleet worker `fleet` (0: "fleet-a"); its nodes are
// named from it as topology::MakeFleetNodes names them ("fleet-a-0001"...).
std::string ScaleFleetBase(uint32_t fleet);

// Builds the state and writes it to `path` as a format 2 snapshot file.
// Exits the process with a message on any error (a bench has nothing to
// measure without its state).
ScaleStateReport BuildScaleSnapshot(const ScaleStateOptions& options, const std::string& path);

}  // namespace gpool::bench
