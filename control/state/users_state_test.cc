// Users, grants and the audit stream in the replicated state: what apply
// refuses whatever reached the log, and what a snapshot keeps.
#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "protocol/messages_client.h"
#include "protocol/model/users.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

constexpr char kKeyA[] = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
constexpr char kKeyB[] = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

class UsersStateTest : public ::testing::Test {
 protected:
  ApplyResult Do(CommandBody body) { return state_.Apply(++index_, Command{5'000, std::move(body)}); }
  ApplyResult User(const std::string& op, UserSpec spec) {
    return Do(UpdateUserCmd{UpdateUser{EnumFromName<UserOp>(op).value(), std::move(spec)}});
  }
  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(UsersStateTest, AKeyNamesOneUserAndGrantsNameExistingQueues) {
  ASSERT_TRUE(User("create", UserSpec{"alice", {kKeyA}, 1000, 1000, {{Role::kMember, "default"}}}).status.ok());
  EXPECT_EQ(User("create", UserSpec{"alice"}).status.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(User("create", UserSpec{"bob", {kKeyA}}).status.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(User("create", UserSpec{"bob", {}, -1, -1, {{Role::kMember, "no-such-queue"}}}).status.code(),
            StatusCode::kNotFound);
  // Request rules (name syntax, key format, how many keys) are the
  // gateway's, not apply's: what an older build let into the log replays to
  // the same state under today's rules.
  EXPECT_TRUE(User("create", UserSpec{"old|name"}).status.ok());
  ASSERT_TRUE(User("create", UserSpec{"bob", {kKeyB}}).status.ok());
  ASSERT_TRUE(User("grant", UserSpec{"bob", {}, -1, -1, {{Role::kViewer, ""}}}).status.ok());
  ASSERT_TRUE(User("remove-key", UserSpec{"alice", {kKeyA}}).status.ok());
  ASSERT_TRUE(User("add-key", UserSpec{"bob", {kKeyA}}).status.ok());  // free again
  EXPECT_EQ(state_.FindUser("bob")->keys, (std::vector<std::string>{kKeyB, kKeyA}));
  EXPECT_EQ(state_.FindUser("bob")->roles, (std::vector<RoleGrant>{{Role::kViewer, ""}}));
  EXPECT_EQ(User("update", UserSpec{"carol"}).status.code(), StatusCode::kNotFound);
}

TEST_F(UsersStateTest, BootstrapMakesOneAdminAndTheLastAdminStays) {
  EXPECT_FALSE(state_.HasAdmin());
  ASSERT_TRUE(Do(BootstrapCmd{UserSpec{"root", {kKeyA}}}).status.ok());
  EXPECT_TRUE(state_.HasAdmin());
  EXPECT_EQ(Do(BootstrapCmd{UserSpec{"eve", {kKeyB}}}).status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.FindUser("eve"), nullptr);
  EXPECT_EQ(User("revoke", UserSpec{"root", {}, -1, -1, {{Role::kAdmin, ""}}}).status.code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(User("delete", UserSpec{"root"}).status.code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(User("create", UserSpec{"second", {kKeyB}, -1, -1, {{Role::kAdmin, ""}}}).status.ok());
  EXPECT_TRUE(User("delete", UserSpec{"root"}).status.ok());
}

TEST_F(UsersStateTest, TheAuditIsBoundedAndASnapshotKeepsUsersAndAudit) {
  ASSERT_TRUE(User("create", UserSpec{"alice", {kKeyA}, 1000, 1001, {{Role::kViewer, ""}}}).status.ok());
  for (size_t i = 0; i < ClusterState::kMaxAudit + 5; ++i) {
    Do(AuditCmd{{AuditEntry{0, 0, "alice", "CancelJob", "job " + std::to_string(i), false, "cancel-job"}}});
  }
  ASSERT_EQ(state_.audit().size(), ClusterState::kMaxAudit);
  EXPECT_EQ(state_.audit().front().seq, 6u);
  EXPECT_EQ(state_.audit().back().seq, ClusterState::kMaxAudit + 5);
  EXPECT_EQ(state_.audit().back().time_ms, 5'000);

  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  ASSERT_NE(restored.FindUser("alice"), nullptr);
  EXPECT_EQ(restored.FindUser("alice")->gid, 1001);
  ASSERT_EQ(restored.audit().size(), ClusterState::kMaxAudit);
  EXPECT_EQ(restored.audit().back().target, state_.audit().back().target);
  restored.Apply(1'000'000, Command{1, AuditCmd{{AuditEntry{}}}});
  EXPECT_EQ(restored.audit().back().seq, ClusterState::kMaxAudit + 6);  // numbering goes on
}

// Issue 48: a user created without a uid gets the lowest free one of the
// range the command carries, the same on every replica; two users never
// share one; a full range is ResourceExhausted and changes nothing.
TEST_F(UsersStateTest, UsersWithoutAUidGetFreeOnesOfTheRangeAndNeverShareOne) {
  auto create = [&](const std::string& name, int64_t uid = -1) {
    return Do(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{name, {}, uid, -1}}, 200, 202});
  };
  ASSERT_TRUE(create("alice").status.ok());
  ASSERT_TRUE(create("bob").status.ok());
  EXPECT_EQ(state_.FindUser("alice")->uid, 200);
  EXPECT_EQ(state_.FindUser("alice")->gid, 200);
  EXPECT_EQ(state_.FindUser("bob")->uid, 201);
  EXPECT_EQ(create("eve", 201).status.code(), StatusCode::kAlreadyExists) << "an explicit uid another user holds";
  EXPECT_EQ(state_.FindUser("eve"), nullptr);
  ASSERT_TRUE(create("carol", 202).status.ok());
  const ApplyResult full = create("dave");
  EXPECT_EQ(full.status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.status.message().find("200-202"), std::string::npos) << full.status.message();
  EXPECT_EQ(state_.FindUser("dave"), nullptr);
  // Deleting frees a uid (it is held by nobody then); the lowest free one is next.
  ASSERT_TRUE(User("delete", UserSpec{"alice"}).status.ok());
  ASSERT_TRUE(create("dave").status.ok());
  EXPECT_EQ(state_.FindUser("dave")->uid, 200);
  // An update without a uid keeps the uid a user has.
  ASSERT_TRUE(Do(UpdateUserCmd{UpdateUser{UserOp::kUpdate, UserSpec{"bob", {}, -1, -1}}, 200, 202}).status.ok());
  EXPECT_EQ(state_.FindUser("bob")->uid, 201);
  // A bootstrap admin without a uid gets one too.
  ClusterState fresh;
  ASSERT_TRUE(fresh.Apply(1, Command{5'000, BootstrapCmd{UserSpec{"root", {kKeyA}}, 300, 399}}).status.ok());
  EXPECT_EQ(fresh.FindUser("root")->uid, 300);
}

// A user from before issue 48 (a log entry without a range: none is
// allocated, as then) gets one with an update that names no uid; a replica
// replaying the same entries picks the same uids.
TEST_F(UsersStateTest, AUserFromBeforeUidsGetsOneOnUpdateAndReplicasAgree) {
  ClusterState replica;
  uint64_t replica_index = 0;
  auto both = [&](CommandBody body) {
    replica.Apply(++replica_index, Command{5'000, body});
    return Do(std::move(body));
  };
  ASSERT_TRUE(both(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"old"}}}).status.ok());
  EXPECT_EQ(state_.FindUser("old")->uid, -1);
  ASSERT_TRUE(both(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"new"}}, 5000, 5999}).status.ok());
  ASSERT_TRUE(both(UpdateUserCmd{UpdateUser{UserOp::kUpdate, UserSpec{"old"}}, 5000, 5999}).status.ok());
  EXPECT_EQ(state_.FindUser("new")->uid, 5000);
  EXPECT_EQ(state_.FindUser("old")->uid, 5001);
  EXPECT_EQ(replica.FindUser("old")->uid, 5001);
  EXPECT_EQ(replica.FindUser("new")->uid, 5000);
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.FindUser("old")->uid, 5001) << "the uid is in the snapshot";
  // An entry from before (no range) replays as it applied then, a shared uid
  // included: replicas replaying an old log agree with those that applied it.
  ASSERT_TRUE(both(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"twin", {}, 5000, 5000}}}).status.ok());
  EXPECT_EQ(both(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"triplet", {}, 5000, 5000}}, 5000, 5999})
                .status.code(),
            StatusCode::kAlreadyExists);
}

// An audit entry as written before outcomes were recorded (issue 48): it
// still decodes, with no outcome and no code, so old snapshots and log
// entries replay.
struct AuditEntryBeforeOutcomes {
  uint64_t seq = 7;
  int64_t time_ms = 1000;
  std::string user = "alice";
  std::string request = "ChangeReplicas";
  std::string target = "replica 4";
  bool allowed = true;
  std::string reason;
  template <typename V>
  void Fields(V& v) {
    v.Required("seq", seq);
    v.Required("time_ms", time_ms);
    v.Required("user", user);
    v.Required("request", request);
    v.Optional("target", target);
    v.Required("allowed", allowed);
    v.Optional("reason", reason);
  }
};

TEST(AuditEntryTest, AnEntryWrittenBeforeOutcomesDecodesWithNone) {
  auto entry = wire::UnpackFromString<AuditEntry>(wire::PackToString(AuditEntryBeforeOutcomes{}));
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  EXPECT_EQ(entry->request, "ChangeReplicas");
  EXPECT_TRUE(entry->allowed);
  EXPECT_EQ(entry->outcome, "");
  EXPECT_EQ(entry->code, "");
  AuditEntry failed = *entry;
  failed.outcome = "failed";
  failed.code = "Unavailable";
  auto round = wire::UnpackFromString<AuditEntry>(wire::PackToString(failed));
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->outcome, "failed");
  EXPECT_EQ(round->code, "Unavailable");
}

}  // namespace
}  // namespace gpool::state
