// Billing in the state machine (issue 50): credit accounts (added once per
// key, refused for unknown queues), usage debited as it accrues (at
// checkpoints and at an attempt's end, never twice), minimum periods, the
// ancestor's account paying for a subtree, a used-up account keeping new
// work out of the scheduler's view, and all of it across a snapshot.
#include <algorithm>

#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "control/state/test_specs.h"
#include "protocol/model/prices.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/task_report.h"

namespace gpool::state {
namespace {

// 3.60 a GPU-hour: one GPU for one second costs 1,000 micro-units.
constexpr int64_t kGpuSecondMicro = 1'000;

class BillingStateTest : public ::testing::Test {
 protected:
  ApplyResult At(int64_t at_ms, CommandBody body) { return state_.Apply(++index_, Command{at_ms, std::move(body)}); }

  void SetUp() override {
    ASSERT_TRUE(At(0, RegisterNodeCmd{testing::MakeNode("n1", 4), {}}).status.ok());
    for (const auto& [name, parent] : std::vector<std::pair<std::string, std::string>>{{"ml", "root"}, {"ml-a", "ml"}}) {
      QueueSpec spec;
      spec.name = name;
      spec.parent = parent;
      ASSERT_TRUE(At(0, UpdateQueueCmd{UpdateQueue{QueueOp::kCreate, spec}}).status.ok());
    }
  }
  void SetPrices(BillingRules rules = {}) {
    PriceTable table;
    table.models = {ModelPrice{"A100", 3'600'000, 0}};
    table.billing = std::move(rules);
    ASSERT_TRUE(At(0, UpdatePricesCmd{table}).status.ok());
  }
  uint64_t SubmitTo(const std::string& queue) {
    JobSpec spec;
    spec.name = "j";
    spec.queue = queue;
    spec.restart.policy = "never";
    TaskGroupSpec group;
    group.command = {"true"};
    group.resources = Resources{1, 1000, 1024};
    spec.tasks.push_back(group);
    ApplyResult r = At(0, SubmitJobCmd{spec, ""});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }
  static TaskEvent BillEvent(uint64_t job, const std::string& kind, int64_t time_ms) {
    TaskEvent event;
    event.node = "n1";
    event.task = TaskId{JobId(job), 0, 0};
    event.kind = EnumFromName<TaskEventKind>(kind).value();
    event.pid = 42;
    event.time_ms = time_ms;
    return event;
  }
  void RunFor(uint64_t job, uint32_t gpu, int64_t from_ms, int64_t to_ms) {
    ASSERT_EQ(At(from_ms, ApplyPlanCmd{{PlanBind{JobId(job), 0, "n1", {gpu}, 1000, 1024}}, {}}).binds_applied, 1u);
    ASSERT_TRUE(At(from_ms, TaskEventCmd{BillEvent(job, "started", from_ms)}).status.ok());
    if (to_ms > 0) {
      ASSERT_TRUE(At(to_ms, TaskEventCmd{BillEvent(job, "exited", to_ms)}).status.ok());
    }
  }
  int64_t Balance(const std::string& account) {
    const CreditAccount* found = state_.billing().FindAccount(account);
    return found == nullptr ? INT64_MIN : found->balance_micro();
  }
  bool InView(uint64_t job) {
    const auto view = state_.BuildView(0);
    return std::any_of(view.pending.begin(), view.pending.end(),
                       [&](const topology::PendingJob& p) { return p.id == JobId(job); });
  }

  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(BillingStateTest, CreditAddsOncePerKeyAndBadAddsChangeNothing) {
  ASSERT_TRUE(At(0, CreditCmd{"ml", 5'000, "k1"}).status.ok());
  ApplyResult again = At(0, CreditCmd{"ml", 5'000, "k1"});
  EXPECT_TRUE(again.status.ok());
  EXPECT_TRUE(again.duplicate) << "a re-sent add is answered, not added";
  ASSERT_TRUE(At(0, CreditCmd{"ml", 2'000, "k2"}).status.ok());
  ASSERT_TRUE(At(0, CreditCmd{"ml", -1'000, ""}).status.ok());
  EXPECT_EQ(Balance("ml"), 6'000);
  EXPECT_EQ(At(0, CreditCmd{"nowhere", 1'000, "k3"}).status.code(), StatusCode::kNotFound);
  EXPECT_EQ(At(0, CreditCmd{"ml", 0, "k4"}).status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(state_.billing().accounts().size(), 1u);
  EXPECT_EQ(Balance("ml"), 6'000);
}

TEST_F(BillingStateTest, NothingIsBilledWithoutAPriceTable) {
  ASSERT_TRUE(At(0, CreditCmd{"ml", 1'000, ""}).status.ok());
  RunFor(SubmitTo("ml-a"), 0, 10'000, 70'000);
  EXPECT_EQ(Balance("ml"), 1'000);
  EXPECT_TRUE(state_.billing().Months(0, INT64_MAX, [](const std::string&) { return true; }).empty());
}

TEST_F(BillingStateTest, UsageIsDebitedAtCheckpointsAndAtTheEndOnce) {
  SetPrices();
  ASSERT_TRUE(At(0, CreditCmd{"ml-a", 100 * kGpuSecondMicro, ""}).status.ok());
  const uint64_t job = SubmitTo("ml-a");
  RunFor(job, 0, 10'000, 0);
  ASSERT_TRUE(At(40'000, UsageCheckpointCmd{1000, 0, 0, 0}).status.ok());
  EXPECT_EQ(Balance("ml-a"), 70 * kGpuSecondMicro) << "30 s running, billed at the checkpoint";
  ASSERT_TRUE(At(70'000, TaskEventCmd{BillEvent(job, "exited", 70'000)}).status.ok());
  EXPECT_EQ(Balance("ml-a"), 40 * kGpuSecondMicro) << "the other 30 s at its end, the first 30 not again";
  const auto months = state_.billing().Months(0, INT64_MAX, [](const std::string&) { return true; });
  ASSERT_EQ(months.size(), 1u);
  EXPECT_EQ(months[0].queue, "ml-a");
  EXPECT_EQ(months[0].account, "ml-a");
  EXPECT_EQ(months[0].list_micro, 60 * kGpuSecondMicro);
  EXPECT_EQ(months[0].charged_micro, 60 * kGpuSecondMicro);
  EXPECT_EQ(months[0].gpu_mms, 60'000'000u);
}

TEST_F(BillingStateTest, AShortAttemptIsBilledItsMinimumPeriod) {
  BillingRules rules;
  rules.min_period_ms_by_queue = {{"ml-a", 120'000}};
  SetPrices(rules);
  RunFor(SubmitTo("ml-a"), 0, 10'000, 70'000);  // 60 s of a 120 s minimum
  const auto months = state_.billing().Months(0, INT64_MAX, [](const std::string&) { return true; });
  ASSERT_EQ(months.size(), 1u);
  EXPECT_EQ(months[0].list_micro, 60 * kGpuSecondMicro);
  EXPECT_EQ(months[0].min_topup_micro, 60 * kGpuSecondMicro);
  EXPECT_EQ(months[0].charged_micro, 120 * kGpuSecondMicro);
  EXPECT_EQ(months[0].account, "") << "no account: billed without a limit";
}

TEST_F(BillingStateTest, AnUsedUpAccountKeepsNewWorkOfItsSubtreeOutUntilCredited) {
  SetPrices();
  ASSERT_TRUE(At(0, CreditCmd{"ml", 60 * kGpuSecondMicro, ""}).status.ok());
  EXPECT_EQ(state_.CreditAccountOf("ml-a"), "ml") << "the nearest ancestor's account pays";
  EXPECT_EQ(state_.CreditAccountOf("default"), "");
  RunFor(SubmitTo("ml-a"), 0, 10'000, 70'000);  // exactly the credit
  EXPECT_EQ(Balance("ml"), 0);
  EXPECT_TRUE(state_.OutOfCredit("ml-a"));
  EXPECT_TRUE(state_.OutOfCredit("ml"));
  EXPECT_FALSE(state_.OutOfCredit("default"));
  const uint64_t waiting = SubmitTo("ml-a");
  const uint64_t elsewhere = SubmitTo("default");
  EXPECT_FALSE(InView(waiting)) << "out of credit: not admitted";
  EXPECT_TRUE(InView(elsewhere)) << "a queue under no account is not limited";
  ASSERT_TRUE(At(80'000, CreditCmd{"ml", 1, ""}).status.ok());
  EXPECT_FALSE(state_.OutOfCredit("ml-a"));
  EXPECT_TRUE(InView(waiting));
}

TEST_F(BillingStateTest, AccountsAndBillsSurviveASnapshot) {
  SetPrices();
  ASSERT_TRUE(At(0, CreditCmd{"ml", 500 * kGpuSecondMicro, "key-1"}).status.ok());
  const uint64_t job = SubmitTo("ml-a");
  RunFor(job, 0, 10'000, 0);
  ASSERT_TRUE(At(40'000, UsageCheckpointCmd{1000, 0, 0, 0}).status.ok());
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.billing().ToImage(), state_.billing().ToImage());
  EXPECT_EQ(restored.billing().billed_to_ms(), 40'000);
  // The restored state goes on as the original would: the same debit at the
  // end, and the same key still a re-send.
  const Command end{70'000, TaskEventCmd{BillEvent(job, "exited", 70'000)}};
  ASSERT_TRUE(state_.Apply(++index_, end).status.ok());
  ASSERT_TRUE(restored.Apply(index_, end).status.ok());
  EXPECT_EQ(restored.billing().ToImage(), state_.billing().ToImage());
  EXPECT_TRUE(restored.Apply(index_ + 1, Command{80'000, CreditCmd{"ml", 1, "key-1"}}).duplicate);
}

TEST_F(BillingStateTest, DeletingAQueueClosesItsAccount) {
  QueueSpec spec;
  spec.name = "tmp";
  spec.parent = "root";
  ASSERT_TRUE(At(0, UpdateQueueCmd{UpdateQueue{QueueOp::kCreate, spec}}).status.ok());
  ASSERT_TRUE(At(0, CreditCmd{"tmp", 1'000, ""}).status.ok());
  ASSERT_TRUE(At(0, UpdateQueueCmd{UpdateQueue{QueueOp::kDelete, spec}}).status.ok());
  EXPECT_EQ(state_.billing().FindAccount("tmp"), nullptr);
}

}  // namespace
}  // namespace gpool::state
