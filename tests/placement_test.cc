// Per-job placement policy on a real cluster (issue 50): a job that asks for
// spread nodes gets one task per node, one that asks for binpack gets one
// node; GPU shares that ask for spread get a device each, binpack one
// device. Every task holds its place until the test releases it, so what is
// checked is where the tasks ran side by side. A bad policy is a typed error.
//
// Three workers with two simulated 80 GiB GPUs each.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

class PlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalClusterOptions options;
    options.workers = 3;
    options.gpus_per_worker = 2;
    cluster_ = std::make_unique<LocalCluster>(std::move(options));
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_));
  }

  // `replicas` tasks that wait for the file `release` (at most 30 s).
  JobSpec HeldJob(const std::string& name, uint32_t replicas, const std::string& release) {
    const std::string path = cluster_->dir() + "/" + release;
    return ShellJob(name, 1,
                    "i=0; while [ ! -e " + path + " ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; [ -e " +
                        path + " ]",
                    replicas);
  }

  uint64_t Submit(const JobSpec& spec) {
    auto reply = client_->Submit(spec, "");
    EXPECT_TRUE(reply.ok()) << spec.name << ": " << reply.status().ToString();
    return reply.ok() ? reply->job_id : 0;
  }

  // The job's tasks once every one runs; empty if they do not in 20 s.
  std::vector<TaskInfo> Running(uint64_t job) {
    std::vector<TaskInfo> tasks;
    WaitFor(
        [&] {
          auto reply = client_->GetJob(JobId(job));
          if (!reply.ok()) return false;
          for (const auto& task : reply->tasks) {
            if (task.state != "Running") return false;
          }
          tasks = reply->tasks;
          return !tasks.empty();
        },
        20s);
    return tasks;
  }

  void Release(const std::string& name, uint64_t job) {
    std::ofstream(cluster_->dir() + "/" + name).put('\n');
    EXPECT_TRUE(WaitFor(
        [&] {
          auto reply = client_->GetJob(JobId(job));
          return reply.ok() && reply->summary.state == "Succeeded";
        },
        30s))
        << cluster_->Cli({"job", std::to_string(job)}).out;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

std::set<std::string> NodesOf(const std::vector<TaskInfo>& tasks) {
  std::set<std::string> nodes;
  for (const auto& task : tasks) nodes.insert(task.node);
  return nodes;
}

std::set<uint32_t> GpusOf(const std::vector<TaskInfo>& tasks) {
  std::set<uint32_t> gpus;
  for (const auto& task : tasks) gpus.insert(task.gpu_indices.begin(), task.gpu_indices.end());
  return gpus;
}

TEST_F(PlacementTest, SpreadAndBinpackJobsPlaceTheirNodesAndGpusAsAsked) {
  // Nodes: spread puts three one-GPU tasks on three nodes, binpack two on one.
  JobSpec spread = HeldJob("spread", 3, "release-spread");
  spread.node_policy = "spread";
  const uint64_t spread_id = Submit(spread);
  const auto spread_tasks = Running(spread_id);
  ASSERT_EQ(spread_tasks.size(), 3u) << cluster_->Cli({"job", std::to_string(spread_id)}).out;
  EXPECT_EQ(NodesOf(spread_tasks).size(), 3u) << cluster_->Cli({"job", std::to_string(spread_id)}).out;
  Release("release-spread", spread_id);

  JobSpec binpack = HeldJob("binpack", 2, "release-binpack");
  binpack.node_policy = "binpack";
  const uint64_t binpack_id = Submit(binpack);
  const auto binpack_tasks = Running(binpack_id);
  ASSERT_EQ(binpack_tasks.size(), 2u) << cluster_->Cli({"job", std::to_string(binpack_id)}).out;
  EXPECT_EQ(NodesOf(binpack_tasks).size(), 1u) << cluster_->Cli({"job", std::to_string(binpack_id)}).out;
  Release("release-binpack", binpack_id);

  // GPUs: two 10 GiB shares on one node each time (node binpack); spread
  // gives them a device each, binpack one device.
  for (const std::string policy : {"spread", "binpack"}) {
    JobSpec shares = HeldJob("shares-" + policy, 2, "release-shares-" + policy);
    shares.node_policy = "binpack";
    shares.gpu_policy = policy;
    shares.tasks[0].resources.gpu_memory_mib = 10 * 1024;
    const uint64_t id = Submit(shares);
    const auto tasks = Running(id);
    ASSERT_EQ(tasks.size(), 2u) << policy << ": " << cluster_->Cli({"job", std::to_string(id)}).out;
    EXPECT_EQ(NodesOf(tasks).size(), 1u) << policy;
    EXPECT_EQ(GpusOf(tasks).size(), policy == "spread" ? 2u : 1u)
        << policy << ": " << cluster_->Cli({"job", std::to_string(id)}).out;
    for (const auto& task : tasks) EXPECT_TRUE(task.grant.shared) << policy;
    Release("release-shares-" + policy, id);
  }
}

TEST_F(PlacementTest, AnUnknownPolicyIsATypedErrorAndSubmitsNothing) {
  JobSpec spec = ShellJob("bad-policy", 1, "true");
  spec.node_policy = "scatter";
  auto reply = client_->Submit(spec, "");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reply.status().message(), "spec: node_policy: 'scatter' is not default, binpack or spread");
  const auto cli = cluster_->Cli({"submit", "--name", "bad-gpu-policy", "--gpu-policy", "packed", "--", "true"});
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_NE(cli.err.find("--gpu-policy: 'packed' is not default, binpack or spread"), std::string::npos) << cli.err;
  auto jobs = client_->ListJobs(true, 0);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_TRUE(jobs->jobs.empty());
}

}  // namespace
}  // namespace gpool::testing
