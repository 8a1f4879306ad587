// A worker that dies is marked NotReady after the node timeout; when it comes
// back without its task, the task is Lost, the job fails, and the GPUs it held
// are free again. Another job then runs on the same node.
#include <signal.h>
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
  // Processes a test saw outlive their task: killed by PID at the end,
  // should the test stop before its restarted worker did it.
  void TearDown() override {
    for (int64_t pid : survivors_) kill(static_cast<pid_t>(pid), SIGKILL);
  }
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
  std::vector<int64_t> survivors_;
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
  survivors_.push_back(grandchild);

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

// A task that kills its own worker (kill -9 $PPID) leaves its GPUs held,
// not given out twice: while the node is away the coordinator keeps them
// the task's, and a job that needs them waits; the restarted worker kills
// what is left of the task before it registers, and only then do they go
// to the waiting job.
TEST_F(NodeLossTest, ATaskThatKillsItsWorkerNeverHasItsGpusGivenOutTwice) {
  if (geteuid() != 0 || (!std::filesystem::exists("/sys/fs/cgroup/freezer/cgroup.procs") &&
                         !std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers"))) {
    GTEST_SKIP() << "task cgroups need root and a cgroup hierarchy";
  }
  ASSERT_NO_FATAL_FAILURE(StartOneNode());
  const std::string pid_file = cluster_->dir() + "/survivor.pid";
  JobSpec killer;
  killer.name = "kills-its-worker";
  TaskGroupSpec group;
  group.command = {"sh", "-c",
                   "sh -c 'echo $$ > " + pid_file + "; while :; do sleep 1; done' & "
                   "while [ ! -s " + pid_file + " ]; do sleep 0.1; done; kill -9 $PPID; exec sleep 1000"};
  group.resources.gpus = 2;
  killer.tasks.push_back(group);
  auto first = client_->Submit(killer, "");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  int64_t survivor = 0;
  ASSERT_TRUE(WaitFor([&] { return static_cast<bool>(std::ifstream(pid_file) >> survivor); }, 20s));
  survivors_.push_back(survivor);
  ASSERT_TRUE(WaitFor([&] { return !cluster_->worker(0)->Running(); }, 10s)) << "the task killed its worker";

  JobSpec whole_node;
  whole_node.name = "needs-every-gpu";
  group.command = {"true"};
  group.resources.gpus = 4;
  whole_node.tasks.push_back(group);
  auto second = client_->Submit(whole_node, "");
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(WaitFor([&] { return NodeState(*cluster_, cluster_->NodeName(0)) == "NotReady"; }, 15s));
  auto waiting = client_->GetJob(JobId(second->job_id));
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->summary.state, "Pending") << "the lost task's GPUs went out while it may still run";
  EXPECT_TRUE(Running(survivor));

  cluster_->StartWorker(0);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(second->job_id));
        return detail.ok() && detail->summary.state == "Succeeded";
      },
      30s));
  EXPECT_FALSE(Running(survivor)) << "the killer's child " << survivor << " ran beside the next job";
  auto lost = client_->GetJob(JobId(first->job_id));
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(lost->tasks[0].state, "Lost");
}

}  // namespace
}  // namespace gpool::testing
