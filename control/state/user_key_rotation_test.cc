// A user's key rotated with a grace (issue 48, `gpool admin user rotate-key`):
// the new key is added, the old one kept with a deadline the command's time
// sets (so every replica agrees), valid until then and dropped from the
// record lazily by the user's next change; entries logged before rotate-key
// existed replay unchanged.
#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "protocol/model/users.h"
#include "protocol/validate_users.h"

namespace gpool::state {
namespace {

constexpr char kOld[] = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
constexpr char kNew[] = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
constexpr char kOther[] = "0123456789abcdefghij0123456789abcdefghij";

UpdateUser Rotate(std::string user, std::string add, std::string retire, uint64_t grace_ms) {
  UpdateUser update{UserOp::kRotateKey, UserSpec{std::move(user), {std::move(add)}}};
  update.retire_keys = {std::move(retire)};
  update.grace_ms = grace_ms;
  return update;
}

class UserKeyRotationTest : public ::testing::Test {
 protected:
  UserKeyRotationTest() {
    EXPECT_TRUE(Do(1'000, UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"alice", {kOld}}}}).status.ok());
  }
  ApplyResult Do(int64_t time_ms, CommandBody body) { return state_.Apply(++index_, Command{time_ms, std::move(body)}); }
  const UserSpec& Alice() const { return *state_.FindUser("alice"); }
  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(UserKeyRotationTest, TheOldKeyIsValidUntilTheCommandsTimePlusTheGrace) {
  ASSERT_TRUE(Do(5'000, UpdateUserCmd{Rotate("alice", kNew, kOld, 2'000)}).status.ok());
  EXPECT_EQ(Alice().keys, (std::vector<std::string>{kOld, kNew}));
  EXPECT_EQ(Alice().key_expiry.at(kOld), 7'000);
  EXPECT_TRUE(Alice().KeyValid(kOld, 6'999));
  EXPECT_FALSE(Alice().KeyValid(kOld, 7'000));
  EXPECT_TRUE(Alice().KeyValid(kNew, 1'000'000));
  // The key still names alice while it is held: nobody else may take it.
  EXPECT_EQ(Do(6'000, UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"bob", {kOld}}}}).status.code(),
            StatusCode::kAlreadyExists);
  // The user's next change after the deadline drops it.
  ASSERT_TRUE(Do(7'000, UpdateUserCmd{UpdateUser{UserOp::kAddKey, UserSpec{"alice", {kOther}}}}).status.ok());
  EXPECT_EQ(Alice().keys, (std::vector<std::string>{kNew, kOther}));
  EXPECT_TRUE(Alice().key_expiry.empty());
  // A snapshot keeps a retiring key's deadline.
  ASSERT_TRUE(Do(8'000, UpdateUserCmd{Rotate("alice", kOld, kOther, 60'000)}).status.ok());
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.FindUser("alice")->key_expiry.at(kOther), 68'000);
}

TEST_F(UserKeyRotationTest, WithoutAGraceTheOldKeyGoesAtOnceAndAStrangersKeyChangesNothing) {
  EXPECT_EQ(Do(5'000, UpdateUserCmd{Rotate("alice", kNew, kOther, 1'000)}).status.code(), StatusCode::kNotFound);
  EXPECT_EQ(Alice().keys, std::vector<std::string>{kOld});
  ASSERT_TRUE(Do(5'000, UpdateUserCmd{Rotate("alice", kNew, kOld, 0)}).status.ok());
  EXPECT_EQ(Alice().keys, std::vector<std::string>{kNew});
  EXPECT_TRUE(Alice().key_expiry.empty());
}

TEST(UserKeyRotationValidate, BadRotationsAreRefusedWithTypedErrors) {
  EXPECT_TRUE(ValidateUpdateUser(Rotate("alice", kNew, kOld, 3'600'000)).ok());
  UpdateUser no_retire = Rotate("alice", kNew, kOld, 0);
  no_retire.retire_keys.clear();
  EXPECT_EQ(ValidateUpdateUser(no_retire).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateUpdateUser(Rotate("alice", kNew, kNew, 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateUpdateUser(Rotate("alice", kNew, "short", 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateUpdateUser(Rotate("alice", kNew, kOld, 31ull * 24 * 3600 * 1000)).code(),
            StatusCode::kInvalidArgument);
  UpdateUser graced_add{UserOp::kAddKey, UserSpec{"alice", {kNew}}};
  graced_add.grace_ms = 1000;
  EXPECT_EQ(ValidateUpdateUser(graced_add).code(), StatusCode::kInvalidArgument);
  // The deadline is the coordinator's to set.
  UpdateUser forged{UserOp::kCreate, UserSpec{"mallory", {kNew}}};
  forged.spec.key_expiry[kNew] = 1;
  EXPECT_EQ(ValidateUpdateUser(forged).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpool::state
