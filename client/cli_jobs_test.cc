// The commands on submitted jobs: jobs, job, cancel, logs, wait and explain
// (cli_jobs.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_nodes.h"

namespace gpool {
namespace {

using client::testing::CliTest;
using client::testing::QueueCliTest;

TEST_F(CliTest, Logs) {
  uint64_t id = AddJob("j", JobState::kRunning);
  cluster_->logs[{id, 2}] = "line one\nline two\n";
  ASSERT_EQ(Run({"logs", std::to_string(id) + ".2"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "line one\nline two\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->log_requests.size(), 1u);
  EXPECT_EQ(cluster_->log_requests[0].job_id, id);
  EXPECT_EQ(cluster_->log_requests[0].task_index, 2u);
  EXPECT_EQ(cluster_->log_requests[0].max_bytes, 65536u);

  ASSERT_EQ(Run({"logs", std::to_string(id) + ".2", "--bytes", "9"}), 0);
  EXPECT_EQ(out_.str(), "line two\n");
  EXPECT_EQ(err_.str(), "(showing the last 9 of 18 bytes; --bytes N shows more)\n");

  ASSERT_EQ(Run({"--json", "logs", std::to_string(id) + ".2"}), 0);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["data"], "line one\nline two\n");

  EXPECT_EQ(Run({"logs", std::to_string(id)}), kExitNotFound);  // index 0 has no log
  EXPECT_EQ(cluster_->log_requests.back().task_index, 0u);
  EXPECT_EQ(err_.str(), "gpool: NotFound: task 1.0 has no log\n");

  EXPECT_EQ(Run({"logs", "17.x"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: expected a TASK as JOB.INDEX (e.g. 17.2) or JOB, got '17.x'\n");
  EXPECT_EQ(Run({"logs", "1.0", "--bytes", "99999999999"}), kExitUsage);
}

TEST_F(CliTest, JobsJobCancelNodesStatus) {
  uint64_t done = AddJob("done", JobState::kSucceeded);
  uint64_t running = AddJob("running", JobState::kRunning);

  ASSERT_EQ(Run({"jobs"}), 0);
  EXPECT_NE(out_.str().find("running"), std::string::npos);
  EXPECT_EQ(out_.str().find("done"), std::string::npos);
  EXPECT_FALSE(cluster_->list_jobs_requests.back().include_finished);
  ASSERT_EQ(Run({"jobs", "--all", "--json"}), 0);
  EXPECT_TRUE(cluster_->list_jobs_requests.back().include_finished);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["jobs"].size(), 2u);

  ASSERT_EQ(Run({"job", std::to_string(running)}), 0);
  EXPECT_EQ(out_.str().rfind("Job 2: running\n", 0), 0u) << out_.str();
  EXPECT_EQ(Run({"job", "99"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: job 99 does not exist\n");

  ASSERT_EQ(Run({"cancel", std::to_string(running), "--grace", "3s"}), 0);
  EXPECT_EQ(out_.str(), "job 2 Cancelled\n");
  EXPECT_EQ(cluster_->cancels.back().grace_ms, 3000u);
  EXPECT_EQ(Run({"cancel", std::to_string(done)}), kExitError);
  EXPECT_EQ(cluster_->cancels.back().grace_ms, 10000u);
  EXPECT_EQ(Run({"cancel", "99"}), kExitNotFound);

  NodeSummary node;
  node.name = "gpu-node-1";
  node.state = "Ready";
  cluster_->nodes.nodes = {node};
  ASSERT_EQ(Run({"nodes"}), 0);
  EXPECT_NE(out_.str().find("gpu-node-1"), std::string::npos);
  cluster_->status.replica_id = "c1";
  cluster_->status.role = "leader";
  ASSERT_EQ(Run({"status"}), 0);
  EXPECT_EQ(out_.str().rfind("Replica:  c1 (leader, term 0)\n", 0), 0u) << out_.str();
  ASSERT_EQ(Run({"status", "--json"}), 0);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["role"], "leader");
}

TEST_F(CliTest, WaitPollsUntilTheJobFinishes) {
  uint64_t id = AddJob("j", JobState::kRunning);
  cluster_->on_get_job = [](FakeCluster& c, uint64_t job) {
    if (c.get_job_calls == 3) c.SetJobState(job, JobState::kSucceeded);
  };
  ASSERT_EQ(Run({"wait", std::to_string(id)}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "job 1 Succeeded\n");
  EXPECT_EQ(sleeps_, (std::vector<int64_t>{200, 200}));
}

TEST_F(CliTest, WaitExitsOneWhenTheJobFails) {
  uint64_t id = AddJob("j", JobState::kFailed);
  cluster_->jobs[id].summary.reason = "task 1.0 exited with code 2";
  EXPECT_EQ(Run({"wait", std::to_string(id)}), kExitJobUnsuccessful);
  EXPECT_EQ(out_.str(), "job 1 Failed: task 1.0 exited with code 2\n");
  uint64_t cancelled = AddJob("c", JobState::kCancelled);
  EXPECT_EQ(Run({"wait", std::to_string(cancelled), "--json"}), kExitJobUnsuccessful);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["state"], "Cancelled");
}

TEST_F(CliTest, WaitTimesOut) {
  uint64_t id = AddJob("j", JobState::kRunning);
  EXPECT_EQ(Run({"wait", std::to_string(id), "--timeout", "1s"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: DeadlineExceeded: job 1 is still Running after 1s\n");
  EXPECT_EQ(cluster_->get_job_calls, 6);  // at 0, 200, ..., 1000 ms
  EXPECT_EQ(Run({"wait", "77"}), kExitNotFound);
  EXPECT_EQ(Run({"wait", std::to_string(id), "--timeout", "soon"}), kExitUsage);
}

// --- explain ---------------------------------------------------------------------------

TEST_F(QueueCliTest, ExplainShowsReasonsQueuePathAndJobsAhead) {
  AddResearch();
  // Three jobs in vision: a high one (ahead whatever its priority), an
  // earlier medium one of the same priority (ahead), a later one (behind).
  uint64_t high = AddJob("high", JobState::kPending);
  uint64_t early = AddJob("early", JobState::kPending);
  uint64_t target = AddJob("target", JobState::kPending);
  uint64_t late = AddJob("late", JobState::kPending);
  uint64_t running = AddJob("running", JobState::kRunning);
  for (uint64_t id : {high, early, target, late, running}) {
    cluster_->jobs[id].spec.queue = "vision";
    cluster_->jobs[id].summary.queue = "vision";
  }
  cluster_->jobs[high].spec.priority_class = "high";
  cluster_->jobs[high].spec.priority = -5;
  cluster_->jobs[target].reasons = {"queue research: deserved gpu=8 reached", "node-0: cordoned"};
  cluster_->jobs[target].summary.gpus = 8;

  ASSERT_EQ(Run({"explain", std::to_string(target)}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "Job 3 target: Pending in queue vision, priority 0, 8 GPUs\n"
            "Reasons:\n"
            "  - queue research: deserved gpu=8 reached\n"
            "  - node-0: cordoned\n"
            "Queue path (leaf to root; each resource: allocated/deserved/capability, - = not set):\n"
            "  QUEUE     GPU     GPU/A100  CPU      MEM(GiB)\n"
            "  vision    0/-/-   0/-/8     0/-/-    0/-/-\n"
            "  research  6/8/16  0/-/-     12/-/64  64/-/-\n"
            "  root      0/-/-   0/-/-     0/-/-    0/-/-\n"
            "2 jobs ahead in queue vision\n");
  EXPECT_EQ(cluster_->explain_requests, std::vector<uint64_t>{target});

  ASSERT_EQ(Run({"explain", std::to_string(late), "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["job"]["job_id"], late);
  EXPECT_EQ(json["jobs_ahead"], 3);
  ASSERT_EQ(json["queue_path"].size(), 3u);
  EXPECT_EQ(json["queue_path"][0]["spec"]["name"], "vision");
  EXPECT_EQ(json["queue_path"][2]["spec"]["name"], "root");

  ASSERT_EQ(Run({"explain", std::to_string(high)}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("Reasons: none\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\n0 jobs ahead in queue vision\n"), std::string::npos) << out_.str();
}

TEST_F(QueueCliTest, ExplainErrors) {
  EXPECT_EQ(Run({"explain", "99"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: job 99 does not exist\n");
  EXPECT_EQ(Run({"explain", "abc"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: expected a job ID (a positive integer), got 'abc'\n");
  EXPECT_EQ(Run({"explain"}), kExitUsage);
  EXPECT_EQ(Run({"explain", "1", "2"}), kExitUsage);
  EXPECT_EQ(cluster_->explain_requests, std::vector<uint64_t>{99});
}

}  // namespace
}  // namespace gpool
