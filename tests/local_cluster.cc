#include "tests/local_cluster.h"

#include <filesystem>
#include <stdexcept>

namespace gpool::testing {

LocalCluster::LocalCluster(LocalClusterOptions options) : options_(std::move(options)) {
  workers_.resize(options_.workers);
}

LocalCluster::~LocalCluster() {
  // Workers first, gracefully, so they stop their tasks.
  for (auto& worker : workers_) {
    if (worker) worker->Stop(15, std::chrono::seconds(10));
  }
  if (coordinator_) coordinator_->Stop(15, std::chrono::seconds(5));
}

void LocalCluster::StartCoordinator() {
  const std::string data_dir = dir_.Join("coordinator");
  std::filesystem::remove(data_dir + "/endpoints");
  std::vector<std::string> argv = {GPOOL_COORDINATOR_BIN, "--data-dir",    data_dir,
                                   "--client-addr",       client_endpoint_, "--worker-addr",
                                   worker_endpoint_};
  argv.insert(argv.end(), options_.coordinator_flags.begin(), options_.coordinator_flags.end());
  coordinator_ = std::make_unique<Process>(
      "coordinator", argv, dir_.Join("coordinator-" + std::to_string(coordinator_starts_++) + ".log"));
  bool up = WaitFor([&] { return ReadEndpoints(data_dir).size() == 2 || !coordinator_->Running(); },
                    std::chrono::seconds(20));
  auto endpoints = ReadEndpoints(data_dir);
  if (!up || endpoints.size() != 2) {
    throw std::runtime_error("coordinator did not start: " + coordinator_->Log());
  }
  client_endpoint_ = endpoints["client"];
  worker_endpoint_ = endpoints["worker"];
}

void LocalCluster::KillCoordinator() { coordinator_->Kill(); }

std::string LocalCluster::WorkerDataDir(int index) const { return dir_.Join("worker-" + std::to_string(index)); }

void LocalCluster::StartWorker(int index) {
  const std::string name = NodeName(index);
  const std::string spec_path = dir_.Join(name + ".yaml");
  WriteFile(spec_path, "name: " + name + "\ncpus: 32\nmemory: 256Gi\ngpus:\n  count: " +
                           std::to_string(options_.gpus_per_worker) + "\n  model: A100-SXM4-80GB\n  memory: 80Gi\n");
  std::vector<std::string> argv = {GPOOL_WORKER_BIN, "--coordinator", worker_endpoint_, "--spec", spec_path,
                                   "--data-dir", WorkerDataDir(index)};
  workers_.at(index) = std::make_unique<Process>(name, argv, dir_.Join(name + ".log"));
}

void LocalCluster::StartWorkers() {
  for (int i = 0; i < options_.workers; ++i) StartWorker(i);
}

CommandResult LocalCluster::Cli(std::vector<std::string> args) {
  std::vector<std::string> argv = {GPOOL_CLI_BIN, "--coordinator", client_endpoint_};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

bool LocalCluster::AllNodesReady() {
  CommandResult nodes = Cli({"nodes"});
  if (nodes.exit_code != 0) return false;
  for (int i = 0; i < options_.workers; ++i) {
    const std::string name = NodeName(i);
    auto pos = nodes.out.find(name);
    if (pos == std::string::npos) return false;
    auto line_end = nodes.out.find('\n', pos);
    std::string line = nodes.out.substr(pos, line_end - pos);
    if (line.find("Ready") == std::string::npos || line.find("NotReady") != std::string::npos) return false;
  }
  return true;
}

}  // namespace gpool::testing
