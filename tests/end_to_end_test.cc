// End to end: a real coordinator and two real workers on loopback run jobs,
// survive a SIGKILL of the coordinator, and stop a running task on cancel.
#include <gtest/gtest.h>

#include <signal.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

class EndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.StartCoordinator();
    cluster_.StartWorkers();
    ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 30s)) << cluster_.Cli({"nodes"}).out;
  }

  std::unique_ptr<Client> Connect() {
    ClientOptions options;
    options.endpoints = cluster_.client_endpoint();
    cluster_.SecureClient(options);
    options.timeout_ms = 3000;
    auto client = Client::Connect(options);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(client).value();
  }

  static JobSpec Job(const std::string& name, uint32_t replicas, uint32_t gpus, std::string script) {
    return ShellJob(name, gpus, std::move(script), replicas);
  }

  Result<GetJobReply> WaitForState(Client& client, uint64_t job, const std::string& state,
                                   std::chrono::milliseconds timeout = 30s) {
    Result<GetJobReply> last = Status::NotFound("never fetched");
    WaitFor(
        [&] {
          last = client.GetJob(JobId(job));
          return last.ok() && last->summary.state == state;
        },
        timeout);
    return last;
  }

  LocalCluster cluster_;
};

TEST_F(EndToEndTest, RunsJobsSurvivesCoordinatorKillAndCancels) {
  auto client = Connect();

  // A 2-task job runs to completion with the env gpool promises.
  auto submitted = client->Submit(
      Job("hello", 2, 2, "echo task=$GPOOL_TASK_INDEX of=$GPOOL_NUM_TASKS job=$GPOOL_JOB_ID gpus=$CUDA_VISIBLE_DEVICES"),
      "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const uint64_t hello = submitted->job_id;
  auto done = WaitForState(*client, hello, "Succeeded");
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->summary.state, "Succeeded") << cluster_.Cli({"job", std::to_string(hello)}).out;
  ASSERT_EQ(done->tasks.size(), 2u);
  for (const auto& task : done->tasks) {
    EXPECT_EQ(task.state, "Succeeded");
    EXPECT_EQ(task.exit_code, 0);
    EXPECT_EQ(task.gpu_indices.size(), 2u);
    EXPECT_GT(task.pid, 0);
  }
  auto log = client->GetTaskLog(JobId(hello), 1, 4096);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_NE(log->data.find("task=1 of=2 job=" + std::to_string(hello) + " gpus="), std::string::npos) << log->data;
  CommandResult cli_log = cluster_.Cli({"logs", std::to_string(hello) + ".0"});
  EXPECT_EQ(cli_log.exit_code, 0) << cli_log.err;
  EXPECT_NE(cli_log.out.find("task=0 of=2"), std::string::npos) << cli_log.out;

  // A failing task is reported with its exit code, and `gpool wait` says so.
  auto failing = client->Submit(Job("fails", 1, 1, "echo oops >&2; exit 3"), "");
  ASSERT_TRUE(failing.ok());
  CommandResult waited = cluster_.Cli({"wait", std::to_string(failing->job_id), "--timeout", "30"});
  EXPECT_EQ(waited.exit_code, 1) << waited.out << waited.err;
  auto failed = client->GetJob(JobId(failing->job_id));
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->summary.state, "Failed");
  EXPECT_EQ(failed->tasks[0].exit_code, 3);

  // A job that cannot fit stays pending and says why.
  auto too_big = client->Submit(Job("too-big", 1, 9, "true"), "");
  ASSERT_TRUE(too_big.ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto job = client->GetJob(JobId(too_big->job_id));
        return job.ok() && !job->reasons.empty();
      },
      10s));
  CommandResult shown = cluster_.Cli({"job", std::to_string(too_big->job_id)});
  EXPECT_EQ(shown.exit_code, 0);
  EXPECT_NE(shown.out.find("Pending"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("needs 9 GPUs but the largest node has 4"), std::string::npos) << shown.out;

  // A long task is running when the coordinator is killed.
  auto sleeper = client->Submit(Job("sleeper", 1, 1, "echo started; exec sleep 300"), "");
  ASSERT_TRUE(sleeper.ok());
  auto running = WaitForState(*client, sleeper->job_id, "Running");
  ASSERT_TRUE(running.ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        running = client->GetJob(JobId(sleeper->job_id));
        return running.ok() && running->tasks[0].state == "Running" && running->tasks[0].pid > 0;
      },
      20s));
  const int64_t sleeper_pid = running->tasks[0].pid;
  ASSERT_TRUE(PidAlive(static_cast<pid_t>(sleeper_pid)));

  auto before_jobs = client->ListJobs(true, 100);
  auto before_nodes = client->ListNodes();
  ASSERT_TRUE(before_jobs.ok() && before_nodes.ok());

  cluster_.KillCoordinator();
  cluster_.StartCoordinator();

  // Every job and node is as before; the running task kept running.
  auto after_jobs = client->ListJobs(true, 100);
  ASSERT_TRUE(after_jobs.ok()) << after_jobs.status().ToString();
  ASSERT_EQ(after_jobs->jobs.size(), before_jobs->jobs.size());
  for (size_t i = 0; i < after_jobs->jobs.size(); ++i) {
    EXPECT_EQ(after_jobs->jobs[i].job_id, before_jobs->jobs[i].job_id);
    EXPECT_EQ(after_jobs->jobs[i].name, before_jobs->jobs[i].name);
    EXPECT_EQ(after_jobs->jobs[i].state, before_jobs->jobs[i].state);
  }
  auto after_nodes = client->ListNodes();
  ASSERT_TRUE(after_nodes.ok());
  ASSERT_EQ(after_nodes->nodes.size(), before_nodes->nodes.size());
  for (size_t i = 0; i < after_nodes->nodes.size(); ++i) {
    EXPECT_EQ(after_nodes->nodes[i].name, before_nodes->nodes[i].name);
    EXPECT_EQ(after_nodes->nodes[i].gpus_total, before_nodes->nodes[i].gpus_total);
    EXPECT_EQ(after_nodes->nodes[i].gpus_used, before_nodes->nodes[i].gpus_used);
  }
  ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 30s));
  auto still = client->GetJob(JobId(sleeper->job_id));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->tasks[0].state, "Running");
  EXPECT_EQ(still->tasks[0].pid, sleeper_pid);
  EXPECT_TRUE(PidAlive(static_cast<pid_t>(sleeper_pid)));

  // New work is accepted and ids continue where they left off.
  auto after_restart = client->Submit(Job("after-restart", 1, 1, "true"), "");
  ASSERT_TRUE(after_restart.ok()) << after_restart.status().ToString();
  EXPECT_GT(after_restart->job_id, sleeper->job_id);
  auto finished = WaitForState(*client, after_restart->job_id, "Succeeded");
  EXPECT_TRUE(finished.ok() && finished->summary.state == "Succeeded");

  // `gpool cancel` stops the running task.
  CommandResult cancel = cluster_.Cli({"cancel", std::to_string(sleeper->job_id)});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  auto cancelled = WaitForState(*client, sleeper->job_id, "Cancelled");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->summary.state, "Cancelled");
  EXPECT_EQ(cancelled->tasks[0].state, "Cancelled");
  EXPECT_TRUE(WaitFor([&] { return !PidAlive(static_cast<pid_t>(sleeper_pid)); }, 10s));
  // Its GPU is free again.
  auto nodes = client->ListNodes();
  ASSERT_TRUE(nodes.ok());
  for (const auto& node : nodes->nodes) EXPECT_EQ(node.gpus_used, 0u) << node.name;

  // Cancelling a finished job is a typed error with a non-zero exit code.
  CommandResult again = cluster_.Cli({"cancel", std::to_string(hello)});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("FailedPrecondition"), std::string::npos) << again.err;
}

TEST_F(EndToEndTest, IdempotentSubmissionCreatesOneJob) {
  auto client = Connect();
  auto first = client->Submit(Job("once", 1, 0, "true"), "same-key");
  auto second = client->Submit(Job("once", 1, 0, "true"), "same-key");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->job_id, second->job_id);
  EXPECT_TRUE(second->duplicate);
}

TEST_F(EndToEndTest, GangTasksGetDistributedTrainingEnv) {
  auto client = Connect();
  auto job = client->Submit(
      Job("ddp", 2, 4,
          "echo rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK nodes=$NNODES node_rank=$NODE_RANK "
          "master=$MASTER_ADDR:$MASTER_PORT hosts=$GPOOL_HOSTS; cat \"$GPOOL_HOSTFILE\""),
      "ddp");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto done = WaitForState(*client, job->job_id, "Succeeded");
  ASSERT_TRUE(done.ok() && done->summary.state == "Succeeded") << done.status().ToString();
  std::string master;
  for (uint32_t i = 0; i < 2; ++i) {
    auto log = client->GetTaskLog(JobId(job->job_id), i, 4096);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    const std::string& text = log->data;
    // Four GPUs each on two 4-GPU nodes: one task per node.
    EXPECT_NE(text.find("rank=" + std::to_string(i) + " world=2 local=0 nodes=2 node_rank=" + std::to_string(i)),
              std::string::npos)
        << text;
    const size_t at = text.find("master=");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string this_master = text.substr(at, text.find(' ', at) - at);
    EXPECT_NE(this_master, "master=:") << "MASTER_ADDR/PORT must be set";
    if (master.empty()) master = this_master;
    EXPECT_EQ(this_master, master) << "both tasks must agree on the master";
    // host:slots per node, slots being the job's tasks there (one each).
    EXPECT_NE(text.find(":1,"), std::string::npos) << "GPOOL_HOSTS lists both nodes with one slot: " << text;
    EXPECT_NE(text.find(" slots=1\n"), std::string::npos) << "the worker wrote the MPI hostfile: " << text;
  }
}

}  // namespace
}  // namespace gpool::testing
