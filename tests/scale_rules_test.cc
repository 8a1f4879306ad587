// Elastic scaling by signal on a real cluster (issue 50): a job of three
// replicas (minimum one) with a queue-depth rule starts at its minimum,
// grows one replica per cool-down while another job waits in its queue,
// and shrinks back to its minimum, one replica per cool-down, once the
// queue is empty; each change is a "job-scaled" event, and `gpool job`
// (and GetJob) shows the target and the last change. The replicas it stops
// come back pending, and the job never fails or drops below one.
//
// One worker with four simulated GPUs; rules evaluated every 200 ms.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

class ScaleRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalClusterOptions options;
    options.workers = 1;
    options.gpus_per_worker = 4;
    options.coordinator_flags.insert(options.coordinator_flags.end(), {"--scale-check-ms", "200"});
    cluster_ = std::make_unique<LocalCluster>(std::move(options));
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_));
  }

  uint32_t RunningOf(uint64_t job) {
    auto reply = client_->GetJob(JobId(job));
    if (!reply.ok()) return 0;
    uint32_t running = 0;
    for (const auto& task : reply->tasks) running += task.state == "Running" ? 1 : 0;
    return running;
  }

  std::vector<ClusterEvent> ScaleEvents(uint64_t job) {
    gpool::ListEvents request;
    request.job = job;
    request.limit = 1000;
    auto reply = client_->ListEvents(request);
    std::vector<ClusterEvent> scaled;
    if (!reply.ok()) return scaled;
    for (const auto& event : reply->events) {
      if (event.kind == "job-scaled") scaled.push_back(event);
    }
    return scaled;
  }

  std::string Describe(uint64_t job) { return cluster_->Cli({"job", std::to_string(job)}).out; }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(ScaleRulesTest, AQueueDepthRuleGrowsTheJobAndItShrinksBackAfterTheCoolDown) {
  JobSpec elastic = ShellJob("elastic", 1, "while true; do sleep 0.1; done", 3);
  elastic.tasks[0].min_replicas = 1;
  elastic.tasks[0].scale.rules = {ScaleRule{"queue-depth", 0, 1}};  // grow while anything waits, shrink when none
  elastic.tasks[0].scale.cooldown_ms = 1000;
  auto submitted = client_->Submit(elastic, "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const uint64_t job = submitted->job_id;
  ASSERT_TRUE(WaitFor([&] { return RunningOf(job) == 1; }, 20s)) << Describe(job);
  EXPECT_TRUE(ScaleEvents(job).empty());  // nothing waits: it stays at its minimum

  // A job that cannot start (it wants all four GPUs) waits in the same queue.
  auto blocker = client_->Submit(ShellJob("blocker", 4, "true"), "");
  ASSERT_TRUE(blocker.ok()) << blocker.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return RunningOf(job) == 3; }, 20s)) << Describe(job);
  auto grew = ScaleEvents(job);
  ASSERT_EQ(grew.size(), 2u) << Describe(job);  // one step per cool-down: 1 -> 2 -> 3
  EXPECT_EQ(grew[0].message, "group main: 1 -> 2 replicas (queue default: 1 pending)");
  EXPECT_EQ(grew[1].message, "group main: 2 -> 3 replicas (queue default: 1 pending)");
  EXPECT_GE(grew[1].time_ms - grew[0].time_ms, 1000);
  EXPECT_EQ(grew[0].reason, "queue-depth");

  // The target the coordinator decided and its last decision, through the
  // client API and `gpool job` (--json and text). At its maximum the target
  // holds while the blocker waits.
  auto detail = client_->GetJob(JobId(job));
  ASSERT_TRUE(detail.ok()) << detail.status().ToString();
  ASSERT_EQ(detail->scale.size(), 1u) << Describe(job);
  const GroupScaleStatus& scale = detail->scale[0];
  EXPECT_EQ(scale.group, "main");
  EXPECT_EQ(scale.target, 3u);
  EXPECT_EQ(scale.min, 1u);
  EXPECT_EQ(scale.max, 3u);
  EXPECT_EQ(scale.cooldown_ms, 1000u);
  EXPECT_LE(scale.cooldown_left_ms, 1000u);
  EXPECT_EQ(scale.last, (ScaleChange{grew[1].time_ms, 2, 3, "queue-depth", "queue default: 1 pending"}));
  const CommandResult shown = cluster_->Cli({"job", std::to_string(job), "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto json = nlohmann::json::parse(shown.out);
  ASSERT_EQ(json["scale"].size(), 1u) << shown.out;
  EXPECT_EQ(json["scale"][0]["target"], 3) << shown.out;
  EXPECT_EQ(json["scale"][0]["last"]["from"], 2) << shown.out;
  EXPECT_EQ(json["scale"][0]["last"]["to"], 3) << shown.out;
  EXPECT_EQ(json["scale"][0]["last"]["trigger"], "queue-depth") << shown.out;
  const std::string text = Describe(job);
  EXPECT_NE(text.find("Scaling (group main):\n  Target:       3 replicas (min 1, max 3)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("2 -> 3 by queue-depth (queue default: 1 pending)"), std::string::npos) << text;

  // The queue empties: back to the minimum, one replica per cool-down.
  ASSERT_TRUE(client_->CancelJob(JobId(blocker->job_id), 0).ok());
  ASSERT_TRUE(WaitFor([&] { return RunningOf(job) == 1 && ScaleEvents(job).size() == 4; }, 20s)) << Describe(job);
  auto all = ScaleEvents(job);
  EXPECT_EQ(all[2].message, "group main: 3 -> 2 replicas (queue default: 0 pending)");
  EXPECT_EQ(all[3].message, "group main: 2 -> 1 replicas (queue default: 0 pending)");
  EXPECT_GE(all[3].time_ms - all[2].time_ms, 1000);
  // It never goes below its minimum, and it is still running, not failed.
  auto reply = client_->GetJob(JobId(job));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->summary.state, "Running") << Describe(job);
  ASSERT_EQ(reply->scale.size(), 1u);
  EXPECT_EQ(reply->scale[0].target, 1u);
  EXPECT_EQ(reply->scale[0].last, (ScaleChange{all[3].time_ms, 2, 1, "queue-depth", "queue default: 0 pending"}));
  EXPECT_EQ(ScaleEvents(job).size(), 4u);
  ASSERT_TRUE(client_->CancelJob(JobId(job), 0).ok());
}

}  // namespace
}  // namespace gpool::testing
