// Fleet mode end to end: a real coordinator and ONE `gpool-worker --simulate
// 20` process; the coordinator must see 20 separate nodes, place work on
// them and hear back from simulated tasks.
#include <gtest/gtest.h>

#include <set>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kNodes = 20;

TEST(FleetTest, TwentySimulatedNodesInOneProcessRegisterAndRunJobs) {
  LocalClusterOptions options;
  options.workers = 0;
  // Each simulated node makes a fresh key at start: a lab fleet, admitted on first use.
  options.coordinator_flags.insert(options.coordinator_flags.end(), {"--worker-enrolment", "first-use"});
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  const std::string spec = cluster.dir() + "/sim.yaml";
  WriteFile(spec, "name: sim\ncpus: 16\nmemory: 64Gi\ngpus: {count: 4, model: A100-SXM4-80GB, memory: 80Gi}\n");
  Process fleet("fleet",
                {GPOOL_WORKER_BIN, "--simulate", std::to_string(kNodes), "--spec", spec, "--coordinator",
                 cluster.worker_endpoint(), "--data-dir", cluster.dir() + "/fleet", "--coordinator-key",
                 cluster.CoordinatorKeyFiles()},
                cluster.dir() + "/fleet.log");

  ClientOptions client_options;
  client_options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(client_options);
  client_options.timeout_ms = 3000;
  auto client = std::move(Client::Connect(client_options).value());

  std::set<std::string> ready;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto nodes = client->ListNodes();
        if (!nodes.ok()) return false;
        ready.clear();
        for (const auto& node : nodes->nodes) {
          if (node.state == "Ready") ready.insert(node.name);
        }
        return ready.size() == kNodes;
      },
      30s))
      << "ready=" << ready.size() << "\n"
      << fleet.Log();
  EXPECT_EQ(*ready.begin(), "sim-0001");
  EXPECT_EQ(*ready.rbegin(), "sim-0020");
  ASSERT_TRUE(fleet.Running());

  // Four tasks that each want a whole node's GPUs land on four nodes and
  // stay running (a simulated `sleep 600`).
  auto wide = client->Submit(ShellJob("wide", 4, "sleep 600", 4), "");
  ASSERT_TRUE(wide.ok()) << wide.status().ToString();
  Result<GetJobReply> job = Status::NotFound("never fetched");
  ASSERT_TRUE(WaitFor(
      [&] {
        job = client->GetJob(JobId(wide->job_id));
        if (!job.ok() || job->tasks.size() != 4) return false;
        // The job is Running once one task is; wait for all four.
        for (const auto& task : job->tasks) {
          if (task.state != "Running") return false;
        }
        return true;
      },
      30s))
      << (job.ok() ? job->summary.state : job.status().ToString()) << "\n"
      << fleet.Log();
  std::set<std::string> used;
  for (const auto& task : job->tasks) {
    EXPECT_EQ(task.state, "Running");
    EXPECT_EQ(task.node.rfind("sim-", 0), 0u) << task.node;
    used.insert(task.node);
  }
  EXPECT_EQ(used.size(), 4u);

  // A short job runs to completion, and its log says it was simulated.
  auto quick = client->Submit(ShellJob("quick", 1, "echo hi"), "");
  ASSERT_TRUE(quick.ok()) << quick.status().ToString();
  ASSERT_TRUE(WaitFor(
      [&] {
        job = client->GetJob(JobId(quick->job_id));
        return job.ok() && job->summary.state == "Succeeded";
      },
      30s))
      << fleet.Log();
  auto log = client->GetTaskLog(JobId(quick->job_id), 0, 4096);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_NE(log->data.find("simulating"), std::string::npos) << log->data;

  // Cancelling stops the simulated tasks like real ones.
  ASSERT_TRUE(client->CancelJob(JobId(wide->job_id), 1000).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        job = client->GetJob(JobId(wide->job_id));
        return job.ok() && job->summary.state == "Cancelled";
      },
      30s))
      << (job.ok() ? job->summary.state : job.status().ToString());

  // SIGTERM stops the whole fleet cleanly.
  EXPECT_EQ(fleet.Stop(15), 0) << fleet.Log();
}

TEST(FleetTest, BadSimulateValuesExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--simulate", "0", "--spec", "x.yaml"},
           {"--simulate", "10001", "--spec", "x.yaml"},
           {"--simulate", "20"},
       }) {
    std::vector<std::string> argv = {GPOOL_WORKER_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult result = RunCommand(argv);
    EXPECT_EQ(result.exit_code, 2) << args[1] << ": " << result.err;
    EXPECT_NE(result.err.find("--simulate"), std::string::npos) << result.err;
  }
}

}  // namespace
}  // namespace gpool::testing
