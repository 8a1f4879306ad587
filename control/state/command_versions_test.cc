// Which commands wait for every replica to run issue 50's state version
// (command_versions.h): those an older replica would apply differently, and
// nothing else, so a rolling upgrade holds back only what it must.
#include "control/state/command_versions.h"

#include <gtest/gtest.h>

namespace gpool::state {
namespace {

JobSpec PlainJob() {
  JobSpec spec;
  spec.name = "train";
  TaskGroupSpec group;
  group.command = {"sleep", "1"};
  group.resources.gpus = 1;
  spec.tasks.push_back(group);
  return spec;
}

uint32_t Needed(const CommandBody& body) { return StateVersionNeeded(body).version; }

TEST(CommandVersionsTest, WhatEveryVersionAppliesAlikeNeedsNothing) {
  EXPECT_EQ(Needed(SubmitJobCmd{PlainJob()}), 1u);
  UpdateQueue create;
  create.spec.name = "team-a";
  EXPECT_EQ(Needed(UpdateQueueCmd{create}), 1u);
  EXPECT_EQ(Needed(UpdatePricesCmd{PriceTable{}, false}), 1u);
  EXPECT_EQ(Needed(CancelJobCmd{}), 1u);
  EXPECT_EQ(Needed(SkipJobIdsCmd{7}), 1u) << "a restore's own command: every replica was restored by one binary";
  EXPECT_TRUE(StateVersionNeeded(SubmitJobCmd{PlainJob()}).what.empty());
}

TEST(CommandVersionsTest, IssueFiftysCommandsAndFieldsNeedVersionTwo) {
  std::vector<std::pair<std::string, CommandBody>> cases;
  cases.emplace_back("credit", CreditCmd{"team-a", 1'000'000, ""});
  cases.emplace_back("scale decision", ScaleJobCmd{1, 0, 2, "queue-depth", ""});
  PriceTable billed;
  billed.billing.min_period_ms_by_class["low"] = 60'000;
  cases.emplace_back("billing rules", UpdatePricesCmd{billed, false});
  cases.emplace_back("keep_billing", UpdatePricesCmd{PriceTable{}, true});
  JobSpec binpack = PlainJob();
  binpack.node_policy = "binpack";
  cases.emplace_back("node_policy", SubmitJobCmd{binpack});
  JobSpec spread = PlainJob();
  spread.gpu_policy = "spread";
  cases.emplace_back("gpu_policy", SubmitJobCmd{spread});
  JobSpec cores = PlainJob();
  cores.tasks[0].resources.exclusive_cores = true;
  cases.emplace_back("exclusive cores", SubmitJobCmd{cores});
  JobSpec scaled = PlainJob();
  scaled.tasks[0].scale.rules.push_back(ScaleRule{"queue-depth", 5});
  cases.emplace_back("scale rules", SubmitJobCmd{scaled});
  UpdateQueue grant;
  grant.op = QueueOp::kGrantClass;
  grant.spec.name = "team-a";
  grant.priority_class = "high";
  cases.emplace_back("class grant", UpdateQueueCmd{grant});
  UpdateQueue keep;
  keep.op = QueueOp::kUpdate;
  keep.spec.name = "team-a";
  keep.keep = {"low_reclaimable"};
  cases.emplace_back("keep", UpdateQueueCmd{keep});
  UpdateQueue policy;
  policy.spec.name = "team-a";
  policy.spec.low_reclaimable = false;
  cases.emplace_back("preemption policy", UpdateQueueCmd{policy});
  UpdateQueue preempting;
  preempting.spec.name = "team-a";
  preempting.spec.preempting_classes = {"system"};
  cases.emplace_back("preempting classes", UpdateQueueCmd{preempting});
  for (const auto& [name, body] : cases) {
    const StateVersionNeed need = StateVersionNeeded(body);
    EXPECT_EQ(need.version, 2u) << name;
    EXPECT_FALSE(need.what.empty()) << name << ": the refusal must say what needs the version";
    EXPECT_LE(need.version, kStateVersion) << name << ": this binary must apply what it proposes";
  }
}

}  // namespace
}  // namespace gpool::state
