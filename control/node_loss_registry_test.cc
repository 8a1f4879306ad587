// The node registry's part in healing: NotReady, then Lost after the grace
// (never before), strays stopped when a node returns, health committed when
// it changes, and the lease workers are given.
#include <gtest/gtest.h>

#include "control/node_registry.h"
#include "control/testing/fake_ports.h"
#include "protocol/health.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {

class NodeLossRegistryTest : public ::testing::Test {
 protected:
  NodeLossRegistryTest() {
    NodeRegistryOptions options;
    options.node_timeout_ms = 1000;
    options.node_lost_ms = 3000;
    options.lease_ms = 1500;
    registry_ = std::make_unique<NodeRegistry>(options, state_, workers_, outbox_, proposer_, /*start_ms=*/0);
  }

  template <typename T>
  void FromWorker(const std::string& peer, const T& body, int64_t now) {
    registry_->OnFrame(peer, EncodeEnvelope(Header{.request_id = 1}, body), now);
  }

  std::vector<Envelope> WorkerFrames(MessageType type) {
    std::vector<Envelope> out;
    for (const auto& sent : outbox_.sent) {
      auto env = DecodeEnvelope(sent.frame);
      if (sent.to_worker && env.ok() && env->type() == type) out.push_back(std::move(env).value());
    }
    return out;
  }

  // n1 registered at 0 with job 1's one task running on its GPU.
  void RunOneTask() {
    FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
    JobSpec spec;
    spec.name = "j";
    spec.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{1, 100, 100}});
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [](const auto&) {});
    proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 100, 100}}, {}},
                      [](const auto&) {});
    TaskEvent started;
    started.node = "n1";
    started.seq = 1;
    started.task = TaskId{JobId(1), 0, 0};
    started.kind = TaskEventKind::kStarted;
    FromWorker("peer-a", started, 0);
  }

  const state::TaskRecord& Task() { return state_.FindJob(JobId(1))->tasks[0]; }

  state::ClusterState state_;
  WorkerTable workers_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  std::unique_ptr<NodeRegistry> registry_;
};

TEST_F(NodeLossRegistryTest, ASilentNodeIsLostOnlyAfterTheGraceAndItsTaskIsRequeued) {
  RunOneTask();
  registry_->Tick(1000);
  ASSERT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
  EXPECT_EQ(Task().state, TaskState::kRunning);
  registry_->Tick(2999);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
  registry_->Tick(3000);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kLost);
  EXPECT_EQ(Task().state, TaskState::kPending);
  EXPECT_EQ(Task().id.attempt, 1u);
  proposer_.clear();
  registry_->Tick(10'000);  // proposed once
  EXPECT_TRUE(proposer_.proposed().empty());
}

// What the worker's lease hold relies on (docs/operations.md 9.3): a new
// leadership knows nothing of when the node was last heard, so it gives
// every node the whole grace again, counted from no earlier than its own
// start, however long the node had been silent before.
TEST_F(NodeLossRegistryTest, ANewLeadershipGivesEveryNodeTheWholeGraceFromItsStart) {
  RunOneTask();
  registry_->Reset(10'000);  // a new leadership, the node silent since 0
  for (int64_t now = 10'000; now < 10'000 + 3000; now += 100) {
    registry_->Tick(now);
    ASSERT_NE(state_.FindNode("n1")->state, NodeState::kLost) << "at " << now;
  }
  EXPECT_EQ(Task().state, TaskState::kRunning);
  EXPECT_EQ(Task().id.attempt, 0u);
  // It is lost in the end if it never returns.
  for (int64_t now = 13'000; now <= 20'000; now += 100) registry_->Tick(now);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kLost);
}

TEST_F(NodeLossRegistryTest, ANodeThatHeartbeatsWithinTheGraceIsNeverLost) {
  RunOneTask();
  registry_->Tick(1000);
  ASSERT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
  FromWorker("peer-a", Heartbeat{"n1", {}}, 2500);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);
  registry_->Tick(3000);
  registry_->Tick(3400);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);
  EXPECT_EQ(Task().state, TaskState::kRunning);
}

TEST_F(NodeLossRegistryTest, ANodeThatReturnsIsToldToStopWhatIsNoLongerPlacedThere) {
  RunOneTask();
  registry_->Tick(1000);
  registry_->Tick(3000);  // lost: attempt 0 requeued as attempt 1
  outbox_.sent.clear();
  RegisterNode again{OneGpuNode("n1"), {TaskReport{TaskId{JobId(1), 0, 0}, TaskState::kRunning, 42}}, "test"};
  FromWorker("peer-a", again, 5000);
  const auto preempts = WorkerFrames(MessageType::kPreemptTask);
  ASSERT_EQ(preempts.size(), 1u);
  auto preempt = preempts[0].Body<PreemptTask>();
  ASSERT_TRUE(preempt.ok());
  EXPECT_EQ(preempt->task, (TaskId{JobId(1), 0, 0}));
  EXPECT_EQ(preempt->grace_ms, 0u);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);
}

TEST_F(NodeLossRegistryTest, RegistrationGivesTheLease) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  const auto replies = WorkerFrames(MessageType::kRegisterNodeReply);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].Body<RegisterNodeReply>()->lease_ms, 1500u);
  // A grace of 3 s leaves no room beyond the lease: the hold is the lease.
  EXPECT_EQ(replies[0].Body<RegisterNodeReply>()->lease_hold_ms, 1500u);
  // Every health kind it knows, so a newer worker tells it no other.
  EXPECT_EQ(replies[0].Body<RegisterNodeReply>()->health_kinds, kHealthKindCount);
}

TEST_F(NodeLossRegistryTest, HealthIsCommittedWhenItChangesAndNotOnRefreshes) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  HealthCondition xid{.kind = "xid", .device = "gpu/0", .severity = "fatal", .first_seen_ms = 5,
                      .last_seen_ms = 5, .count = 1, .message = "Xid 79", .xid = 79};
  Heartbeat beat{"n1", {}};
  beat.health_version = 2;
  beat.health = {xid};
  beat.health_rounds = 4;
  proposer_.clear();
  FromWorker("peer-a", beat, 10);
  ASSERT_EQ(state_.FindNode("n1")->health.size(), 1u);
  EXPECT_EQ(proposer_.proposed().size(), 1u);
  // The same list refreshed (last seen moved): nothing to commit.
  beat.health_version = 3;
  beat.health[0].last_seen_ms = 9;
  FromWorker("peer-a", beat, 20);
  EXPECT_EQ(proposer_.proposed().size(), 1u);
  EXPECT_EQ(workers_.Find("n1")->health_rounds, 4u);
  // A heartbeat without health changes nothing.
  FromWorker("peer-a", Heartbeat{"n1", {}}, 30);
  EXPECT_EQ(state_.FindNode("n1")->health.size(), 1u);
  // Cleared.
  beat.health_version = 4;
  beat.health.clear();
  beat.health_rounds = 5;
  FromWorker("peer-a", beat, 40);
  EXPECT_TRUE(state_.FindNode("n1")->health.empty());
  EXPECT_EQ(workers_.Find("n1")->clear_since_rounds, 5u);
}

TEST_F(NodeLossRegistryTest, MalformedHealthIsRefusedAndChangesNothing) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  Heartbeat beat{"n1", {}};
  beat.health_version = 1;
  beat.health = {HealthCondition{.kind = "gremlins", .severity = "fatal"}};
  FromWorker("peer-a", beat, 10);
  auto error = DecodeEnvelope(outbox_.sent.back().frame)->Body<ErrorReply>();
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->code, "InvalidArgument");
  EXPECT_TRUE(state_.FindNode("n1")->health.empty());
}

TEST(NodeLossTimesTest, TheGraceMustOutlastTheLeaseByAMargin) {
  EXPECT_TRUE(CheckNodeLossTimes(10'000, 60'000, 20'000).ok());
  EXPECT_FALSE(CheckNodeLossTimes(10'000, 10'000, 2'000).ok());  // not longer than the timeout
  EXPECT_FALSE(CheckNodeLossTimes(10'000, 24'000, 20'000).ok());  // no margin
  EXPECT_FALSE(CheckNodeLossTimes(10'000, 60'000, 0).ok());
}

// The hold is the longest lease the grace allows, never less than the lease.
TEST(NodeLossTimesTest, TheLeaseHoldIsTheGraceLessTheMargin) {
  EXPECT_EQ(LeaseHoldMs(60'000, 20'000), 55'000u);
  EXPECT_EQ(LeaseHoldMs(25'000, 20'000), 20'000u);
  EXPECT_EQ(LeaseHoldMs(24'000, 20'000), 20'000u);  // below the margin: only the lease
  EXPECT_EQ(LeaseHoldMs(int64_t{1} << 40, 20'000), UINT32_MAX);
}

}  // namespace
}  // namespace gpool::control
