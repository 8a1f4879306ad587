// A worker that dies is marked NotReady after the node timeout; when it comes
// back without its task, the task is Lost, the job fails, and the GPUs it held
// are free again. Another job then runs on the same node.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "client/client.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

std::string NodeState(LocalCluster& cluster, const std::string& node) {
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  auto client = Client::Connect(options);
  if (!client.ok()) return "";
  auto nodes = (*client)->ListNodes();
  if (!nodes.ok()) return "";
  for (const auto& n : nodes->nodes) {
    if (n.name == node) return n.state;
  }
  return "";
}

class NodeLossTest : public ::testing::Test {
 protected:
  // One coordinator, one worker and a client of them.
  void StartOneNode() {
    LocalClusterOptions options;
    options.workers = 1;
    cluster_ = std::make_unique<LocalCluster>(options);
    cluster_->StartCoordinator();
    cluster_->StartWorkers();
    ASSERT_TRUE(WaitFor([&] { return cluster_->AllNodesReady(); }, 30s));
    ClientOptions client_options;
    client_options.endpoints = cluster_->client_endpoint();
    auto client = Client::Connect(client_options);
    ASSERT_TRUE(client.ok());
    client_ = std::move(client).value();
  }
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(NodeLossTest, DeadWorkerGoesNotReadyAndItsTaskIsLostWhenItReturns) {
  ASSERT_NO_FATAL_FAILURE(StartOneNode());
  JobSpec spec;
  spec.name = "long";
  TaskGroupSpec group;
  group.command = {"sleep", "300"};
  group.resources.gpus = 2;
  spec.tasks.push_back(group);
  auto job = client_->Submit(spec, "");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  int64_t pid = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(job->job_id));
        if (!detail.ok() || detail->tasks[0].state != "Running") return false;
        pid = detail->tasks[0].pid;
        return true;
      },
      20s));

  // SIGKILL the worker: its task dies with it (parent-death signal).
  cluster_->worker(0)->Kill();
  EXPECT_TRUE(WaitFor([&] { return !PidAlive(static_cast<pid_t>(pid)); }, 10s));
  ASSERT_TRUE(WaitFor([&] { return NodeState(*cluster_, cluster_->NodeName(0)) == "NotReady"; }, 15s));
  // Until the node reports back, the coordinator cannot know the task is gone.
  auto while_down = client_->GetJob(JobId(job->job_id));
  ASSERT_TRUE(while_down.ok());
  EXPECT_EQ(while_down->tasks[0].state, "Running");

  cluster_->StartWorker(0);
  ASSERT_TRUE(WaitFor([&] { return NodeState(*cluster_, cluster_->NodeName(0)) == "Ready"; }, 20s));
  auto failed = client_->GetJob(JobId(job->job_id));
  ASSERT_TRUE(WaitFor(
      [&] {
        failed = client_->GetJob(JobId(job->job_id));
        return failed.ok() && failed->summary.state == "Failed";
      },
      10s));
  EXPECT_EQ(failed->tasks[0].state, "Lost");
  EXPECT_NE(failed->summary.reason.find("lost"), std::string::npos) << failed->summary.reason;

  // The node's GPUs are free again and new work runs there.
  spec.name = "after";
  spec.tasks[0].command = {"true"};
  spec.tasks[0].resources.gpus = 4;
  auto after = client_->Submit(spec, "");
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(after->job_id));
        return detail.ok() && detail->summary.state == "Succeeded";
      },
      20s));
}

// Running, not a zombie waiting for its new parent to reap it.
bool Running(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

// The reproduction: a task's grandchild outlives its worker's
// kill -9 (only the task's first process dies with the worker). The task
// ran in a cgroup, so the restarted worker kills what is left before it
// registers, and the GPUs go to the next job only with nothing of the old
// task running.
TEST_F(NodeLossTest, WhatATaskLeftRunningIsKilledBeforeItsRestartedWorkerRegisters) {
  if (geteuid() != 0 || (!std::filesystem::exists("/sys/fs/cgroup/freezer/cgroup.procs") &&
                         !std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers"))) {
    GTEST_SKIP() << "task cgroups need root and a cgroup hierarchy";
  }
  ASSERT_NO_FATAL_FAILURE(StartOneNode());

  const std::string pid_file = cluster_->dir() + "/grandchild.pid";
  JobSpec spec;
  spec.name = "escapes";
  TaskGroupSpec group;
  group.command = {"sh", "-c", "sh -c 'echo $$ > " + pid_file + "; while :; do sleep 1; done'; echo x"};
  group.resources.gpus = 2;
  spec.tasks.push_back(group);
  auto job = client_->Submit(spec, "");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  int64_t grandchild = 0;
  ASSERT_TRUE(WaitFor([&] { return static_cast<bool>(std::ifstream(pid_file) >> grandchild); }, 20s));

  cluster_->worker(0)->Kill();
  EXPECT_TRUE(Running(grandchild)) << "the parent-death signal reaches the first process only";
  cluster_->StartWorker(0);
  // The task is Lost once the new worker has registered, which it does only
  // after emptying what the old one left.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(job->job_id));
        return detail.ok() && detail->summary.state == "Failed" && detail->tasks[0].state == "Lost";
      },
      30s));
  EXPECT_FALSE(Running(grandchild)) << "grandchild " << grandchild << " of the lost task still runs";

  spec.name = "next";
  spec.tasks[0].command = {"true"};
  auto next = client_->Submit(spec, "");
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(next->job_id));
        return detail.ok() && detail->summary.state == "Succeeded";
      },
      20s));
}

}  // namespace
}  // namespace gpool::testing
