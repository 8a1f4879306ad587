// Class grants in the state machine (issue 50): what grant-class and
// revoke-class keep, which queues a grant covers, the errors that change
// nothing, and that grants survive a quota update and a snapshot.
#include <gtest/gtest.h>

#include "control/state/cluster_state_fixture.h"
#include "protocol/model/queue_update.h"

namespace gpool::state {
namespace {

class QueueGrantsTest : public ClusterStateTest {
 protected:
  QueueGrantsTest() {
    // root -> ml -> {ml-a, ml-b}; root -> web.
    for (const auto& [name, parent] : std::vector<std::pair<std::string, std::string>>{
             {"ml", "root"}, {"ml-a", "ml"}, {"ml-b", "ml"}, {"web", "root"}}) {
      QueueSpec spec;
      spec.name = name;
      spec.parent = parent;
      EXPECT_TRUE(Do(UpdateQueueCmd{UpdateQueue{QueueOp::kCreate, spec}}).status.ok());
    }
  }
  ApplyResult Grant(QueueOp op, const std::string& queue, const std::string& priority_class) {
    UpdateQueue update{op, QueueSpec{}, priority_class};
    update.spec.name = queue;
    return Do(UpdateQueueCmd{update});
  }
  std::vector<std::string> GrantedTo(const std::string& queue) { return state_.FindQueue(queue)->granted_classes; }
};

TEST_F(QueueGrantsTest, LowAndMediumNeedNoGrantHighAndSystemDo) {
  for (const std::string queue : {"ml-a", "web", "default"}) {
    EXPECT_TRUE(state_.ClassGranted(queue, "low")) << queue;
    EXPECT_TRUE(state_.ClassGranted(queue, "medium")) << queue;
    EXPECT_TRUE(state_.ClassGranted(queue, "")) << queue << ": an unset class is medium";
    EXPECT_FALSE(state_.ClassGranted(queue, "high")) << queue;
    EXPECT_FALSE(state_.ClassGranted(queue, "system")) << queue;
  }
}

TEST_F(QueueGrantsTest, AGrantCoversTheQueuesSubtreeOnly) {
  ASSERT_TRUE(Grant(QueueOp::kGrantClass, "ml", "high").status.ok());
  EXPECT_TRUE(state_.ClassGranted("ml", "high"));
  EXPECT_TRUE(state_.ClassGranted("ml-a", "high"));
  EXPECT_TRUE(state_.ClassGranted("ml-b", "high"));
  EXPECT_EQ(state_.ClassGrantedBy("ml-b", "high"), "ml");
  EXPECT_FALSE(state_.ClassGranted("web", "high"));
  EXPECT_FALSE(state_.ClassGranted("ml-a", "system")) << "a grant of high is not one of system";
  ASSERT_TRUE(Grant(QueueOp::kGrantClass, "root", "system").status.ok());
  EXPECT_TRUE(state_.ClassGranted("web", "system"));
  EXPECT_EQ(state_.ClassGrantedBy("ml-a", "system"), "root");
}

TEST_F(QueueGrantsTest, GrantAndRevokeSetAStateSoAResendChangesNothing) {
  ASSERT_TRUE(Grant(QueueOp::kGrantClass, "ml-a", "system").status.ok());
  ASSERT_TRUE(Grant(QueueOp::kGrantClass, "ml-a", "high").status.ok());
  ASSERT_TRUE(Grant(QueueOp::kGrantClass, "ml-a", "high").status.ok());
  EXPECT_EQ(GrantedTo("ml-a"), (std::vector<std::string>{"high", "system"}));
  ASSERT_TRUE(Grant(QueueOp::kRevokeClass, "ml-a", "high").status.ok());
  ASSERT_TRUE(Grant(QueueOp::kRevokeClass, "ml-a", "high").status.ok());
  EXPECT_EQ(GrantedTo("ml-a"), (std::vector<std::string>{"system"}));
  EXPECT_FALSE(state_.ClassGranted("ml-a", "high"));
}

TEST_F(QueueGrantsTest, BadGrantsAreTypedErrorsAndChangeNothing) {
  EXPECT_EQ(Grant(QueueOp::kGrantClass, "nowhere", "high").status.code(), StatusCode::kNotFound);
  for (const std::string bad : {"medium", "low", "", "urgent"}) {
    EXPECT_EQ(Grant(QueueOp::kGrantClass, "ml-a", bad).status.code(), StatusCode::kInvalidArgument) << bad;
  }
  for (const auto& [name, queue] : state_.queues()) EXPECT_TRUE(queue.granted_classes.empty()) << name;
}

TEST_F(QueueGrantsTest, AQuotaUpdateKeepsGrantsAndADeleteDropsThem) {
  ASSERT_TRUE(Grant(QueueOp::kGrantClass, "web", "high").status.ok());
  QueueSpec spec;
  spec.name = "web";
  spec.parent = "root";
  spec.capability = {{"gpu", 4}};
  ASSERT_TRUE(Do(UpdateQueueCmd{UpdateQueue{QueueOp::kUpdate, spec}}).status.ok());
  EXPECT_EQ(state_.FindQueue("web")->spec.capability.at("gpu"), 4u);
  EXPECT_EQ(GrantedTo("web"), (std::vector<std::string>{"high"}));
  ASSERT_TRUE(Do(UpdateQueueCmd{UpdateQueue{QueueOp::kDelete, spec}}).status.ok());
  ASSERT_TRUE(Do(UpdateQueueCmd{UpdateQueue{QueueOp::kCreate, spec}}).status.ok());
  EXPECT_TRUE(GrantedTo("web").empty()) << "a queue made again under an old name starts without its grants";
}

TEST_F(QueueGrantsTest, GrantsSurviveSnapshotAndRestore) {
  ASSERT_TRUE(Grant(QueueOp::kGrantClass, "ml", "high").status.ok());
  ASSERT_TRUE(Grant(QueueOp::kGrantClass, "web", "system").status.ok());
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_TRUE(restored.ClassGranted("ml-b", "high"));
  EXPECT_TRUE(restored.ClassGranted("web", "system"));
  EXPECT_FALSE(restored.ClassGranted("web", "high"));
  EXPECT_EQ(restored.FindQueue("ml")->granted_classes, (std::vector<std::string>{"high"}));
}

}  // namespace
}  // namespace gpool::state
