// An elastic job's scaling by signal as `gpool job` (text and --json) shows
// it (format_scale.h, issue 50).
#include "client/format_scale.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/cli_test_fixture.h"
#include "client/format.h"

namespace gpool {
namespace {

constexpr int64_t kScaleTestNowMs = 1'700'000'100'000;

ScaleSpec QueueAndUtilisationRules() {
  ScaleSpec spec;
  spec.rules = {ScaleRule{"queue-depth", 2, 1, "batch", "", 2}, ScaleRule{"gpu-utilisation", 80, 0, "", "", 1},
                ScaleRule{"time-window", 0, 0, "", "08:00-18:00", 1}};
  spec.cooldown_ms = 60'000;
  return spec;
}

GroupScaleStatus ScaledStatus() {
  GroupScaleStatus status;
  status.group = "main";
  status.min = 1;
  status.max = 4;
  status.target = 3;
  status.cooldown_ms = 60'000;
  status.cooldown_left_ms = 45'000;
  status.last = ScaleChange{kScaleTestNowMs - 15'000, 2, 3, "queue-depth", "queue batch: 5 pending"};
  return status;
}

TEST(FormatScaleTest, EachTriggerInWords) {
  const ScaleSpec spec = QueueAndUtilisationRules();
  EXPECT_EQ(ScaleRuleText(spec.rules[0]), "queue-depth: grow above 2 pending, shrink below 1 (queue batch, step 2)");
  EXPECT_EQ(ScaleRuleText(spec.rules[1]), "gpu-utilisation: grow at 80% busy or more, never shrink");
  EXPECT_EQ(ScaleRuleText(spec.rules[2]), "time-window: all replicas inside 08:00-18:00 UTC, the minimum outside");
  EXPECT_EQ(ScaleRuleText(ScaleRule{"queue-depth", 0, 0, "", "", 1}),
            "queue-depth: grow above 0 pending, never shrink");
}

TEST(FormatScaleTest, TheLastChangeOrNone) {
  EXPECT_EQ(ScaleChangeText(ScaledStatus().last, kScaleTestNowMs),
            "2 -> 3 by queue-depth (queue batch: 5 pending), 15s ago");
  EXPECT_EQ(ScaleChangeText(ScaleChange{}, kScaleTestNowMs), "none yet");
}

TEST(FormatScaleTest, AScalingBlockPerGroupWithRules) {
  GetJobReply reply;
  TaskGroupSpec group;
  group.name = "main";
  group.replicas = 4;
  group.min_replicas = 1;
  group.scale = QueueAndUtilisationRules();
  reply.spec.tasks = {group};
  EXPECT_EQ(FormatJobScaling(reply, kScaleTestNowMs), "") << "no status from the coordinator: nothing to show";
  reply.scale = {ScaledStatus()};
  EXPECT_EQ(FormatJobScaling(reply, kScaleTestNowMs),
            "\nScaling (group main):\n"
            "  Target:       3 replicas (min 1, max 4)\n"
            "  Rules:        queue-depth: grow above 2 pending, shrink below 1 (queue batch, step 2)\n"
            "                gpu-utilisation: grow at 80% busy or more, never shrink\n"
            "                time-window: all replicas inside 08:00-18:00 UTC, the minimum outside\n"
            "  Cool-down:    1m00s (45s left)\n"
            "  Last change:  2 -> 3 by queue-depth (queue batch: 5 pending), 15s ago\n");
  reply.scale[0].cooldown_left_ms = 0;
  reply.scale[0].last = ScaleChange{};
  const std::string idle = FormatJobScaling(reply, kScaleTestNowMs);
  EXPECT_NE(idle.find("  Cool-down:    1m00s\n"), std::string::npos) << idle;
  EXPECT_NE(idle.find("  Last change:  none yet\n"), std::string::npos) << idle;
}

class ScaleCliTest : public client::testing::CliTest {};

TEST_F(ScaleCliTest, JobShowsTheTargetInTheTextAndTheJson) {
  const uint64_t id = AddJob("elastic", JobState::kRunning);
  GetJobReply& job = cluster_->jobs.at(id);
  job.spec.tasks[0].name = "main";
  job.spec.tasks[0].replicas = 4;
  job.spec.tasks[0].min_replicas = 1;
  job.spec.tasks[0].scale = QueueAndUtilisationRules();
  job.scale = {ScaledStatus()};
  ASSERT_EQ(Run({"job", std::to_string(id)}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("Scaling (group main):\n  Target:       3 replicas (min 1, max 4)\n"), std::string::npos)
      << out_.str();
  ASSERT_EQ(Run({"job", std::to_string(id), "--json"}), kExitOk) << err_.str();
  const auto json = nlohmann::json::parse(out_.str());
  ASSERT_EQ(json["scale"].size(), 1u) << out_.str();
  EXPECT_EQ(json["scale"][0]["group"], "main");
  EXPECT_EQ(json["scale"][0]["target"], 3);
  EXPECT_EQ(json["scale"][0]["min"], 1);
  EXPECT_EQ(json["scale"][0]["max"], 4);
  EXPECT_EQ(json["scale"][0]["cooldown_left_ms"], 45'000);
  EXPECT_EQ(json["scale"][0]["last"]["from"], 2);
  EXPECT_EQ(json["scale"][0]["last"]["to"], 3);
  EXPECT_EQ(json["scale"][0]["last"]["trigger"], "queue-depth");
  EXPECT_EQ(json["scale"][0]["last"]["reason"], "queue batch: 5 pending");
  EXPECT_EQ(json["spec"]["tasks"][0]["scale"]["rules"].size(), 3u) << "the rules, with the spec";

  // A job without rules shows no scaling block and no status.
  const uint64_t plain = AddJob("plain", JobState::kRunning);
  ASSERT_EQ(Run({"job", std::to_string(plain)}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str().find("Scaling"), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace gpool
