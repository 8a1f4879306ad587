// Node key rotation with a grace (issue 48): `gpool admin node enrol NAME
// --node-key new.pub --grace D` binds the new key and keeps the old one
// admitted as the node, at the handshake (KeyDirectory), on registration
// (the state and the registry) and on every frame, until the rotating
// command's time plus D; after that it is refused without another log entry.
// The clock here is a FakeClock that starts at the ImmediateProposer's
// command time, so "the grace ends" is an Advance, never a sleep.
#include <gtest/gtest.h>

#include "control/node_registry.h"
#include "control/security/key_directory.h"
#include "control/security/key_sync.h"
#include "control/testing/fake_ports.h"
#include "protocol/base/testing/fake_clock.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/node_update.h"
#include "protocol/model/users.h"

namespace gpool::control {
namespace {

const std::string kOldKey(40, 'o');
const std::string kNewKey(40, 'w');
const std::string kStranger(40, 's');
constexpr int64_t kCommandMs = 1'000'000;  // ImmediateProposer's command time
constexpr uint64_t kGraceMs = 3000;

Principal RotatingNewNode(const std::string& key) { return Principal{Principal::Kind::kNewNode, "", key}; }
Principal RotatingBoundNode(const std::string& name, const std::string& key) {
  return Principal{Principal::Kind::kNode, name, key};
}

UpdateNode Rotate(const std::string& node, const std::string& key, uint64_t grace_ms) {
  UpdateNode update;
  update.node = node;
  update.op = NodeUpdateOp::kWorkerKey;
  update.key = key;
  update.grace_ms = grace_ms;
  return update;
}

class KeyRotationTest : public ::testing::Test {
 protected:
  KeyRotationTest() {
    NodeRegistryOptions options;
    options.node_timeout_ms = 60'000;
    options.keys = &keys_;
    options.clock = &clock_;
    options.enrolment = WorkerEnrolment::kAdmission;
    registry_ = std::make_unique<NodeRegistry>(options, state_, workers_, outbox_, proposer_, /*start_ms=*/0);
    // n1 bound to the old key (an admin's enrolment, then its registration).
    Commit(Rotate("n1", kOldKey, 0));
    FromWorker("peer-old", RegisterNode{OneGpuNode("n1"), {}, "test"}, RotatingBoundNode("n1", kOldKey));
    EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
    EXPECT_EQ(state_.FindNode("n1")->worker_key, kOldKey);
  }

  // A committed UpdateNode, with what the coordinator's KeySync does as it applies.
  void Commit(const UpdateNode& update) {
    state::CommandBody body = state::UpdateNodeCmd{update};
    proposer_.Propose(body, [&](const state::ApplyResult& result) {
      ASSERT_TRUE(result.status.ok()) << result.status.ToString();
      sync_.Applied(state::Command{kCommandMs, body}, result, state_);
    });
  }
  template <typename T>
  void FromWorker(const std::string& peer, const T& body, const Principal& principal) {
    registry_->OnFrame(peer, EncodeEnvelope(Header{.request_id = ++request_id_}, body), ++now_, principal);
  }
  Envelope LastToWorker() {
    EXPECT_FALSE(outbox_.sent.empty());
    return DecodeEnvelope(outbox_.sent.back().frame).value();
  }
  std::string LastErrorCode() {
    auto error = LastToWorker().Body<ErrorReply>();
    return error.ok() ? error->code : "(not an error)";
  }
  MessageType Beat(const std::string& peer, const std::string& key) {
    Heartbeat beat;
    beat.node = "n1";
    FromWorker(peer, beat, RotatingBoundNode("n1", key));
    return LastToWorker().type();
  }

  FakeClock clock_{kCommandMs};
  int64_t now_ = 0;
  uint64_t request_id_ = 0;
  state::ClusterState state_;
  WorkerTable workers_;
  ImmediateProposer proposer_{state_, kCommandMs};
  RecordingOutbox outbox_;
  KeyDirectory keys_{WorkerEnrolment::kAdmission, &clock_};
  KeySync sync_{&keys_, /*admin_key_configured=*/true};
  std::unique_ptr<NodeRegistry> registry_;
};

TEST_F(KeyRotationTest, TheOldKeyWorksUntilTheGraceEndsThenIsRefusedEverywhere) {
  Commit(Rotate("n1", kNewKey, kGraceMs));
  const state::NodeRecord& node = *state_.FindNode("n1");
  EXPECT_EQ(node.worker_key, kNewKey);
  EXPECT_EQ(node.retired_key, kOldKey);
  EXPECT_EQ(node.retired_key_until_ms, kCommandMs + static_cast<int64_t>(kGraceMs));

  // During the grace: the old key is still the node at the handshake, its
  // connection's heartbeats are taken, and it may register again.
  EXPECT_EQ(keys_.Authorize("workers", kOldKey), "node|n1|" + kOldKey);
  EXPECT_EQ(keys_.Authorize("workers", kNewKey), "node|n1|" + kNewKey);
  EXPECT_EQ(Beat("peer-old", kOldKey), MessageType::kAck);
  FromWorker("peer-old2", RegisterNode{OneGpuNode("n1"), {}, "test"}, RotatingBoundNode("n1", kOldKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
  EXPECT_EQ(state_.FindNode("n1")->worker_key, kNewKey);  // registering with the old key does not rebind it
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);

  // The grace ends: no log entry, only the clock.
  clock_.Advance(static_cast<int64_t>(kGraceMs));
  EXPECT_EQ(keys_.Authorize("workers", kOldKey), "new-node||" + kOldKey);  // a stranger now
  EXPECT_NE(Beat("peer-old2", kOldKey), MessageType::kAck);
  FromWorker("peer-old3", RegisterNode{OneGpuNode("n1"), {}, "test"}, RotatingNewNode(kOldKey));
  EXPECT_EQ(LastErrorCode(), "Unauthenticated");
  // The new key registers and is the node.
  FromWorker("peer-new", RegisterNode{OneGpuNode("n1"), {}, "test"}, RotatingBoundNode("n1", kNewKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
  EXPECT_EQ(Beat("peer-new", kNewKey), MessageType::kAck);
  // A stranger never was the node.
  FromWorker("peer-s", RegisterNode{OneGpuNode("n1"), {}, "test"}, RotatingNewNode(kStranger));
  EXPECT_EQ(LastErrorCode(), "Unauthenticated");
}

TEST_F(KeyRotationTest, WithoutAGraceTheOldKeyIsRefusedAtOnce) {
  Commit(Rotate("n1", kNewKey, 0));
  EXPECT_TRUE(state_.FindNode("n1")->retired_key.empty());
  EXPECT_EQ(keys_.Authorize("workers", kOldKey), "new-node||" + kOldKey);
  EXPECT_NE(Beat("peer-old", kOldKey), MessageType::kAck);
  FromWorker("peer-old2", RegisterNode{OneGpuNode("n1"), {}, "test"}, RotatingNewNode(kOldKey));
  EXPECT_EQ(LastErrorCode(), "Unauthenticated");
}

TEST_F(KeyRotationTest, ARotationWithoutGraceEndsAnEarlierOnesGrace) {
  Commit(Rotate("n1", kNewKey, kGraceMs));
  Commit(Rotate("n1", kStranger, 0));  // the admin changes their mind: no key but the newest
  EXPECT_TRUE(state_.FindNode("n1")->retired_key.empty());
  EXPECT_EQ(keys_.Authorize("workers", kOldKey), "new-node||" + kOldKey);
  EXPECT_EQ(keys_.Authorize("workers", kNewKey), "new-node||" + kNewKey);
  EXPECT_NE(Beat("peer-old", kOldKey), MessageType::kAck);
}

TEST_F(KeyRotationTest, TheRetiredKeySurvivesASnapshotAndARebuiltDirectory) {
  Commit(Rotate("n1", kNewKey, kGraceMs));
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.FindNode("n1")->retired_key, kOldKey);
  EXPECT_EQ(restored.FindNode("n1")->retired_key_until_ms, kCommandMs + static_cast<int64_t>(kGraceMs));
  KeyDirectory rebuilt(WorkerEnrolment::kAdmin, &clock_);
  KeySync(&rebuilt, true).SyncAll(restored);
  EXPECT_EQ(rebuilt.Authorize("workers", kOldKey), "node|n1|" + kOldKey);
  clock_.Advance(static_cast<int64_t>(kGraceMs));
  EXPECT_FALSE(rebuilt.Authorize("workers", kOldKey).has_value());  // admin enrolment: refused outright
  EXPECT_EQ(rebuilt.Authorize("workers", kNewKey), "node|n1|" + kNewKey);
}

// The deadline is the command's time plus the grace, so replicas applying
// the same entry agree whatever their clocks; past it, the state refuses the
// old key and a registration drops the expired entry.
TEST(KeyRotationApply, TheDeadlineIsTheCommandsAndAnExpiredEntryIsDroppedLazily) {
  state::ClusterState state;
  ASSERT_TRUE(state.Apply(1, state::Command{100, state::RegisterNodeCmd{OneGpuNode("n1"), {}, {}, kOldKey}}).status.ok());
  ASSERT_TRUE(state.Apply(2, state::Command{200, state::UpdateNodeCmd{Rotate("n1", kNewKey, 1000)}}).status.ok());
  EXPECT_EQ(state.FindNode("n1")->retired_key_until_ms, 1200);
  EXPECT_TRUE(state.KeyAdmitted("n1", kOldKey, 1199));
  EXPECT_FALSE(state.KeyAdmitted("n1", kOldKey, 1200));
  auto during = state.Apply(3, state::Command{1199, state::RegisterNodeCmd{OneGpuNode("n1"), {}, {}, kOldKey}});
  EXPECT_TRUE(during.status.ok()) << during.status.ToString();
  auto after = state.Apply(4, state::Command{1200, state::RegisterNodeCmd{OneGpuNode("n1"), {}, {}, kOldKey}});
  EXPECT_EQ(after.status.code(), StatusCode::kUnauthenticated);
  ASSERT_TRUE(state.Apply(5, state::Command{1300, state::RegisterNodeCmd{OneGpuNode("n1"), {}, {}, kNewKey}}).status.ok());
  EXPECT_TRUE(state.FindNode("n1")->retired_key.empty());
  EXPECT_EQ(state.FindNode("n1")->worker_key, kNewKey);
}

// A user's key in retirement (UserSpec::key_expiry): admitted at the
// handshake until its deadline by the directory's clock, then refused.
TEST(UserKeyRotationDirectory, ARetiringUserKeyIsAdmittedUntilItsDeadline) {
  FakeClock clock(10'000);
  KeyDirectory keys(WorkerEnrolment::kAdmission, &clock);
  state::ClusterState state;
  ASSERT_TRUE(state.Apply(1, state::Command{10'000, state::UpdateUserCmd{UpdateUser{
                                                        UserOp::kCreate, UserSpec{"alice", {kOldKey}}}}})
                  .status.ok());
  UpdateUser rotate{UserOp::kRotateKey, UserSpec{"alice", {kNewKey}}};
  rotate.retire_keys = {kOldKey};
  rotate.grace_ms = 500;
  const state::Command command{10'000, state::UpdateUserCmd{rotate}};
  const state::ApplyResult result = state.Apply(2, command);
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  KeySync sync(&keys, /*admin_key_configured=*/true);
  sync.Applied(command, result, state);
  EXPECT_EQ(keys.Authorize("clients", kOldKey), "user|alice|" + kOldKey);
  EXPECT_EQ(keys.Authorize("clients", kNewKey), "user|alice|" + kNewKey);
  clock.Advance(500);
  EXPECT_FALSE(keys.Authorize("clients", kOldKey).has_value());
  EXPECT_EQ(keys.Authorize("clients", kNewKey), "user|alice|" + kNewKey);
  // A rebuilt directory (a new leader, a restored snapshot) agrees.
  KeyDirectory rebuilt(WorkerEnrolment::kAdmission, &clock);
  KeySync(&rebuilt, true).SyncAll(state);
  EXPECT_FALSE(rebuilt.Authorize("clients", kOldKey).has_value());
}

}  // namespace
}  // namespace gpool::control
