// Tasks outlive their worker: each runs under a gpool-task-supervisor of its
// own, so a worker killed with SIGKILL and restarted finds its tasks still
// running, adopts them (same pids) and reports their exits; a task whose
// supervisor dies is reported failed ("lost with its supervisor"), never
// silently gone; and nothing of a task runs once it is reported ended.
// Every process a test saw is killed by PID at the end.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"
#include "worker/runner/supervisor_state.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;


class WorkerRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TaskCgroupsAvailable()) {
      GTEST_SKIP() << "task cgroups need root and a cgroup hierarchy";
    }
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
  void TearDown() override {
    for (int64_t pid : seen_) kill(static_cast<pid_t>(pid), SIGKILL);
  }

  // Submits `script` (one task, 2 GPUs, restart never) and waits until it runs; its pid.
  int64_t RunJob(const std::string& script, JobId* job) {
    JobSpec spec = ShellJob("restart", 2, script);
    spec.restart.policy = "never";
    auto submitted = client_->Submit(spec, "");
    EXPECT_TRUE(submitted.ok()) << submitted.status().ToString();
    if (!submitted.ok()) return 0;
    *job = JobId(submitted->job_id);
    int64_t pid = 0;
    EXPECT_TRUE(WaitFor(
        [&] {
          auto detail = client_->GetJob(*job);
          if (!detail.ok() || detail->tasks[0].state != "Running" || detail->tasks[0].pid == 0) return false;
          pid = detail->tasks[0].pid;
          return true;
        },
        20s));
    if (pid > 0) seen_.push_back(pid);
    return pid;
  }

  std::string StateDir(JobId job) const {
    return cluster_->WorkerDataDir(0) + "/tasks/" + std::to_string(job.value()) + ".0.0.state";
  }

  // The pid a task wrote to `name` in the cluster's directory.
  int64_t PidIn(const std::string& name) {
    int64_t pid = 0;
    EXPECT_TRUE(WaitFor([&] { return static_cast<bool>(std::ifstream(cluster_->dir() + "/" + name) >> pid); }, 20s));
    if (pid > 0) seen_.push_back(pid);
    return pid;
  }

  Result<GetJobReply> Job(JobId job) { return client_->GetJob(job); }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
  std::vector<int64_t> seen_;
};

TEST_F(WorkerRestartTest, AWorkerRestartedWithinTheLeaseKeepsItsTaskAndReportsItsExit) {
  const std::string release = cluster_->dir() + "/release";
  const std::string child = "child.pid";
  JobId job;
  const int64_t pid = RunJob("sleep 1000 & echo $! > " + cluster_->dir() + "/" + child + "; while [ ! -e " + release +
                                 " ]; do sleep 0.05; done; exit 0",
                             &job);
  ASSERT_GT(pid, 0);
  const int64_t background = PidIn(child);
  ASSERT_GT(background, 0);

  cluster_->worker(0)->Kill();
  EXPECT_TRUE(StillRunning(pid)) << "the task died with its worker";
  cluster_->StartWorker(0);
  ASSERT_TRUE(WaitFor([&] { return cluster_->AllNodesReady(); }, 30s));
  auto adopted = Job(job);
  ASSERT_TRUE(adopted.ok());
  EXPECT_EQ(adopted->tasks[0].state, "Running");
  EXPECT_EQ(adopted->tasks[0].pid, pid) << "the same process, not a new start";
  EXPECT_TRUE(StillRunning(pid));

  WriteFile(release, "");
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = Job(job);
        return detail.ok() && detail->summary.state == "Succeeded";
      },
      20s));
  EXPECT_FALSE(StillRunning(pid));
  EXPECT_FALSE(StillRunning(background)) << "the task's child " << background << " outlived its reported end";
}

TEST_F(WorkerRestartTest, AnExitWhileTheWorkerIsDownIsReportedWhenItReturns) {
  const std::string release = cluster_->dir() + "/release";
  JobId job;
  const int64_t pid = RunJob("while [ ! -e " + release + " ]; do sleep 0.05; done; exit 7", &job);
  ASSERT_GT(pid, 0);
  cluster_->worker(0)->Kill();
  WriteFile(release, "");
  ASSERT_TRUE(WaitFor([&] { return worker::ReadExitRecord(StateDir(job)).ok(); }, 20s));
  EXPECT_FALSE(StillRunning(pid));
  cluster_->StartWorker(0);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = Job(job);
        return detail.ok() && detail->summary.state == "Failed" && detail->tasks[0].state == "Failed";
      },
      30s));
  EXPECT_EQ(Job(job)->tasks[0].exit_code, 7);
}

TEST_F(WorkerRestartTest, ATaskWhoseSupervisorIsKilledIsReportedLostNotSilentlyGone) {
  JobId job;
  const int64_t pid = RunJob("sleep 1000 & echo $! > " + cluster_->dir() + "/child.pid; exec sleep 1000", &job);
  ASSERT_GT(pid, 0);
  const int64_t background = PidIn("child.pid");
  auto started = worker::ReadStartRecord(StateDir(job));
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  seen_.push_back(started->supervisor_pid);
  ASSERT_EQ(kill(static_cast<pid_t>(started->supervisor_pid), SIGKILL), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = Job(job);
        return detail.ok() && detail->summary.state == "Failed";
      },
      20s));
  auto failed = Job(job);
  // Lost, not failed: the node ended it (restart never, so the job fails).
  EXPECT_EQ(failed->tasks[0].state, "Lost");
  EXPECT_NE(failed->tasks[0].message.find("lost with its supervisor"), std::string::npos)
      << failed->tasks[0].message;
  EXPECT_FALSE(StillRunning(pid));
  EXPECT_FALSE(StillRunning(background)) << "the task's child " << background << " outlived its reported end";
}

TEST_F(WorkerRestartTest, ASupervisorThatDiesWhileTheWorkerIsDownIsReportedWhenItReturns) {
  JobId job;
  const int64_t pid = RunJob("sleep 1000 & echo $! > " + cluster_->dir() + "/child.pid; exec sleep 1000", &job);
  ASSERT_GT(pid, 0);
  const int64_t background = PidIn("child.pid");
  auto started = worker::ReadStartRecord(StateDir(job));
  ASSERT_TRUE(started.ok());
  seen_.push_back(started->supervisor_pid);
  cluster_->worker(0)->Kill();
  ASSERT_EQ(kill(static_cast<pid_t>(started->supervisor_pid), SIGKILL), 0);
  EXPECT_TRUE(WaitFor([&] { return !StillRunning(pid); }, 10s)) << "the first process dies with its supervisor";
  EXPECT_TRUE(StillRunning(background)) << "what it started is left for the restarted worker";
  cluster_->StartWorker(0);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto detail = Job(job);
        return detail.ok() && detail->summary.state == "Failed";
      },
      30s));
  // RegisterNode's task report says Lost (its message comes with the "lost"
  // event after it); restart never, so the job fails.
  EXPECT_EQ(Job(job)->tasks[0].state, "Lost");
  EXPECT_EQ(Job(job)->tasks[0].exit_code, 255);
  EXPECT_FALSE(StillRunning(background)) << "the task's child " << background << " outlived its reported end";
}

}  // namespace
}  // namespace gpool::testing
