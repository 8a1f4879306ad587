// `gpool events` (cli_events.cc) and the health/restart cells (format_health.cc).
#include <gtest/gtest.h>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/format_health.h"
#include "client/testing/fake_client.h"
#include "protocol/event.h"
#include "protocol/health.h"
#include "protocol/messages_client.h"

namespace gpool {
namespace {

using client::testing::CliTest;

ClusterEvent MakeEvent(uint64_t seq, std::string kind, std::string node, uint64_t job = 0) {
  ClusterEvent e;
  e.seq = seq;
  e.kind = std::move(kind);
  e.node = std::move(node);
  e.job = job;
  e.actor = "coordinator";
  e.message = "m" + std::to_string(seq);
  return e;
}

class EventsCliTest : public CliTest {
 protected:
  EventsCliTest() {
    cluster_->events = {MakeEvent(1, "node-not-ready", "n1"), MakeEvent(2, "task-lost", "n1", 7),
                        MakeEvent(3, "health-raised", "n2"), MakeEvent(4, "task-requeued", "n1", 7)};
  }
};

TEST_F(EventsCliTest, ListsEveryEventOldestFirst) {
  ASSERT_EQ(Run({"events"}), kExitOk) << err_.str();
  const std::string out = out_.str();
  EXPECT_NE(out.find("SEQ"), std::string::npos);
  EXPECT_LT(out.find("node-not-ready"), out.find("task-requeued"));
  EXPECT_NE(out.find("health-raised"), std::string::npos);
}

TEST_F(EventsCliTest, FiltersByNodeAndJobAndKeepsTheNewest) {
  ASSERT_EQ(Run({"events", "--node", "n2"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str().find("task-lost"), std::string::npos);
  EXPECT_NE(out_.str().find("health-raised"), std::string::npos);
  out_.str("");
  ASSERT_EQ(Run({"events", "--job", "7", "--limit", "1"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str().find("task-lost"), std::string::npos);
  EXPECT_NE(out_.str().find("task-requeued"), std::string::npos);
}

TEST_F(EventsCliTest, BadFlagsAreTypedErrors) {
  EXPECT_NE(Run({"events", "--job", "x"}), kExitOk);
  EXPECT_NE(err_.str().find("--job"), std::string::npos);
}

TEST(FormatHealthTest, HealthCellShowsTheWorstCondition) {
  EXPECT_EQ(HealthCell({}), "ok");
  HealthCondition warn{.kind = "disk-low", .device = "disk", .severity = "warning"};
  HealthCondition fatal{.kind = "xid", .device = "gpu/0", .severity = "fatal", .xid = 79};
  EXPECT_EQ(HealthCell({warn}), "warning: disk-low disk");
  EXPECT_EQ(HealthCell({warn, fatal}), "fatal: xid 79 gpu/0 +1");
}

TEST(FormatHealthTest, RestartTextSaysWhatIsUsedAndWhy) {
  JobSummary s;
  EXPECT_EQ(RestartText(s, RestartSpec{}), "0 of 3 used (on-node-loss)");
  s.restarts = 1;
  s.restart_reason = "node n1 was lost";
  EXPECT_EQ(RestartText(s, RestartSpec{"on-failure", 5}), "1 of 5 used (on-failure); last: node n1 was lost");
  EXPECT_EQ(RestartText(s, RestartSpec{"never", 3}), "never");
}

}  // namespace
}  // namespace gpool
