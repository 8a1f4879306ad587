// Class grants through the gateway (issue 50): every role x every class at
// submit, before and after grants; who may grant which class where; and the
// audit entry of a refusal.
#include <array>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "control/gateway_fixture.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/model/queue_update.h"

namespace gpool::control {
namespace {

constexpr char kKeyNoRole[] = "q<}[=BP5Fg0&d9b3K0O[x&rH]jvR2Gb5t=u]Wyr!";
constexpr std::array<const char*, 4> kClasses = {"low", "medium", "high", "system"};

class ClassGrantsTest : public GatewayTest {
 protected:
  ClassGrantsTest() {
    AddRoleTree();
    AddUser("nobody", kKeyNoRole, {});
    callers_ = {Principal{Principal::Kind::kUser, "root-admin", kKeyAdmin},
                Principal{Principal::Kind::kUser, "qa", kKeyQa}, Principal{Principal::Kind::kUser, "mem", kKeyMember},
                Principal{Principal::Kind::kUser, "view", kKeyViewer},
                Principal{Principal::Kind::kUser, "nobody", kKeyNoRole}};
  }
  // Whether `caller` may submit a `priority_class` job to ml-a now; a
  // refusal must be PermissionDenied.
  bool Submits(const Principal& caller, const std::string& priority_class) {
    JobSpec spec = OneGpuJob();
    spec.queue = "ml-a";
    spec.priority_class = priority_class;
    const size_t jobs = state_.jobs().size();
    SendAs(caller, SubmitJob{spec, ""});
    Envelope env = Last();
    if (env.type() == MessageType::kSubmitJobReply) return state_.jobs().size() == jobs + 1;
    EXPECT_EQ(ErrorOf(env).rfind("PermissionDenied", 0), 0u) << ErrorOf(env);
    EXPECT_EQ(state_.jobs().size(), jobs) << "a refused submit adds no job";
    return false;
  }
  // The row of allowed classes for each caller (admin, qa, mem, view, nobody).
  std::array<std::array<bool, 4>, 5> SubmitMatrix() {
    std::array<std::array<bool, 4>, 5> allowed{};
    for (size_t c = 0; c < callers_.size(); ++c) {
      for (size_t k = 0; k < kClasses.size(); ++k) allowed[c][k] = Submits(callers_[c], kClasses[k]);
    }
    return allowed;
  }
  std::string GrantAs(const Principal& caller, QueueOp op, const std::string& queue, const std::string& cls) {
    UpdateQueue update{op, QueueSpec{}, cls};
    update.spec.name = queue;
    SendAs(caller, update);
    Envelope env = Last();
    return env.type() == MessageType::kUpdateQueueReply ? "ok" : ErrorOf(env).substr(0, ErrorOf(env).find(':'));
  }

  std::vector<Principal> callers_;
};

using Row = std::array<bool, 4>;  // low, medium, high, system

TEST_F(ClassGrantsTest, EveryRoleByEveryClassBeforeAndAfterGrants) {
  // No grants: members and queue-admins submit low and medium only; admins anything.
  auto none = SubmitMatrix();
  EXPECT_EQ(none[0], (Row{true, true, true, true})) << "admin";
  EXPECT_EQ(none[1], (Row{true, true, false, false})) << "queue-admin of ml";
  EXPECT_EQ(none[2], (Row{true, true, false, false})) << "member of ml-a";
  EXPECT_EQ(none[3], (Row{false, false, false, false})) << "viewer: no submit at all";
  EXPECT_EQ(none[4], (Row{false, false, false, false})) << "no role";

  // high granted on ml (an ancestor of ml-a) opens high, not system.
  ASSERT_EQ(GrantAs(callers_[0], QueueOp::kGrantClass, "ml", "high"), "ok");
  auto high = SubmitMatrix();
  EXPECT_EQ(high[1], (Row{true, true, true, false}));
  EXPECT_EQ(high[2], (Row{true, true, true, false}));
  EXPECT_EQ(high[3], (Row{false, false, false, false}));
  EXPECT_EQ(high[4], (Row{false, false, false, false}));

  ASSERT_EQ(GrantAs(callers_[0], QueueOp::kGrantClass, "ml-a", "system"), "ok");
  auto both = SubmitMatrix();
  EXPECT_EQ(both[1], (Row{true, true, true, true}));
  EXPECT_EQ(both[2], (Row{true, true, true, true}));
  EXPECT_EQ(both[3], (Row{false, false, false, false}));

  // Revoked: closed again for new submits.
  ASSERT_EQ(GrantAs(callers_[0], QueueOp::kRevokeClass, "ml", "high"), "ok");
  ASSERT_EQ(GrantAs(callers_[0], QueueOp::kRevokeClass, "ml-a", "system"), "ok");
  auto revoked = SubmitMatrix();
  EXPECT_EQ(revoked[2], (Row{true, true, false, false}));
  EXPECT_EQ(revoked[0], (Row{true, true, true, true}));
}

TEST_F(ClassGrantsTest, InsecureAdminIsNotHeldToGrants) {
  JobSpec spec = OneGpuJob();
  spec.queue = "ml-a";
  spec.priority_class = "system";
  Send(SubmitJob{spec, ""});
  EXPECT_EQ(Last().type(), MessageType::kSubmitJobReply) << ErrorOf(Last());
}

TEST_F(ClassGrantsTest, WhoMayGrantWhichClassWhere) {
  struct GrantCase {
    std::string queue, cls;
    std::array<const char*, 5> want;  // admin, qa, mem, view, nobody
  };
  const std::vector<GrantCase> cases = {
      // A queue-admin of ml grants high strictly below ml.
      {"ml-a", "high", {"ok", "ok", "PermissionDenied", "PermissionDenied", "PermissionDenied"}},
      {"ml", "high", {"ok", "PermissionDenied", "PermissionDenied", "PermissionDenied", "PermissionDenied"}},
      {"web", "high", {"ok", "PermissionDenied", "PermissionDenied", "PermissionDenied", "PermissionDenied"}},
      // system is the admins' alone.
      {"ml-a", "system", {"ok", "PermissionDenied", "PermissionDenied", "PermissionDenied", "PermissionDenied"}},
  };
  for (const auto& c : cases) {
    for (size_t i = 0; i < callers_.size(); ++i) {
      for (QueueOp op : {QueueOp::kGrantClass, QueueOp::kRevokeClass}) {
        EXPECT_EQ(GrantAs(callers_[i], op, c.queue, c.cls), c.want[i])
            << callers_[i].name << " " << NameOf(op) << " " << c.cls << " on " << c.queue;
      }
    }
  }
  // What is not a grant (a class every queue has, an unknown one, a queue that
  // does not exist) is refused, and changes nothing.
  EXPECT_EQ(GrantAs(callers_[0], QueueOp::kGrantClass, "ml-a", "medium"), "InvalidArgument");
  EXPECT_EQ(GrantAs(callers_[0], QueueOp::kGrantClass, "ml-a", "urgent"), "InvalidArgument");
  EXPECT_EQ(GrantAs(callers_[0], QueueOp::kGrantClass, "nowhere", "high"), "NotFound");
  for (const auto& [name, queue] : state_.queues()) EXPECT_TRUE(queue.granted_classes.empty()) << name;
}

TEST_F(ClassGrantsTest, ARefusedClassIsAuditedAndNamesClassAndQueue) {
  JobSpec spec = OneGpuJob();
  spec.queue = "ml-a";
  spec.priority_class = "high";
  const size_t audited = state_.audit().size();
  SendAs(callers_[2], SubmitJob{spec, ""});
  const std::string error = ErrorOf(Last());
  EXPECT_NE(error.find("class high is not granted to queue ml-a"), std::string::npos) << error;
  EXPECT_NE(error.find("gpool queue grant-class ml-a high"), std::string::npos) << error;
  ASSERT_EQ(state_.audit().size(), audited + 1);
  const AuditEntry& entry = state_.audit().back();
  EXPECT_EQ(entry.user, "mem");
  EXPECT_FALSE(entry.allowed);
  EXPECT_EQ(entry.outcome, "denied");
  EXPECT_EQ(entry.target, "queue ml-a");
  EXPECT_NE(entry.reason.find("class high not granted"), std::string::npos) << entry.reason;

  // The queue tree shows the grant once made.
  ASSERT_EQ(GrantAs(callers_[1], QueueOp::kGrantClass, "ml-a", "high"), "ok");
  Send(ListQueues{});
  const auto queues = LastAs<ListQueuesReply>();
  for (const auto& q : queues.queues) {
    EXPECT_EQ(q.granted_classes, q.spec.name == "ml-a" ? std::vector<std::string>{"high"} : std::vector<std::string>{})
        << q.spec.name;
  }
}

}  // namespace
}  // namespace gpool::control
