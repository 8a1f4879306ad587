// A worker that dies is marked NotReady after the node timeout; when it comes
// back without its task, the task is Lost, the job fails, and the GPUs it held
// are free again. Another job then runs on the same node.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"
#include "worker/runner/supervisor_state.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

std::string NodeState(LocalCluster& cluster, const std::string& node) {
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(options);
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
    // These tests follow a task's processes by their host pids, written by
    // the task itself ($$, $!); a task's own PID namespace (issue 31) would
    // hide them. Isolation is tested in task_isolation_test.cc.
    options.worker_flags = {{0, {"--task-isolation", "off"}}};
    cluster_ = std::make_unique<LocalCluster>(options);
    // The client's default wait (5 s), not the helper's shorter one.
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_, ClientOptions{}.timeout_ms));
  }
  // Processes a test saw outlive their task: killed by PID at the end,
  // should the test stop before its restarted worker did it.
  void TearDown() override {
    for (int64_t pid : survivors_) kill(static_cast<pid_t>(pid), SIGKILL);
  }
  // Tasks outlive their worker under their supervisors (worker_restart_test.cc);
  // a task is lost with its node when its supervisor goes too, as on a reboot.
  void KillSupervisor(uint64_t job) {
    auto started = worker::ReadStartRecord(cluster_->WorkerDataDir(0) + "/tasks/" + std::to_string(job) + ".0.0.state");
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_EQ(kill(static_cast<pid_t>(started->supervisor_pid), SIGKILL), 0);
  }
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
  std::vector<int64_t> survivors_;
};

TEST_F(NodeLossTest, ATaskLostWithItsNodeRunsAgainAsItsNextAttemptWhenTheNodeReturns) {
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

  // SIGKILL the worker and the task's supervisor: the task dies with the
  // supervisor (parent-death signal).
  cluster_->worker(0)->Kill();
  ASSERT_NO_FATAL_FAILURE(KillSupervisor(job->job_id));
  EXPECT_TRUE(WaitFor([&] { return !PidAlive(static_cast<pid_t>(pid)); }, 10s));
  ASSERT_TRUE(WaitFor([&] { return NodeState(*cluster_, cluster_->NodeName(0)) == "NotReady"; }, 15s));
  // Until the node reports back, the coordinator cannot know the task is gone.
  auto while_down = client_->GetJob(JobId(job->job_id));
  ASSERT_TRUE(while_down.ok());
  EXPECT_EQ(while_down->tasks[0].state, "Running");

  cluster_->StartWorker(0);
  ASSERT_TRUE(WaitFor([&] { return NodeState(*cluster_, cluster_->NodeName(0)) == "Ready"; }, 20s));
  // The returning worker reports what it found (lost with its supervisor):
  // the default restart policy requeues it, and it runs again as attempt 1.
  auto again = client_->GetJob(JobId(job->job_id));
  ASSERT_TRUE(WaitFor(
      [&] {
        again = client_->GetJob(JobId(job->job_id));
        return again.ok() && again->tasks[0].attempt == 1 && again->tasks[0].state == "Running";
      },
      20s));
  EXPECT_EQ(again->summary.restarts, 1u);
  EXPECT_NE(again->summary.restart_reason.find("lost"), std::string::npos) << again->summary.restart_reason;
  EXPECT_NE(again->tasks[0].pid, pid);
  auto cancelled = client_->CancelJob(JobId(job->job_id), 0);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(job->job_id));
        return detail.ok() && detail->summary.state == "Cancelled";
      },
      20s));
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


// The reproduction: a task's grandchild outlives its worker's
// kill -9 (only the task's first process dies with the worker). The task
// ran in a cgroup, so the restarted worker kills what is left before it
// registers, and the GPUs go to the next job only with nothing of the old
// task running.
TEST_F(NodeLossTest, WhatATaskLeftRunningIsKilledBeforeItsRestartedWorkerRegisters) {
  if (!TaskCgroupsAvailable()) {
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
  spec.restart.policy = "never";  // the lost task stays lost: the next job can take its GPUs
  auto job = client_->Submit(spec, "");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  int64_t grandchild = 0;
  ASSERT_TRUE(WaitFor([&] { return static_cast<bool>(std::ifstream(pid_file) >> grandchild); }, 20s));
  survivors_.push_back(grandchild);

  cluster_->worker(0)->Kill();
  ASSERT_NO_FATAL_FAILURE(KillSupervisor(job->job_id));
  EXPECT_TRUE(StillRunning(grandchild)) << "the parent-death signal reaches the first process only";
  cluster_->StartWorker(0);
  // The task is reported lost once the new worker has registered, which it
  // does only after emptying what the old one left.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(job->job_id));
        return detail.ok() && detail->summary.state == "Failed" && detail->tasks[0].state == "Lost";
      },
      30s));
  EXPECT_FALSE(StillRunning(grandchild)) << "grandchild " << grandchild << " of the lost task still runs";

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

// A task that kills what started it (kill -9 $PPID: its supervisor, which
// stands between the worker and the task) leaves its GPUs held, not given out
// twice: the worker notices the supervisor's death, kills what is left of the
// task through its cgroup, and reports it failed only then; a job that needs
// the GPUs gets them after that.
TEST_F(NodeLossTest, ATaskThatKillsItsSupervisorNeverHasItsGpusGivenOutTwice) {
  if (!TaskCgroupsAvailable()) {
    GTEST_SKIP() << "task cgroups need root and a cgroup hierarchy";
  }
  ASSERT_NO_FATAL_FAILURE(StartOneNode());
  const std::string pid_file = cluster_->dir() + "/survivor.pid";
  JobSpec killer;
  killer.name = "kills-its-supervisor";
  killer.restart.policy = "never";
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

  JobSpec whole_node;
  whole_node.name = "needs-every-gpu";
  group.command = {"true"};
  group.resources.gpus = 4;
  whole_node.tasks.push_back(group);
  auto second = client_->Submit(whole_node, "");
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(first->job_id));
        return detail.ok() && detail->summary.state == "Failed";
      },
      20s));
  EXPECT_FALSE(StillRunning(survivor)) << "the killer's child " << survivor << " ran on after its task was reported ended";
  auto lost = client_->GetJob(JobId(first->job_id));
  ASSERT_TRUE(lost.ok());
  EXPECT_NE(lost->tasks[0].message.find("lost with its supervisor"), std::string::npos) << lost->tasks[0].message;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto detail = client_->GetJob(JobId(second->job_id));
        return detail.ok() && detail->summary.state == "Succeeded";
      },
      30s));
  EXPECT_TRUE(cluster_->worker(0)->Running()) << "the worker is not the task's parent any more";
}

}  // namespace
}  // namespace gpool::testing
