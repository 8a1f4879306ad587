// A burst of short jobs on a replicated cluster (issue 46): three real
// coordinators, one `gpool-worker --simulate` fleet of a few hundred nodes,
// and several thousand one-task jobs submitted at once from many clients.
// No node may go NotReady while the burst runs (every node keeps
// heartbeating through it), every job must finish, and every node's CPU,
// memory and task counts must come back to zero.
//
// What it caught: the worker looked up each bind's node hostnames
// (getaddrinfo) on its loop thread; where the DNS server drops a query now
// and then, one lookup in ~25 took 5 s, the fleet's one thread stopped
// heartbeating, every node went NotReady and tasks started ~26 per 5 s.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kBurstNodes = 200;
constexpr int kBurstClients = 16;
constexpr int kBurstJobsPerClient = 200;  // 3,200 jobs

JobSpec BurstJob() {
  JobSpec spec;
  spec.name = "burst";
  TaskGroupSpec group;
  group.name = "main";
  group.replicas = 1;
  group.command = {"true"};
  group.resources = Resources{0, 100, 64};
  spec.tasks.push_back(group);
  return spec;
}

std::unique_ptr<Client> ConnectToBurst(LocalCluster& cluster) {
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(options);
  options.timeout_ms = 5000;
  options.retries = 10;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

TEST(BurstTest, ThousandsOfShortJobsDrainWithEveryNodeReadyAndNothingLeftCounted) {
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 0;
  // Each simulated node makes a fresh key at start: a lab fleet, admitted on first use.
  options.coordinator_flags.insert(options.coordinator_flags.end(), {"--worker-enrolment", "first-use"});
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  const std::string spec = cluster.dir() + "/sim.yaml";
  WriteFile(spec, "name: burst\ncpus: 64\nmemory: 256Gi\ngpus: {count: 8, model: A100-SXM4-80GB, memory: 80Gi}\n");
  Process fleet("fleet",
                {GPOOL_WORKER_BIN, "--simulate", std::to_string(kBurstNodes), "--spec", spec, "--coordinator",
                 cluster.worker_endpoint(), "--data-dir", cluster.dir() + "/fleet", "--coordinator-key",
                 cluster.CoordinatorKeyFiles(), "--log-level", "warn"},
                cluster.dir() + "/fleet.log");
  auto observer = ConnectToBurst(cluster);
  ASSERT_NE(observer, nullptr);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto status = observer->ClusterStatus();
        return status.ok() && status->nodes_ready == kBurstNodes;
      },
      60s))
      << fleet.Log();

  // Watches every node's state from the first submission to the drain's end.
  std::atomic<bool> watching{true};
  std::mutex mu;
  std::set<std::string> went_not_ready;
  std::thread watcher([&] {
    auto client = ConnectToBurst(cluster);
    if (client == nullptr) return;
    while (watching) {
      auto nodes = client->ListNodes();
      if (nodes.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        for (const auto& node : nodes->nodes) {
          if (node.state != "Ready") went_not_ready.insert(node.name + " " + node.state);
        }
      }
      std::this_thread::sleep_for(100ms);
    }
  });

  std::atomic<int> accepted{0}, refused{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kBurstClients; ++c) {
    clients.emplace_back([&] {
      auto client = ConnectToBurst(cluster);
      if (client == nullptr) return;
      for (int j = 0; j < kBurstJobsPerClient; ++j) {
        client->Submit(BurstJob(), "").ok() ? ++accepted : ++refused;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(refused.load(), 0);

  // Every job ends, and no node went NotReady on the way.
  Result<ClusterStatusReply> status = Status::NotFound("never asked");
  const bool drained = WaitFor(
      [&] {
        {
          // A node that left Ready fails the test now, not after the whole wait.
          std::lock_guard<std::mutex> lock(mu);
          if (!went_not_ready.empty()) return true;
        }
        status = observer->ClusterStatus();
        return status.ok() && status->jobs_pending == 0 && status->jobs_running == 0;
      },
      120s);
  watching = false;
  watcher.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_TRUE(went_not_ready.empty()) << went_not_ready.size() << " nodes left Ready, e.g. "
                                        << *went_not_ready.begin() << "\n"
                                        << fleet.Log();
  }
  ASSERT_TRUE(drained) << (status.ok() ? std::to_string(status->jobs_pending) + " pending, " +
                                             std::to_string(status->jobs_running) + " running"
                                       : status.status().ToString())
                       << "\n"
                       << fleet.Log();

  auto jobs = observer->ListJobs(/*include_finished=*/true, 0);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  int succeeded = 0;
  for (const auto& job : jobs->jobs) {
    if (job.name == "burst" && job.state == "Succeeded") ++succeeded;
  }
  EXPECT_EQ(succeeded, accepted.load());

  // What the jobs held is released on every node: counts back to zero.
  auto nodes = observer->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->nodes.size(), static_cast<size_t>(kBurstNodes));
  for (const auto& node : nodes->nodes) {
    EXPECT_EQ(node.state, "Ready") << node.name;
    EXPECT_EQ(node.tasks, 0u) << node.name;
    EXPECT_EQ(node.cpu_milli_used, 0u) << node.name;
    EXPECT_EQ(node.memory_mib_used, 0u) << node.name;
  }
  EXPECT_TRUE(fleet.Running()) << fleet.Log();
}

}  // namespace
}  // namespace gpool::testing
