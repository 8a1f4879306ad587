// GetUsage and UpdatePrices through the gateway: who sees whose usage
// (admin all, a queue-admin its subtree, anyone their own), input checks, and
// the price table set by admins only.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "control/gateway_fixture.h"
#include "protocol/message_type.h"
#include "protocol/messages_usage.h"
#include "protocol/model/prices.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {


class GatewayUsageTest : public GatewayTest {
 protected:
  GatewayUsageTest() {
    AddRoleTree();
    Apply(state::RegisterNodeCmd{OneGpuNode("n1"), {}});
    // One task after another on n1's GPU: 100 s, 200 s and 300 s.
    RunFor("mem", "ml-a", 1'000'000, 100'000);
    RunFor("other", "ml-b", 1'200'000, 200'000);
    RunFor("other", "web", 1'500'000, 300'000);
  }

  void RunFor(const std::string& user, const std::string& queue, int64_t start_ms, int64_t duration_ms) {
    JobSpec spec = OneGpuJob();
    spec.user = user;
    spec.queue = queue;
    uint64_t job = 0;
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [&](const state::ApplyResult& r) { job = r.job_id; });
    Apply(state::ApplyPlanCmd{{state::PlanBind{JobId(job), 0, "n1", {0}, 0, 0}}, {}});
    for (const auto& [kind, at] : {std::pair{"started", start_ms}, std::pair{"exited", start_ms + duration_ms}}) {
      TaskEvent event;
      event.node = "n1";
      event.task = TaskId{JobId(job), 0, 0};
      event.kind = EnumFromName<TaskEventKind>(kind).value();
      event.pid = 7;
      event.time_ms = at;
      Apply(state::TaskEventCmd{event});
    }
  }
  static Principal As(const std::string& name, const std::string& key) {
    return Principal{Principal::Kind::kUser, name, key};
  }
  // user -> GPU-seconds, as `name` sees them.
  std::map<std::string, uint64_t> ByUser(const Principal& who, const std::string& queue = {}) {
    SendAs(who, GetUsage{.from_ms = 0, .to_ms = 2 * 3'600'000, .by = "user", .queue = queue});
    std::map<std::string, uint64_t> seconds;
    for (const auto& row : LastAs<GetUsageReply>().rows) seconds[row.user] = row.gpu_mms / 1'000'000;
    return seconds;
  }
};

TEST_F(GatewayUsageTest, EachRoleSeesWhatItMay) {
  using Seconds = std::map<std::string, uint64_t>;
  EXPECT_EQ(ByUser(As("root-admin", kKeyAdmin)), (Seconds{{"mem", 100}, {"other", 500}}));
  EXPECT_EQ(ByUser(As("qa", kKeyQa)), (Seconds{{"mem", 100}, {"other", 200}}));  // ml's subtree only
  EXPECT_EQ(ByUser(As("mem", kKeyMember)), (Seconds{{"mem", 100}}));            // its own
  EXPECT_EQ(ByUser(As("view", kKeyViewer)), Seconds{});                          // nothing of its own
  EXPECT_EQ(ByUser(As("root-admin", kKeyAdmin), "ml-b"), (Seconds{{"other", 200}}));
  EXPECT_EQ(ByUser(As("qa", kKeyQa), "web"), Seconds{});
}

TEST_F(GatewayUsageTest, ReportsByQueueAndJobAndRoundsToHours) {
  SendAs(As("root-admin", kKeyAdmin), GetUsage{.from_ms = 10, .to_ms = 3'600'001, .by = "queue"});
  const auto by_queue = LastAs<GetUsageReply>();
  EXPECT_EQ(by_queue.from_ms, 0);
  EXPECT_EQ(by_queue.to_ms, 2 * 3'600'000);
  ASSERT_EQ(by_queue.rows.size(), 3u);
  EXPECT_EQ(by_queue.rows[0].queue, "ml-a");
  EXPECT_EQ(by_queue.rows[0].records, 1u);
  SendAs(As("root-admin", kKeyAdmin), GetUsage{.from_ms = 0, .to_ms = 3'600'000, .by = "job"});
  const auto by_job = LastAs<GetUsageReply>();
  ASSERT_EQ(by_job.rows.size(), 3u);
  EXPECT_EQ(by_job.rows[2].job, 3u);
  EXPECT_EQ(by_job.rows[2].gpu_mms, 1000u * 300'000);
}

TEST_F(GatewayUsageTest, ARangeBeforeTheHourlyWindowIsAnsweredInWholeDays) {
  Apply(state::UsageCheckpointCmd{.keep_records = 100, .hourly_before_ms = 3 * 3'600'000});
  SendAs(As("root-admin", kKeyAdmin), GetUsage{.from_ms = 10, .to_ms = 3'600'001, .by = "queue"});
  const auto by_queue = LastAs<GetUsageReply>();
  EXPECT_EQ(by_queue.from_ms, 0);
  EXPECT_EQ(by_queue.to_ms, 24 * 3'600'000);  // the whole day the daily rollup holds
  ASSERT_EQ(by_queue.rows.size(), 3u);
  EXPECT_EQ(by_queue.rows[2].gpu_mms, 1000u * 300'000);
  // The raw records are exact: --by job keeps its hours.
  SendAs(As("root-admin", kKeyAdmin), GetUsage{.from_ms = 10, .to_ms = 3'600'001, .by = "job"});
  EXPECT_EQ(LastAs<GetUsageReply>().to_ms, 2 * 3'600'000);
}

TEST_F(GatewayUsageTest, BadRequestsAreRefusedWithReasons) {
  const Principal admin = As("root-admin", kKeyAdmin);
  SendAs(admin, GetUsage{.from_ms = 5000, .to_ms = 5000});
  EXPECT_EQ(LastError(), "InvalidArgument");
  SendAs(admin, GetUsage{.from_ms = 0, .to_ms = 1000, .by = "node"});
  EXPECT_EQ(LastError(), "InvalidArgument");
  SendAs(admin, GetUsage{.from_ms = 0, .to_ms = int64_t{500} * 24 * 3'600'000});
  EXPECT_EQ(LastError(), "InvalidArgument");
  SendAs(admin, GetUsage{.from_ms = 0, .to_ms = 1000, .queue = "nope"});
  EXPECT_EQ(LastError(), "NotFound");
}

TEST_F(GatewayUsageTest, OnlyAdminsSetPricesAndEveryoneReadsThem) {
  PriceTable table;
  table.currency = "EUR";
  table.models = {ModelPrice{"A100", 2'500'000, 0}};
  table.pool_permille = {{"exclusive", 1300}};
  SendAs(As("qa", kKeyQa), UpdatePrices{PricesOp::kSet, table});
  EXPECT_EQ(LastError(), "PermissionDenied");
  PriceTable bad = table;
  bad.models.push_back(ModelPrice{"A100", 1, 0});
  SendAs(As("root-admin", kKeyAdmin), UpdatePrices{PricesOp::kSet, bad});
  EXPECT_EQ(LastError(), "InvalidArgument");
  EXPECT_EQ(state_.usage_ledger().prices(), nullptr);  // nothing changed

  SendAs(As("view", kKeyViewer), UpdatePrices{PricesOp::kShow, {}});
  EXPECT_FALSE(LastAs<UpdatePricesReply>().set);
  SendAs(As("root-admin", kKeyAdmin), UpdatePrices{PricesOp::kSet, table});
  const auto set = LastAs<UpdatePricesReply>();
  EXPECT_TRUE(set.set);
  EXPECT_EQ(set.table.set_by, "root-admin");
  SendAs(As("view", kKeyViewer), UpdatePrices{PricesOp::kShow, {}});
  const auto shown = LastAs<UpdatePricesReply>();
  ASSERT_TRUE(shown.set);
  EXPECT_EQ(shown.table.currency, "EUR");
  EXPECT_EQ(shown.table.pool_permille.at("exclusive"), 1300u);
  SendAs(As("view", kKeyViewer), RawOpBody<MessageType::kUpdatePrices>{.op = "drop"});
  EXPECT_EQ(LastError(), "InvalidArgument");
}

}  // namespace
}  // namespace gpool::control
