// Elastic scaling by signal (issue 50): the rule arithmetic (each trigger,
// the cool-down, the bounds) and the committed decision in the state
// machine (the target bounds what the scheduler is offered, shrinking
// stops the group's highest replicas and they come back pending).
#include <set>

#include <gtest/gtest.h>

#include "control/state/cluster_state_fixture.h"
#include "control/state/scale_decision.h"
#include "control/state/test_specs.h"
#include "protocol/event.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

constexpr int64_t kScaleTestHourMs = 3'600'000;

ScaleSignals ScaleSignalsAt(uint32_t current, uint64_t depth) {
  ScaleSignals in;
  in.min = 1;
  in.max = 4;
  in.current = current;
  in.now_ms = 1'000'000'000'000;
  in.queue_depth = [depth](const std::string& queue) { return queue == "work" ? depth : 0; };
  return in;
}

ScaleSpec ScaleRulesOf(std::vector<ScaleRule> rules, uint64_t cooldown_ms = 60'000) {
  return ScaleSpec{std::move(rules), cooldown_ms};
}

TEST(ScaleDecisionTest, QueueDepthGrowsAboveAndShrinksBelowOneStepAtATime) {
  const ScaleSpec spec = ScaleRulesOf({ScaleRule{"queue-depth", 2, 1}});
  EXPECT_EQ(DecideScale(spec, ScaleSignalsAt(1, 3), "work").target, 2u);  // 3 > 2
  EXPECT_EQ(DecideScale(spec, ScaleSignalsAt(2, 2), "work").target, 2u);  // 2 is not above 2, not below 1
  EXPECT_EQ(DecideScale(spec, ScaleSignalsAt(2, 0), "work").target, 1u);  // 0 < 1
  const ScaleDecision grew = DecideScale(spec, ScaleSignalsAt(1, 9), "work");
  EXPECT_EQ(grew.trigger, "queue-depth");
  EXPECT_EQ(grew.message, "queue work: 9 pending");
  // The rule's own queue instead of the job's.
  const ScaleSpec other = ScaleRulesOf({ScaleRule{"queue-depth", 2, 0, "elsewhere"}});
  EXPECT_EQ(DecideScale(other, ScaleSignalsAt(1, 9), "work").target, 1u);
  // Without shrink_below the rule never shrinks.
  EXPECT_EQ(DecideScale(ScaleRulesOf({ScaleRule{"queue-depth", 2}}), ScaleSignalsAt(3, 0), "work").target, 3u);
}

TEST(ScaleDecisionTest, StaysWithinMinAndMax) {
  const ScaleSpec spec = ScaleRulesOf({ScaleRule{"queue-depth", 2, 1, "", "", 3}});
  EXPECT_EQ(DecideScale(spec, ScaleSignalsAt(3, 9), "work").target, 4u);  // 3 + 3 capped at max 4
  EXPECT_EQ(DecideScale(spec, ScaleSignalsAt(4, 9), "work").target, 4u);
  EXPECT_EQ(DecideScale(spec, ScaleSignalsAt(2, 0), "work").target, 1u);  // 2 - 3 floored at min 1
  EXPECT_EQ(DecideScale(spec, ScaleSignalsAt(1, 0), "work").target, 1u);
}

TEST(ScaleDecisionTest, GpuUtilisationGrowsAtTheThresholdAndHoldsWhenUnmeasured) {
  const ScaleSpec spec = ScaleRulesOf({ScaleRule{"gpu-utilisation", 80, 20}});
  ScaleSignals in = ScaleSignalsAt(2, 0);
  EXPECT_EQ(DecideScale(spec, in, "work").target, 2u);  // nobody measured: hold
  in.gpu_util_pct = 80;
  EXPECT_EQ(DecideScale(spec, in, "work").target, 3u);
  EXPECT_EQ(DecideScale(spec, in, "work").message, "GPUs 80% busy");
  in.gpu_util_pct = 50;
  EXPECT_EQ(DecideScale(spec, in, "work").target, 2u);
  in.gpu_util_pct = 19;
  EXPECT_EQ(DecideScale(spec, in, "work").target, 1u);
}

TEST(ScaleDecisionTest, TimeWindowRunsEverythingInsideAndTheMinimumOutside) {
  const ScaleSpec spec = ScaleRulesOf({ScaleRule{"time-window", 0, 0, "", "22:00-06:00"}});
  ScaleSignals in = ScaleSignalsAt(2, 0);
  const int64_t midnight = 20'000 * 24 * kScaleTestHourMs;  // a UTC midnight
  in.now_ms = midnight + 23 * kScaleTestHourMs;              // 23:00, inside the wrapped window
  EXPECT_EQ(DecideScale(spec, in, "work").target, 4u);
  in.now_ms = midnight + 5 * kScaleTestHourMs + 59 * 60'000;  // 05:59
  EXPECT_EQ(DecideScale(spec, in, "work").target, 4u);
  in.now_ms = midnight + 6 * kScaleTestHourMs;  // 06:00: the end is outside
  const ScaleDecision outside = DecideScale(spec, in, "work");
  EXPECT_EQ(outside.target, 1u);
  EXPECT_EQ(outside.message, "outside 22:00-06:00 UTC");
}

TEST(ScaleDecisionTest, TheLargestWishWinsSoAGroupShrinksOnlyWhenEveryRuleLetsIt) {
  const ScaleSpec spec = ScaleRulesOf({ScaleRule{"queue-depth", 2, 1}, ScaleRule{"gpu-utilisation", 90, 10}});
  ScaleSignals in = ScaleSignalsAt(3, 0);  // the queue wants 2
  in.gpu_util_pct = 50;             // the GPUs want 3 kept
  EXPECT_EQ(DecideScale(spec, in, "work").target, 3u);
  in.gpu_util_pct = 5;  // both want 2
  EXPECT_EQ(DecideScale(spec, in, "work").target, 2u);
  in.gpu_util_pct = 95;  // the GPUs want 4
  const ScaleDecision grew = DecideScale(spec, in, "work");
  EXPECT_EQ(grew.target, 4u);
  EXPECT_EQ(grew.trigger, "gpu-utilisation");
}

TEST(ScaleDecisionTest, CoolDownHoldsAChangeUntilItHasPassed) {
  const ScaleSpec spec = ScaleRulesOf({ScaleRule{"queue-depth", 2, 1}}, 60'000);
  ScaleSignals in = ScaleSignalsAt(1, 5);
  in.last_scaled_ms = in.now_ms - 59'999;
  ScaleDecision held = DecideScale(spec, in, "work");
  EXPECT_EQ(held.target, 1u);
  EXPECT_TRUE(held.cooling);
  in.last_scaled_ms = in.now_ms - 60'000;
  held = DecideScale(spec, in, "work");
  EXPECT_EQ(held.target, 2u);
  EXPECT_FALSE(held.cooling);
  // Nothing to change: not cooling either.
  in.current = 2;
  in.queue_depth = [](const std::string&) { return uint64_t{2}; };
  in.last_scaled_ms = in.now_ms - 1;
  EXPECT_FALSE(DecideScale(spec, in, "work").cooling);
}

// The state machine: a job of four replicas, minimum one, with a rule.
class ScaleStateTest : public ClusterStateTest {
 protected:
  uint64_t SubmitScaled() {
    Do(RegisterNodeCmd{testing::MakeNode("n1", 4), {}});
    JobSpec spec = MakeJob("elastic", 4, 1);
    spec.tasks[0].min_replicas = 1;
    spec.tasks[0].scale.rules = {ScaleRule{"queue-depth", 2, 1}};
    ApplyResult r = Do(SubmitJobCmd{spec, ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }

  size_t Offered(uint64_t job) {
    const topology::ClusterView view = state_.BuildView(static_cast<int64_t>(1000 * index_));
    for (const auto& pending : view.pending) {
      if (pending.id.value() == job) return pending.tasks.size();
    }
    return 0;
  }
};

TEST_F(ScaleStateTest, TheTargetBoundsWhatTheSchedulerIsOfferedAndShrinkingRequeuesTheHighestReplicas) {
  const uint64_t job = SubmitScaled();
  EXPECT_EQ(Offered(job), 1u);  // its minimum until a rule grows it
  ASSERT_EQ(Do(ApplyPlanCmd{{Bind(job, 0, "n1", {0})}, {}}).binds_applied, 1u);
  ASSERT_TRUE(Event(job, 0, "n1", "started").status.ok());
  EXPECT_EQ(Offered(job), 0u);

  ASSERT_TRUE(Do(ScaleJobCmd{job, 0, 3, "queue-depth", "queue default: 5 pending"}).status.ok());
  EXPECT_EQ(state_.FindJob(JobId(job))->ReplicaTarget(0), 3u);
  EXPECT_EQ(Offered(job), 2u);
  ASSERT_EQ(Do(ApplyPlanCmd{{Bind(job, 1, "n1", {1}), Bind(job, 2, "n1", {2})}, {}}).binds_applied, 2u);
  ASSERT_TRUE(Event(job, 1, "n1", "started").status.ok());
  ASSERT_TRUE(Event(job, 2, "n1", "started").status.ok());
  const ClusterEvent& grew = state_.events().back();
  EXPECT_EQ(grew.kind, "job-scaled");
  EXPECT_EQ(grew.job, job);
  EXPECT_EQ(grew.reason, "queue-depth");
  EXPECT_EQ(grew.message, "group task: 1 -> 3 replicas (queue default: 5 pending)");
  // The job keeps the decision for `gpool job`: when, from, to, which rule, why.
  const ScaleChange last = state_.FindJob(JobId(job))->LastScale(0);
  EXPECT_EQ(last, (ScaleChange{state_.FindJob(JobId(job))->scaled_ms(), 1, 3, "queue-depth", "queue default: 5 pending"}));
  EXPECT_NE(last.time_ms, 0);
  EXPECT_EQ(state_.FindJob(JobId(job))->LastScale(1), ScaleChange{}) << "no such group: none";

  // Down to two: replica 2, the highest running, is asked to stop and comes
  // back pending (a new attempt), not failed; nothing more is offered.
  ASSERT_TRUE(Do(ScaleJobCmd{job, 0, 2, "queue-depth", ""}).status.ok());
  const JobRecord* record = state_.FindJob(JobId(job));
  EXPECT_TRUE(record->tasks[2].stop_requested);
  EXPECT_FALSE(record->tasks[1].stop_requested);
  EXPECT_FALSE(record->tasks[0].stop_requested);
  ASSERT_TRUE(Event(job, 2, "n1", "exited", 143).status.ok());
  record = state_.FindJob(JobId(job));
  EXPECT_EQ(record->tasks[2].state, TaskState::kPending);
  EXPECT_EQ(record->tasks[2].id.attempt, 1u);
  EXPECT_EQ(record->state, JobState::kRunning);
  EXPECT_TRUE(record->failure().empty());
  EXPECT_EQ(Offered(job), 0u);
  EXPECT_EQ(state_.FindNode("n1")->gpu_owner.size(), 2u);
}

TEST_F(ScaleStateTest, BadDecisionsAreTypedAndChangeNothing) {
  const uint64_t job = SubmitScaled();
  const uint64_t plain = Submit("plain", 2, 1);
  const size_t events = state_.events().size();
  EXPECT_EQ(Do(ScaleJobCmd{job, 0, 5, "queue-depth", ""}).status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Do(ScaleJobCmd{job, 0, 0, "queue-depth", ""}).status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Do(ScaleJobCmd{job, 1, 2, "queue-depth", ""}).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Do(ScaleJobCmd{plain, 0, 1, "queue-depth", ""}).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Do(ScaleJobCmd{999, 0, 1, "queue-depth", ""}).status.code(), StatusCode::kNotFound);
  // A repeat of the current target is no change and no event.
  EXPECT_TRUE(Do(ScaleJobCmd{job, 0, 1, "queue-depth", ""}).status.ok());
  EXPECT_EQ(state_.events().size(), events);
  EXPECT_EQ(state_.FindJob(JobId(job))->scaled_ms(), 0);
  EXPECT_EQ(state_.FindJob(JobId(job))->ReplicaTarget(0), 1u);
  EXPECT_EQ(state_.FindJob(JobId(job))->LastScale(0), ScaleChange{}) << "no change, no last decision";
}

// The target and the time of the last change survive a snapshot, so a new
// leader keeps the cool-down.
TEST_F(ScaleStateTest, TargetAndCoolDownSurviveEncoding) {
  const uint64_t job = SubmitScaled();
  ASSERT_TRUE(Do(ScaleJobCmd{job, 0, 3, "time-window", ""}).status.ok());
  const JobRecord& record = *state_.FindJob(JobId(job));
  auto decoded = DecodeCommand(EncodeCommand(Command{5, ScaleJobCmd{job, 0, 3, "time-window", "inside"}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<ScaleJobCmd>(decoded->body).replicas, 3u);
  EXPECT_EQ(CommandName(decoded->body), "ScaleJob");
  auto copy = wire::UnpackFromString<JobRecord>(wire::PackToString(record));
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_EQ(copy->ReplicaTarget(0), 3u);
  EXPECT_EQ(copy->scaled_ms(), record.scaled_ms());
  EXPECT_NE(copy->scaled_ms(), 0);
  EXPECT_EQ(copy->LastScale(0), (ScaleChange{record.scaled_ms(), 1, 3, "time-window", ""}));
}

// The scale driver looks at scale_jobs(), not every retained job (issue
// 49): a job with a rule is in it from its submission, through a restore,
// until retention forgets it; a job without one never is.
TEST_F(ScaleStateTest, TheIndexOfScaledJobsFollowsSubmitRestoreAndForget) {
  const uint64_t scaled = SubmitScaled();
  const uint64_t plain = Submit("plain", 1, 0);
  EXPECT_EQ(state_.scale_jobs(), (std::set<uint64_t>{scaled}));
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.scale_jobs(), (std::set<uint64_t>{scaled}));
  ASSERT_TRUE(Do(CancelJobCmd{scaled}).status.ok());
  ASSERT_TRUE(Do(CancelJobCmd{plain}).status.ok());
  ASSERT_EQ(state_.FindJob(JobId(scaled))->state, JobState::kCancelled);
  ApplyResult forgot = Do(ForgetJobsCmd{.finished_before_ms = INT64_MAX, .keep_newest = 0});
  ASSERT_TRUE(forgot.status.ok()) << forgot.status.ToString();
  EXPECT_EQ(forgot.jobs_forgotten, 2u);
  EXPECT_TRUE(state_.scale_jobs().empty());
}

}  // namespace
}  // namespace gpool::state
