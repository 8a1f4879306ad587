// Node names bound to worker keys (issue 31): the impersonation scenarios of
// a secured cluster, on the NodeRegistry over fakes. The Principal is what
// the ZAP handler named the connection; here the tests name it directly.
#include <gtest/gtest.h>

#include "control/node_registry.h"
#include "control/security/key_directory.h"
#include "control/testing/fake_ports.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/node_update.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {

const std::string kRealKey(40, 'r');
const std::string kForeignKey(40, 'f');

Principal NewNode(const std::string& key) { return Principal{Principal::Kind::kNewNode, "", key}; }
Principal BoundNode(const std::string& name, const std::string& key) {
  return Principal{Principal::Kind::kNode, name, key};
}

class RecordingListener final : public WorkerEvents {
 public:
  void WorkerReplied(const std::string& node, const Envelope& reply) override {
    replies.emplace_back(node, reply.type());
  }
  std::vector<std::pair<std::string, MessageType>> replies;
};

class NodeBindingTest : public ::testing::Test {
 protected:
  NodeBindingTest() {
    NodeRegistryOptions options;
    options.node_timeout_ms = 1000;
    options.keys = &keys_;
    // The binding rules of first-use enrolment; admission's are node_admission_test.cc's.
    options.enrolment = WorkerEnrolment::kFirstUse;
    registry_ = std::make_unique<NodeRegistry>(options, state_, workers_, outbox_, proposer_, /*start_ms=*/0);
    registry_->Subscribe(&listener_);
  }

  template <typename T>
  void FromWorker(const std::string& peer, const T& body, const Principal& principal, uint64_t request_id = 1) {
    registry_->OnFrame(peer, EncodeEnvelope(Header{.request_id = request_id}, body), ++now_, principal);
  }
  Envelope LastToWorker() {
    EXPECT_FALSE(outbox_.sent.empty());
    return DecodeEnvelope(outbox_.sent.back().frame).value();
  }
  std::string LastErrorCode() {
    auto error = LastToWorker().Body<ErrorReply>();
    return error.ok() ? error->code : "(not an error)";
  }
  // n1 registered by the real worker (key kRealKey) on peer-a, running job 1's one task.
  void RealNodeRunsATask() {
    FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, NewNode(kRealKey));
    ASSERT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
    JobSpec spec;
    spec.name = "j";
    spec.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{1, 100, 100}});
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [](const auto&) {});
    proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 100, 100}}, {}}, [](const auto&) {});
    TaskEvent started;
    started.node = "n1";
    started.seq = 1;
    started.task = TaskId{JobId(1), 0, 0};
    started.kind = TaskEventKind::kStarted;
    FromWorker("peer-a", started, BoundNode("n1", kRealKey));
    ASSERT_EQ(TaskState(), TaskState::kRunning);
  }
  // An admin's `gpool admin node enrol NAME`, committed.
  void CommitWorkerKey(const std::string& node, const std::string& key) {
    UpdateNode enrol;
    enrol.node = node;
    enrol.op = NodeUpdateOp::kWorkerKey;
    enrol.key = key;
    proposer_.Propose(state::UpdateNodeCmd{enrol}, [](const state::ApplyResult& result) {
      ASSERT_TRUE(result.status.ok()) << result.status.ToString();
    });
  }
  gpool::TaskState TaskState() const { return state_.FindTask(TaskId{JobId(1), 0, 0})->state; }
  // A registration that claims n1 and reports no tasks: before binding, it
  // marked the real node's running task Lost.
  RegisterNode ClaimN1(uint32_t gpus = 1) {
    NodeSpec node = OneGpuNode("n1");
    node.gpus.clear();
    for (uint32_t i = 0; i < gpus; ++i) node.gpus.push_back(GpuInfo{.index = i, .uuid = "fake-" + std::to_string(i)});
    return RegisterNode{node, {}, "test"};
  }

  int64_t now_ = 0;
  state::ClusterState state_;
  WorkerTable workers_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  KeyDirectory keys_;
  RecordingListener listener_;
  std::unique_ptr<NodeRegistry> registry_;
};

TEST_F(NodeBindingTest, FirstRegistrationBindsTheNameToTheKey) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, NewNode(kRealKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
  EXPECT_EQ(state_.FindNode("n1")->worker_key, kRealKey);
  EXPECT_EQ(keys_.KeyOfNode("n1"), kRealKey);
  // Its next connection is named after the node, and may register again.
  FromWorker("peer-a2", RegisterNode{OneGpuNode("n1"), {}, "test"}, BoundNode("n1", kRealKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
  EXPECT_EQ(*workers_.PeerFor("n1"), "peer-a2");
}

TEST_F(NodeBindingTest, SameNameWithAForeignKeyIsRefusedAndTheTasksKeepRunning) {
  RealNodeRunsATask();
  FromWorker("peer-evil", ClaimN1(), NewNode(kForeignKey));
  EXPECT_EQ(LastErrorCode(), "Unauthenticated");
  EXPECT_EQ(TaskState(), TaskState::kRunning);
  EXPECT_EQ(*workers_.PeerFor("n1"), "peer-a");
  EXPECT_EQ(state_.FindNode("n1")->worker_key, kRealKey);
}

TEST_F(NodeBindingTest, ReRegistrationLoopNeverTouchesTheNode) {
  RealNodeRunsATask();
  for (int i = 0; i < 20; ++i) {
    FromWorker("peer-evil-" + std::to_string(i), ClaimN1(), NewNode(kForeignKey));
    ASSERT_EQ(LastErrorCode(), "Unauthenticated") << i;
  }
  EXPECT_EQ(TaskState(), TaskState::kRunning);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);
  // The real worker's heartbeats are still taken on its connection.
  Heartbeat beat;
  beat.node = "n1";
  FromWorker("peer-a", beat, BoundNode("n1", kRealKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kAck);
}

TEST_F(NodeBindingTest, FakeNodeAdvertisingMoreGpusUnderABoundNameIsRefused) {
  RealNodeRunsATask();
  FromWorker("peer-evil", ClaimN1(64), NewNode(kForeignKey));
  EXPECT_EQ(LastErrorCode(), "Unauthenticated");
  EXPECT_EQ(state_.FindNode("n1")->spec.gpus.size(), 1u);
}

TEST_F(NodeBindingTest, AKeyBoundToOneNodeCannotRegisterAnother) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, NewNode(kRealKey));
  FromWorker("peer-a", RegisterNode{OneGpuNode("n2"), {}, "test"}, BoundNode("n1", kRealKey));
  EXPECT_EQ(LastErrorCode(), "Unauthenticated");
  EXPECT_EQ(state_.FindNode("n2"), nullptr);
}

TEST_F(NodeBindingTest, ANameEnrolledByAnAdminIsOnlyItsKeys) {
  keys_.EnrolNode("n9", kRealKey);
  FromWorker("peer-evil", RegisterNode{OneGpuNode("n9"), {}, "test"}, NewNode(kForeignKey));
  EXPECT_EQ(LastErrorCode(), "Unauthenticated");
  EXPECT_EQ(state_.FindNode("n9"), nullptr);
  FromWorker("peer-a", RegisterNode{OneGpuNode("n9"), {}, "test"}, BoundNode("n9", kRealKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
}

// Enrolled in advance through the committed state (`gpool admin node
// enrol` for a node that never registered): the reservation survives a
// snapshot, refuses another key even past the registry, and the first
// registration with the enrolled key binds the name and ends it.
TEST_F(NodeBindingTest, AnEnrolmentBeforeTheFirstRegistrationIsCommittedAndBinds) {
  CommitWorkerKey("n9", kRealKey);
  EXPECT_EQ(state_.FindNode("n9"), nullptr) << "no node until its worker registers";
  EXPECT_EQ(state_.enrolled_nodes().at("n9"), kRealKey);
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  EXPECT_EQ(restored.enrolled_nodes(), state_.enrolled_nodes());
  // Straight to the state machine (as a race past the registry would be).
  auto refused = restored.Apply(restored.applied_index() + 1,
                                state::Command{1000, state::RegisterNodeCmd{OneGpuNode("n9"), {}, {}, kForeignKey}});
  EXPECT_EQ(refused.status.code(), StatusCode::kUnauthenticated);
  FromWorker("peer-a", RegisterNode{OneGpuNode("n9"), {}, "test"}, BoundNode("n9", kRealKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
  EXPECT_EQ(state_.FindNode("n9")->worker_key, kRealKey);
  EXPECT_TRUE(state_.enrolled_nodes().empty());
}

TEST_F(NodeBindingTest, ClientOrReplicaKeysMayNotRegisterNodes) {
  FromWorker("peer-x", RegisterNode{OneGpuNode("n1"), {}, "test"}, Principal{Principal::Kind::kUser, "alice", kRealKey});
  EXPECT_EQ(LastErrorCode(), "Unauthenticated");
  EXPECT_EQ(state_.FindNode("n1"), nullptr);
}

// The forged log reply: only the connection authenticated as the node the
// request went to may answer it.
TEST_F(NodeBindingTest, RepliesFromAnotherKeyOrConnectionAreDropped) {
  RealNodeRunsATask();
  FetchLogReply forged;
  forged.data = std::string("forged");
  // From a connection that registered nothing (its registration was refused).
  FromWorker("peer-evil", ClaimN1(), NewNode(kForeignKey));
  FromWorker("peer-evil", forged, NewNode(kForeignKey), 42);
  // On the real connection's routing id but authenticated with another key.
  FromWorker("peer-a", forged, NewNode(kForeignKey), 42);
  EXPECT_TRUE(listener_.replies.empty());
  FromWorker("peer-a", forged, BoundNode("n1", kRealKey), 42);
  ASSERT_EQ(listener_.replies.size(), 1u);
  EXPECT_EQ(listener_.replies[0].first, "n1");
}

TEST_F(NodeBindingTest, EventsUnderAnotherKeyAreRefused) {
  RealNodeRunsATask();
  TaskEvent exited;
  exited.node = "n1";
  exited.seq = 2;
  exited.task = TaskId{JobId(1), 0, 0};
  exited.kind = TaskEventKind::kExited;
  FromWorker("peer-a", exited, NewNode(kForeignKey));
  EXPECT_EQ(LastErrorCode(), "NotFound");
  EXPECT_EQ(TaskState(), TaskState::kRunning);
}

// Rotation (gpool admin node enrol): once the new key is committed, the old
// key is no longer the node, even on the connection it registered.
TEST_F(NodeBindingTest, AnEnrolledNewKeyRetiresTheOldOneAtOnce) {
  RealNodeRunsATask();
  CommitWorkerKey("n1", kForeignKey);
  EXPECT_EQ(state_.FindNode("n1")->worker_key, kForeignKey);
  keys_.EnrolNode("n1", kForeignKey);  // what the coordinator does as the update applies
  Heartbeat beat;
  beat.node = "n1";
  FromWorker("peer-a", beat, BoundNode("n1", kRealKey));
  EXPECT_EQ(LastErrorCode(), "NotFound");
  // The new key registers the name and is the node from then on.
  FromWorker("peer-new", RegisterNode{OneGpuNode("n1"), {}, "test"}, NewNode(kForeignKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
  FromWorker("peer-new", beat, BoundNode("n1", kForeignKey));
  EXPECT_EQ(LastToWorker().type(), MessageType::kAck);
}

// Two registrations racing for a new name, both past the edge check before
// either committed: the state machine binds the first and refuses the second.
TEST(NodeBindingApply, TheStateBindsExactlyOneKeyPerName) {
  state::ClusterState state;
  auto first = state.Apply(1, state::Command{1, state::RegisterNodeCmd{OneGpuNode("n1"), {}, {}, kRealKey}});
  ASSERT_TRUE(first.status.ok());
  auto second = state.Apply(2, state::Command{2, state::RegisterNodeCmd{OneGpuNode("n1"), {}, {}, kForeignKey}});
  EXPECT_EQ(second.status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(state.FindNode("n1")->worker_key, kRealKey);
  // The binding survives a snapshot.
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(state.Snapshot()).ok());
  EXPECT_EQ(restored.FindNode("n1")->worker_key, kRealKey);
}

}  // namespace
}  // namespace gpool::control
