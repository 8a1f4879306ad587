// LocalCluster: a real coordinator and real workers on 127.0.0.1 with
// ephemeral ports, in a temp dir, for end-to-end tests. Binaries come from
// the build tree (paths compiled in by CMake).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/process.h"

namespace gpool::testing {

struct LocalClusterOptions {
  int workers = 2;
  int gpus_per_worker = 4;
  std::vector<std::string> coordinator_flags = {"--heartbeat-ms", "200", "--node-timeout-ms", "3000",
                                                "--preempt-grace-ms", "2000"};
};

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options = {});
  ~LocalCluster();

  // Starts the coordinator; the first start picks ephemeral ports, later
  // starts reuse them so workers and clients find it again.
  void StartCoordinator();
  void KillCoordinator();  // SIGKILL: no chance to clean up
  void StartWorker(int index);
  void StartWorkers();

  Process* coordinator() { return coordinator_.get(); }
  Process* worker(int index) { return workers_.at(index).get(); }
  const std::string& client_endpoint() const { return client_endpoint_; }
  const std::string& worker_endpoint() const { return worker_endpoint_; }
  const std::string& dir() const { return dir_.path(); }
  std::string WorkerDataDir(int index) const;
  std::string NodeName(int index) const { return "node-" + std::to_string(index); }

  // Runs the gpool CLI against this cluster.
  CommandResult Cli(std::vector<std::string> args);
  // True once `gpool nodes` reports every worker Ready.
  bool AllNodesReady();

 private:
  LocalClusterOptions options_;
  TempDir dir_;
  std::string client_endpoint_ = "tcp://127.0.0.1:0";
  std::string worker_endpoint_ = "tcp://127.0.0.1:0";
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> workers_;
  int coordinator_starts_ = 0;
};

}  // namespace gpool::testing
