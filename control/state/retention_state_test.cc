// Retention in the state machine: ForgetJobsCmd forgets finished jobs by
// finish time and count, keeps their summaries and usage, frees their
// idempotency keys, and what it leaves survives a snapshot.
#include <algorithm>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/state/cluster_state.h"
#include "control/state/test_specs.h"
#include "protocol/model/task_report.h"

namespace gpool::state {
namespace {

using testing::MakeNode;

class RetentionStateTest : public ::testing::Test {
 protected:
  RetentionStateTest() { Do(RegisterNodeCmd{MakeNode("n1", 8), {}, {}}, 1); }

  ApplyResult Do(CommandBody body, int64_t time_ms) {
    return state_.Apply(++index_, Command{time_ms, std::move(body)});
  }

  uint64_t Submit(int64_t at, const std::string& key = "", const std::string& user = "alice") {
    JobSpec spec;
    spec.name = "j";
    spec.user = user;
    TaskGroupSpec group;
    group.command = {"true"};
    group.resources = Resources{2, 1000, 1024};
    spec.tasks.push_back(group);
    ApplyResult r = Do(SubmitJobCmd{spec, key}, at);
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }

  void Event(uint64_t job, const std::string& kind, int32_t code, int64_t at) {
    TaskEvent event;
    event.node = "n1";
    event.task = TaskId{JobId(job), 0, 0};
    event.kind = EnumFromName<TaskEventKind>(kind).value();
    event.exit_code = code;
    event.pid = 100;
    ASSERT_TRUE(Do(TaskEventCmd{event}, at).status.ok());
  }

  // Binds the job's task to two GPUs at `start`, runs it, and ends it with
  // `code` at `finish` (no ending when `finish` is 0).
  void Run(uint64_t job, int64_t start, int64_t finish, int32_t code = 0) {
    ApplyResult placed = Do(ApplyPlanCmd{{PlanBind{JobId(job), 0, "n1", {0, 1}, 1000, 1024}}, {}}, start);
    ASSERT_EQ(placed.binds_applied, 1u);
    Event(job, "started", 0, start);
    if (finish != 0) Event(job, "exited", code, finish);
  }

  std::vector<uint64_t> JobIds() const {
    std::vector<uint64_t> ids;
    for (const auto& [id, job] : state_.jobs()) ids.push_back(id);
    return ids;
  }

  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(RetentionStateTest, FinishedJobsBeforeTheCutoffAreForgottenAndTheirUsageKept) {
  const uint64_t done = Submit(10);
  Run(done, 1'000, 61'000);
  const uint64_t failed = Submit(20);
  Run(failed, 70'000, 80'000, /*code=*/3);
  const uint64_t late = Submit(30);
  Run(late, 90'000, 200'000);
  const uint64_t pending = Submit(40, "", "bob");
  ASSERT_EQ(state_.FindJob(JobId(done))->state, JobState::kSucceeded);
  ASSERT_EQ(state_.FindJob(JobId(failed))->state, JobState::kFailed);
  EXPECT_TRUE(state_.AnyForgettable(100'000, 100));
  EXPECT_FALSE(state_.AnyForgettable(50'000, 100));
  EXPECT_TRUE(state_.AnyForgettable(50'000, 2));
  EXPECT_FALSE(state_.AnyForgettable(50'000, 3));

  ApplyResult r = Do(ForgetJobsCmd{.finished_before_ms = 100'000, .keep_newest = 100}, 300'000);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.jobs_forgotten, 2u);
  EXPECT_EQ(JobIds(), (std::vector<uint64_t>{late, pending}));
  EXPECT_TRUE(state_.WasForgotten(JobId(done)));
  EXPECT_FALSE(state_.WasForgotten(JobId(late)));
  EXPECT_FALSE(state_.WasForgotten(JobId(pending + 1)));  // never admitted
  EXPECT_EQ(state_.jobs_in_state(JobState::kSucceeded), 1u);
  EXPECT_EQ(state_.jobs_in_state(JobState::kFailed), 0u);
  EXPECT_EQ(state_.forgotten_count(), 2u);

  const ForgottenJob* summary = state_.FindForgotten(JobId(done));
  ASSERT_NE(summary, nullptr);
  EXPECT_EQ(summary->user, "alice");
  EXPECT_EQ(summary->queue, "default");
  EXPECT_EQ(summary->state, static_cast<uint32_t>(JobState::kSucceeded));
  EXPECT_EQ(summary->submit_ms, 10);
  EXPECT_EQ(summary->start_ms, 1'000);
  EXPECT_EQ(summary->finish_ms, 61'000);
  EXPECT_EQ(summary->gpu_ms, 2u * 60'000);
  const UsageTotal& usage = state_.usage_totals().at({"default", "alice"});
  EXPECT_EQ(usage.jobs, 2u);
  EXPECT_EQ(usage.succeeded, 1u);
  EXPECT_EQ(usage.failed, 1u);
  EXPECT_EQ(usage.gpu_ms, 2u * 60'000 + 2u * 10'000);
  EXPECT_EQ(usage.last_finish_ms, 80'000);

  // Nothing left to forget by that cutoff: the same command changes nothing.
  EXPECT_FALSE(state_.AnyForgettable(100'000, 100));
  EXPECT_EQ(Do(ForgetJobsCmd{100'000, 100}, 300'001).jobs_forgotten, 0u);
}

// AnyForgettable answers from counts and a bound of the earliest finish
// while nothing can be forgettable (issue 49: the walk over a million
// retained jobs every check held the leader's loop). Whatever happened since
// (jobs finishing, forgotten, a restore), it must answer as the full walk
// does: the reference below is that walk, over the public jobs.
TEST_F(RetentionStateTest, TheCheapAnswerAlwaysMatchesAFullWalk) {
  auto reference = [&](int64_t cutoff, uint64_t keep) {
    uint64_t finished = 0;
    for (const auto& [id, job] : state_.jobs()) {
      if (!IsTerminal(job.state)) continue;
      const bool held = std::any_of(job.tasks.begin(), job.tasks.end(), [](const TaskRecord& t) {
        return HoldsResources(t.state) || t.command_seq != 0;
      });
      if (held) continue;
      if (job.finish_ms < cutoff || ++finished > keep) return true;
    }
    return false;
  };
  uint64_t seed = 12345;
  auto next = [&seed](uint64_t bound) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % bound;
  };
  int64_t now = 1'000;
  std::vector<uint64_t> running;
  for (int step = 0; step < 300; ++step) {
    now += 1'000;
    const uint64_t action = next(10);
    if (action < 3 && running.empty()) {  // Run binds GPUs 0 and 1: one at a time
      const uint64_t job = Submit(now);
      Run(job, now, 0);
      running.push_back(job);
    } else if (action < 6 && !running.empty()) {
      Event(running.front(), "exited", static_cast<int32_t>(next(2)), now);
      running.erase(running.begin());
    } else if (action == 6) {
      Do(ForgetJobsCmd{.finished_before_ms = now - static_cast<int64_t>(next(20'000)), .keep_newest = next(6)}, now);
    } else if (action == 7) {
      ClusterState restored;
      ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
      state_ = std::move(restored);
    }
    for (int probe = 0; probe < 4; ++probe) {
      const int64_t cutoff = now - static_cast<int64_t>(next(30'000));
      const uint64_t keep = next(8) + (probe == 3 ? 1'000 : 0);
      ASSERT_EQ(state_.AnyForgettable(cutoff, keep), reference(cutoff, keep))
          << "step " << step << " cutoff " << cutoff << " keep " << keep;
    }
  }
}

TEST_F(RetentionStateTest, BeyondTheNewestNTheEarliestFinishedGoFirst) {
  // Finished in the order 3, 1, 4, 2 (ids in submission order).
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(Submit(10 + i));
  Run(ids[2], 100, 1'000);
  Run(ids[0], 1'100, 2'000);
  Run(ids[3], 2'100, 3'000);
  Run(ids[1], 3'100, 4'000);
  const uint64_t running = Submit(20);
  Run(running, 5'000, 0);
  // No time cutoff (before 0), at most two finished jobs kept; the running
  // one never counts.
  EXPECT_EQ(Do(ForgetJobsCmd{0, 2}, 10'000).jobs_forgotten, 2u);
  EXPECT_EQ(JobIds(), (std::vector<uint64_t>{ids[1], ids[3], running}));
  EXPECT_EQ(Do(ForgetJobsCmd{0, 0}, 10'001).jobs_forgotten, 2u);
  EXPECT_EQ(JobIds(), (std::vector<uint64_t>{running}));
  ASSERT_EQ(state_.forgotten().size(), 4u);
  EXPECT_EQ(state_.forgotten().front().id, ids[2]);
  EXPECT_EQ(state_.forgotten().back().id, ids[1]);
}

TEST_F(RetentionStateTest, AForgottenJobsIdempotencyKeyAdmitsANewJob) {
  const uint64_t first = Submit(10, "key-1");
  Run(first, 100, 200);
  EXPECT_EQ(Do(SubmitJobCmd{state_.FindJob(JobId(first))->spec, "key-1"}, 300).duplicate, true);
  ASSERT_EQ(Do(ForgetJobsCmd{1'000, 0}, 1'000).jobs_forgotten, 1u);
  const uint64_t second = Submit(2'000, "key-1");
  EXPECT_GT(second, first);
  EXPECT_NE(state_.FindJob(JobId(second)), nullptr);
}

TEST_F(RetentionStateTest, TheSummaryRingIsBounded) {
  const size_t jobs = ClusterState::kMaxSummaries + 5;
  for (size_t i = 0; i < jobs; ++i) Submit(static_cast<int64_t>(i));
  // Cancel every pending job: it finishes at once.
  for (const auto& id : JobIds()) ASSERT_TRUE(Do(CancelJobCmd{id, 0}, 50'000).status.ok());
  ASSERT_EQ(state_.jobs_in_state(JobState::kCancelled), jobs);
  EXPECT_EQ(Do(ForgetJobsCmd{60'000, 0}, 60'000).jobs_forgotten, jobs);
  EXPECT_EQ(state_.forgotten().size(), ClusterState::kMaxSummaries);
  EXPECT_EQ(state_.forgotten_count(), jobs);
  EXPECT_EQ(state_.FindForgotten(JobId(1)), nullptr);  // aged out of the ring
  EXPECT_TRUE(state_.WasForgotten(JobId(1)));
  EXPECT_NE(state_.FindForgotten(JobId(jobs)), nullptr);
  EXPECT_EQ(state_.usage_totals().at({"default", "alice"}).cancelled, jobs);
}

TEST_F(RetentionStateTest, ASnapshotHoldsWhatIsLeftAndNotWhatWasForgotten) {
  for (int i = 0; i < 50; ++i) Run(Submit(i), 1'000 + i * 10, 1'005 + i * 10);
  const size_t before = state_.Snapshot().size();
  ASSERT_EQ(Do(ForgetJobsCmd{1'300, 100}, 5'000).jobs_forgotten, 30u);
  const std::string snapshot = state_.Snapshot();
  EXPECT_LT(snapshot.size(), before);

  ClusterState restored;
  ASSERT_TRUE(restored.Restore(snapshot).ok());
  EXPECT_EQ(restored.jobs().size(), 20u);
  EXPECT_EQ(restored.forgotten_count(), 30u);
  EXPECT_EQ(restored.forgotten().size(), 30u);
  EXPECT_TRUE(restored.WasForgotten(JobId(1)));
  EXPECT_EQ(restored.usage_totals().at({"default", "alice"}).jobs, 30u);
  EXPECT_EQ(restored.jobs_in_state(JobState::kSucceeded), 20u);
  EXPECT_EQ(restored.Snapshot(), snapshot);
}

TEST(ForgetJobsCmdTest, RoundTripsThroughTheLogEncoding) {
  const std::string bytes = EncodeCommand(Command{77, ForgetJobsCmd{123'456, 100'000}});
  auto decoded = DecodeCommand(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->time_ms, 77);
  const auto* forget = std::get_if<ForgetJobsCmd>(&decoded->body);
  ASSERT_NE(forget, nullptr);
  EXPECT_EQ(forget->finished_before_ms, 123'456);
  EXPECT_EQ(forget->keep_newest, 100'000u);
  EXPECT_EQ(CommandName(decoded->body), "ForgetJobs");
}

}  // namespace
}  // namespace gpool::state
