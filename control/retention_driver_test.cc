#include "control/retention_driver.h"

#include <gtest/gtest.h>

#include "control/testing/fake_ports.h"
#include "protocol/base/testing/fake_clock.h"

namespace gpool::control {
namespace {

constexpr int64_t kDay = int64_t{24} * 3600 * 1000;

class RetentionDriverTest : public ::testing::Test {
 protected:
  // Jobs are submitted and cancelled at wall time 1,000,000 (the
  // ImmediateProposer's), so they finish then.
  uint64_t SubmitAndCancel() {
    JobSpec spec;
    spec.name = "j";
    spec.tasks.push_back(TaskGroupSpec{.command = {"true"}});
    uint64_t id = 0;
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [&](const state::ApplyResult& r) { id = r.job_id; });
    proposer_.Propose(state::CancelJobCmd{id, 0}, [](const state::ApplyResult&) {});
    return id;
  }

  state::ClusterState state_;
  ImmediateProposer proposer_{state_};
  FakeClock clock_{1'000'000 + kDay};
};

TEST_F(RetentionDriverTest, ProposesOnlyWhenSomethingIsPastThePolicyAndAtMostEveryInterval) {
  state::RetentionPolicy policy{.keep_ms = 7 * kDay, .keep_jobs = 2, .check_every_ms = 60'000};
  RetentionDriver driver(policy, state_, proposer_, &clock_);
  for (int i = 0; i < 2; ++i) SubmitAndCancel();
  proposer_.clear();
  driver.Tick(0);  // two finished, two kept, none a week old: nothing to do
  EXPECT_TRUE(proposer_.proposed().empty());

  const uint64_t third = SubmitAndCancel();
  proposer_.clear();
  driver.Tick(59'999);  // within the interval: not looked at
  EXPECT_TRUE(proposer_.proposed().empty());
  driver.Tick(60'000);  // three finished, two kept: the oldest goes
  EXPECT_EQ(proposer_.proposed(), std::vector<std::string>{"ForgetJobs"});
  EXPECT_EQ(state_.jobs().size(), 2u);
  EXPECT_TRUE(state_.WasForgotten(JobId(1)));
  EXPECT_FALSE(state_.WasForgotten(JobId(third)));

  // A week after they finished, the rest go too.
  proposer_.clear();
  clock_.Advance(6 * kDay + 1);  // a week and 1 ms after they finished
  driver.Tick(120'000);
  EXPECT_EQ(proposer_.proposed(), std::vector<std::string>{"ForgetJobs"});
  EXPECT_TRUE(state_.jobs().empty());
  EXPECT_EQ(state_.forgotten_count(), 3u);
}

}  // namespace
}  // namespace gpool::control
