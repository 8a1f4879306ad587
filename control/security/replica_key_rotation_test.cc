// Replica key rotation with a grace (issue 48): the replicated command's
// validation and deadline (ClusterState), its record surviving snapshots and
// the command's encoding, and the peer port's admission of the old key until
// the deadline (KeyDirectory). The clock is a FakeClock: "the grace ends" is
// an Advance, never a sleep.
#include <gtest/gtest.h>

#include "control/principal.h"
#include "control/security/key_directory.h"
#include "control/state/cluster_state.h"
#include "control/state/commands.h"
#include "protocol/base/testing/fake_clock.h"

namespace gpool::control {
namespace {

const std::string kReplicaOld(40, 'o');
const std::string kReplicaNew(40, 'w');
const std::string kReplicaTwo(40, 't');
constexpr int64_t kRotationMs = 1'700'000'000'000;  // the FakeClock's start: the command's time

state::Command RotateReplica(uint64_t id, const std::string& key, const std::string& previous, uint64_t grace_ms) {
  return state::Command{kRotationMs, state::ReplicaKeyCmd{id, key, previous, grace_ms}};
}

TEST(ReplicaKeyRotationState, RecordsTheNewKeyAndTheOldOnesDeadlineFromTheCommandsTime) {
  state::ClusterState state;
  ASSERT_TRUE(state.Apply(1, RotateReplica(3, kReplicaNew, kReplicaOld, 3'600'000)).status.ok());
  ASSERT_EQ(state.replica_keys().count(3), 1u);
  const state::ReplicaKeyRecord& record = state.replica_keys().at(3);
  EXPECT_EQ(record.key, kReplicaNew);
  EXPECT_EQ(record.previous_key, kReplicaOld);
  EXPECT_EQ(record.previous_until_ms, kRotationMs + 3'600'000);
  EXPECT_TRUE(record.PreviousAdmitted(kRotationMs + 3'599'999));
  EXPECT_FALSE(record.PreviousAdmitted(kRotationMs + 3'600'000));
  // A second rotation without a grace ends the first one's at once.
  ASSERT_TRUE(state.Apply(2, RotateReplica(3, kReplicaTwo, kReplicaNew, 0)).status.ok());
  EXPECT_EQ(state.replica_keys().at(3).key, kReplicaTwo);
  EXPECT_FALSE(state.replica_keys().at(3).PreviousAdmitted(kRotationMs));
}

TEST(ReplicaKeyRotationState, BadRotationsAreTypedErrorsAndChangeNothing) {
  state::ClusterState state;
  ASSERT_TRUE(state.Apply(1, RotateReplica(2, kReplicaNew, kReplicaOld, 1000)).status.ok());
  const auto before = state.replica_keys();
  EXPECT_EQ(state.Apply(2, RotateReplica(2, kReplicaNew, kReplicaNew, 1000)).status.code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(state.Apply(3, RotateReplica(2, "not-a-key", kReplicaNew, 1000)).status.code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(state.Apply(4, RotateReplica(0, kReplicaTwo, kReplicaNew, 1000)).status.code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(state.Apply(5, RotateReplica(2, kReplicaTwo, kReplicaNew, state::kMaxReplicaKeyGraceMs + 1)).status.code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(state.replica_keys(), before);
  // Exactly 30 days is allowed.
  EXPECT_TRUE(state.Apply(6, RotateReplica(2, kReplicaTwo, kReplicaNew, state::kMaxReplicaKeyGraceMs)).status.ok());
}

TEST(ReplicaKeyRotationState, TheRecordSurvivesASnapshotAndTheCommandItsEncoding) {
  state::ClusterState state;
  ASSERT_TRUE(state.Apply(1, RotateReplica(3, kReplicaNew, kReplicaOld, 5000)).status.ok());
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(state.Snapshot()).ok());
  EXPECT_EQ(restored.replica_keys(), state.replica_keys());
  // A snapshot of before the rotation existed (no replica_keys field)
  // restores with none.
  state::ClusterState empty;
  state::ClusterState from_old;
  ASSERT_TRUE(from_old.Restore(empty.Snapshot()).ok());
  EXPECT_TRUE(from_old.replica_keys().empty());

  auto decoded = state::DecodeCommand(state::EncodeCommand(RotateReplica(3, kReplicaNew, kReplicaOld, 5000)));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto* body = std::get_if<state::ReplicaKeyCmd>(&decoded->body);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->replica_id, 3u);
  EXPECT_EQ(body->key, kReplicaNew);
  EXPECT_EQ(body->previous_key, kReplicaOld);
  EXPECT_EQ(body->grace_ms, 5000u);
  EXPECT_EQ(state::CommandName(decoded->body), "ReplicaKey");
}

TEST(ReplicaKeyRotationDirectory, ThePeerPortAdmitsTheOldKeyAsTheReplicaUntilTheDeadline) {
  FakeClock clock(kRotationMs);
  KeyDirectory directory(WorkerEnrolment::kAdmission, &clock);
  directory.SetReplicas({{1, kReplicaTwo}, {3, kReplicaOld}});
  // The rotation: the transport names the new key, the sync the retired one.
  directory.AddReplica(3, kReplicaNew);
  directory.RetireReplicaKey(3, kReplicaOld, kRotationMs + 1000);
  auto as_new = Principal::Parse(directory.Authorize("peers", kReplicaNew).value_or(""));
  auto as_old = Principal::Parse(directory.Authorize("peers", kReplicaOld).value_or(""));
  ASSERT_TRUE(as_new.has_value());
  ASSERT_TRUE(as_old.has_value());
  EXPECT_EQ(*as_new, (Principal{Principal::Kind::kReplica, "3", kReplicaNew}));
  EXPECT_EQ(*as_old, (Principal{Principal::Kind::kReplica, "3", kReplicaOld}));
  EXPECT_FALSE(directory.RetiredReplicaKeyExpired(3, kReplicaOld));
  // Only on the peer port.
  EXPECT_FALSE(directory.Authorize("clients", kReplicaOld).has_value());

  clock.Advance(1000);
  EXPECT_FALSE(directory.Authorize("peers", kReplicaOld).has_value());
  EXPECT_TRUE(directory.Authorize("peers", kReplicaNew).has_value());
  // A connection the old key still holds is refused frame by frame; the
  // current keys never are.
  EXPECT_TRUE(directory.RetiredReplicaKeyExpired(3, kReplicaOld));
  EXPECT_FALSE(directory.RetiredReplicaKeyExpired(3, kReplicaNew));
  EXPECT_FALSE(directory.RetiredReplicaKeyExpired(1, kReplicaTwo));
  EXPECT_FALSE(directory.RetiredReplicaKeyExpired(1, kReplicaOld));
}

TEST(ReplicaKeyRotationDirectory, ARotationWithoutGraceRefusesTheOldKeyAtOnce) {
  FakeClock clock(kRotationMs);
  KeyDirectory directory(WorkerEnrolment::kAdmission, &clock);
  directory.SetReplicas({{3, kReplicaOld}});
  directory.AddReplica(3, kReplicaNew);
  directory.RetireReplicaKey(3, kReplicaOld, 0);
  EXPECT_FALSE(directory.Authorize("peers", kReplicaOld).has_value());
  EXPECT_TRUE(directory.RetiredReplicaKeyExpired(3, kReplicaOld));
  // Removing the replica forgets both.
  directory.RemoveReplica(3);
  EXPECT_FALSE(directory.Authorize("peers", kReplicaNew).has_value());
  EXPECT_FALSE(directory.RetiredReplicaKeyExpired(3, kReplicaOld));
}

}  // namespace
}  // namespace gpool::control
