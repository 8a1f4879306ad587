// The leader's health loop over fakes: a fatal XID fences its GPU and cordons
// the node, N clear rounds lift it, an operator's cordon stays, an exempt node
// is only alerted about, and nothing is proposed twice.
#include "control/health_driver.h"

#include <gtest/gtest.h>

#include "control/testing/fake_ports.h"
#include "protocol/base/testing/fake_clock.h"
#include "protocol/health.h"
#include "protocol/model/node_update.h"

namespace gpool::control {
namespace {

class HealthDriverTest : public ::testing::Test {
 protected:
  HealthDriverTest() {
    for (const char* name : {"n1", "n2"}) {
      NodeSpec node = OneGpuNode(name);
      node.gpus.push_back(GpuInfo{.index = 1, .uuid = std::string("GPU-1-") + name, .model = "A100"});
      proposer_.Propose(state::RegisterNodeCmd{node, {}, {}}, [](const auto&) {});
      workers_.Connect(name, std::string("peer-") + name, 0, 0);
    }
    driver_ = std::make_unique<HealthDriver>(health::HealthPolicyConfig{}, state_, workers_, proposer_, &clock_);
  }

  void Report(const std::string& node, std::vector<HealthCondition> health, uint64_t rounds) {
    workers_.RecordHealth(node, ++version_, health, rounds);
    proposer_.Propose(state::NodeHealthCmd{node, std::move(health)}, [](const auto&) {});
  }
  void Rounds(const std::string& node, uint64_t rounds) { workers_.RecordHealth(node, 0, {}, rounds); }

  void Tick() {
    now_ += HealthDriver::kEvaluateEveryMs;
    driver_->Tick(now_);
  }

  static HealthCondition Xid(int32_t code, uint32_t gpu = 1) {
    return HealthCondition{.kind = "xid", .device = "gpu/" + std::to_string(gpu), .severity = "fatal",
                           .first_seen_ms = 10, .last_seen_ms = 10, .count = 1,
                           .message = "Xid " + std::to_string(code), .xid = code};
  }

  size_t Proposed(const std::string& name) {
    size_t n = 0;
    for (const auto& p : proposer_.proposed()) n += p == name ? 1 : 0;
    return n;
  }

  state::ClusterState state_;
  WorkerTable workers_;
  ImmediateProposer proposer_{state_};
  FakeClock clock_;
  std::unique_ptr<HealthDriver> driver_;
  int64_t now_ = 0;
  uint64_t version_ = 1;
};

TEST_F(HealthDriverTest, AFatalXidFencesItsGpuAndCordonsUntilClearRoundsLiftIt) {
  Report("n1", {Xid(79)}, 1);
  Tick();
  const state::NodeRecord& n1 = *state_.FindNode("n1");
  EXPECT_TRUE(n1.cordoned);
  EXPECT_EQ(n1.cordon_reason, "health");
  EXPECT_FALSE(n1.GpuUsable(n1.spec.gpus[1]));
  EXPECT_TRUE(n1.GpuUsable(n1.spec.gpus[0]));
  EXPECT_FALSE(state_.FindNode("n2")->cordoned);
  proposer_.clear();
  Tick();
  Tick();
  EXPECT_TRUE(proposer_.proposed().empty()) << "an action proposed twice";

  Report("n1", {}, 2);
  for (uint64_t round = 3; round <= 4; ++round) {
    Rounds("n1", round);
    Tick();
    EXPECT_TRUE(n1.cordoned) << "lifted after " << round - 2 << " clear rounds";
  }
  Rounds("n1", 5);
  Tick();
  EXPECT_FALSE(n1.cordoned);
  EXPECT_TRUE(n1.GpuUsable(n1.spec.gpus[1]));
}

// A round walks the nodes with something wrong, not the cluster: a healthy
// node can be neither fenced nor lifted, and copying every node ten times
// a second was loop time that grew with the cluster (issue 49).
TEST_F(HealthDriverTest, ARoundWalksOnlyTheNodesWithSomethingWrong) {
  Tick();
  EXPECT_EQ(driver_->nodes_evaluated(), 0u);
  Report("n1", {Xid(79)}, 1);
  Tick();
  EXPECT_EQ(driver_->nodes_evaluated(), 1u);
  EXPECT_TRUE(state_.FindNode("n1")->cordoned);
  Report("n1", {}, 2);
  Tick();
  EXPECT_EQ(driver_->nodes_evaluated(), 1u) << "cordoned by health and clear: walked until lifted";
  for (uint64_t round = 3; round <= 5; ++round) {
    Rounds("n1", round);
    Tick();
  }
  EXPECT_FALSE(state_.FindNode("n1")->cordoned);
  Tick();
  EXPECT_EQ(driver_->nodes_evaluated(), 0u);
}

TEST_F(HealthDriverTest, AnApplicationXidIsRecordedButFencesNothing) {
  Report("n1", {Xid(13)}, 1);
  Tick();
  Tick();
  EXPECT_FALSE(state_.FindNode("n1")->cordoned);
  EXPECT_TRUE(state_.FindNode("n1")->unhealthy_gpus.empty());
  EXPECT_EQ(state_.FindNode("n1")->health.size(), 1u);
}

TEST_F(HealthDriverTest, AnOperatorsCordonIsNeverLifted) {
  UpdateNode cordon;
  cordon.node = "n1";
  cordon.op = NodeUpdateOp::kCordon;
  proposer_.Propose(state::UpdateNodeCmd{cordon}, [](const auto&) {});
  Report("n1", {Xid(79)}, 1);
  Tick();
  Report("n1", {}, 2);
  for (uint64_t round = 3; round < 10; ++round) {
    Rounds("n1", round);
    Tick();
  }
  EXPECT_TRUE(state_.FindNode("n1")->cordoned);
  EXPECT_EQ(state_.FindNode("n1")->cordon_reason, "operator");
}

TEST_F(HealthDriverTest, AnExemptNodeIsAlertedAboutOnceAndNotFenced) {
  UpdateNode label;
  label.node = "n2";
  label.op = NodeUpdateOp::kLabel;
  label.labels = {{"health.gpool.io/exempt", "true"}};
  proposer_.Propose(state::UpdateNodeCmd{label}, [](const auto&) {});
  Report("n2", {Xid(79)}, 1);
  Tick();
  Tick();
  Tick();
  EXPECT_FALSE(state_.FindNode("n2")->cordoned);
  EXPECT_TRUE(state_.FindNode("n2")->unhealthy_gpus.empty());
  size_t suppressed = 0;
  for (const auto& e : state_.events()) suppressed += e.kind == "health-fence-suppressed" ? 1 : 0;
  EXPECT_GE(suppressed, 1u);
  const size_t before = suppressed;
  Tick();
  suppressed = 0;
  for (const auto& e : state_.events()) suppressed += e.kind == "health-fence-suppressed" ? 1 : 0;
  EXPECT_EQ(suppressed, before) << "the same alert was committed again";
}

}  // namespace
}  // namespace gpool::control
