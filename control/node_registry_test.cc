// NodeRegistry and Dispatcher together, over fakes: registration, liveness,
// NotReady after silence, and command (re)delivery with acks.
#include "control/node_registry.h"

#include <gtest/gtest.h>

#include "control/dispatcher.h"
#include "control/testing/fake_ports.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {

class RegistryTest : public ::testing::Test {
 protected:
  RegistryTest() {
    NodeRegistryOptions options;
    options.node_timeout_ms = 1000;
    registry_ = std::make_unique<NodeRegistry>(options, state_, workers_, outbox_, proposer_, /*start_ms=*/0);
    dispatcher_ =
        std::make_unique<Dispatcher>(DispatcherOptions{}, state_, workers_, request_ids_, outbox_, proposer_);
    registry_->Subscribe(dispatcher_.get());
  }

  template <typename T>
  void FromWorker(const std::string& peer, const T& body, int64_t now, uint64_t request_id = 1) {
    registry_->OnFrame(peer, EncodeEnvelope(Header{.request_id = request_id}, body), now);
  }

  // The last frame sent to a worker, decoded.
  Envelope LastToWorker() {
    EXPECT_FALSE(outbox_.sent.empty());
    auto env = DecodeEnvelope(outbox_.sent.back().frame);
    EXPECT_TRUE(env.ok());
    return std::move(env).value();
  }

  std::vector<Envelope> WorkerFrames(MessageType type) {
    std::vector<Envelope> out;
    for (const auto& sent : outbox_.sent) {
      auto env = DecodeEnvelope(sent.frame);
      if (sent.to_worker && env.ok() && env->type() == type) out.push_back(std::move(env).value());
    }
    return out;
  }

  state::ClusterState state_;
  WorkerTable workers_;
  RequestIds request_ids_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  // Node n1 (one GPU) registered from peer-a, and job 1's one task bound to its GPU 0.
  // n1's first event: the task RegisterAndBindOneTask bound has started.
  static TaskEvent FirstTaskStarted() {
    TaskEvent started;
    started.node = "n1";
    started.seq = 1;
    started.task = TaskId{JobId(1), 0, 0};
    started.kind = TaskEventKind::kStarted;
    return started;
  }
  void RegisterAndBindOneTask() {
    FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
    JobSpec spec;
    spec.name = "j";
    spec.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{1, 100, 100}});
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [](const auto&) {});
    proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 100, 100}}, {}}, [](const auto&) {});
  }

  std::unique_ptr<NodeRegistry> registry_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(RegistryTest, RegistrationIsCommittedThenAnswered) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0, 7);
  ASSERT_NE(state_.FindNode("n1"), nullptr);
  Envelope reply = LastToWorker();
  EXPECT_EQ(reply.type(), MessageType::kRegisterNodeReply);
  EXPECT_EQ(reply.header().request_id, 7u);
  ASSERT_NE(workers_.PeerFor("n1"), nullptr);
  EXPECT_EQ(*workers_.PeerFor("n1"), "peer-a");
}

// A worker resends an unacknowledged event every second. While the first
// copy waits for a quorum, resends are not proposed again (each was, and the
// proposals fed the lag that caused the resends); the one in flight answers
// them when it commits, and after kEventInFlightMs a resend goes again.
TEST_F(RegistryTest, AResentTaskEventIsProposedOnceWhileInFlight) {
  RegisterAndBindOneTask();
  proposer_.clear();
  proposer_.set_holding(true);
  const TaskEvent started = FirstTaskStarted();
  for (int64_t second = 0; second < 20; ++second) FromWorker("peer-a", started, 1000 + second * 1000, 50 + second);
  EXPECT_EQ(proposer_.held(), 1u) << "twenty resends, one proposal";
  const size_t frames_before = outbox_.sent.size();
  proposer_.set_holding(false);
  proposer_.Release();
  ASSERT_GT(outbox_.sent.size(), frames_before);
  EXPECT_EQ(LastToWorker().type(), MessageType::kTaskEventAck) << "the commit answers the worker";

  // Settled: a later resend (its ack lost) is proposed and answered again.
  proposer_.clear();
  FromWorker("peer-a", started, 30'000, 99);
  EXPECT_EQ(proposer_.proposed().size(), 1u);
  EXPECT_EQ(LastToWorker().type(), MessageType::kTaskEventAck);

  // One stuck in flight longer than kEventInFlightMs goes again.
  TaskEvent exited = started;
  exited.seq = 2;
  exited.kind = TaskEventKind::kExited;
  proposer_.clear();
  proposer_.set_holding(true);
  FromWorker("peer-a", exited, 40'000, 100);
  FromWorker("peer-a", exited, 40'000 + NodeRegistry::kEventInFlightMs - 1, 101);
  EXPECT_EQ(proposer_.held(), 1u);
  FromWorker("peer-a", exited, 40'000 + NodeRegistry::kEventInFlightMs, 102);
  EXPECT_EQ(proposer_.held(), 2u);
  proposer_.set_holding(false);
  proposer_.Release();
}

// A worker retries its registration from 100 ms on, doubling, whenever the
// answer is late: retries on the same connection are not proposed again (a
// 12,500-node fleet registering at once committed 53,778 whole node specs).
// While the first waits for a quorum, its commit answers the latest retry's
// id; once it committed, a retry is answered at once. A later registration
// (a reconnect) and another connection's are proposals of their own.
TEST_F(RegistryTest, ARetriedRegistrationIsProposedOnceWhileInFlight) {
  proposer_.set_holding(true);
  for (uint64_t attempt = 0; attempt < 6; ++attempt) {
    FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 100 * (int64_t{1} << attempt), 10 + attempt);
  }
  EXPECT_EQ(proposer_.held(), 1u) << "six attempts, one proposal";
  EXPECT_TRUE(WorkerFrames(MessageType::kRegisterNodeReply).empty());
  proposer_.set_holding(false);
  proposer_.Release();
  auto replies = WorkerFrames(MessageType::kRegisterNodeReply);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].header().request_id, 15u) << "answered under the latest attempt's id";
  ASSERT_NE(workers_.PeerFor("n1"), nullptr);
  // A retry sent before that answer arrived: answered at once, nothing proposed.
  proposer_.clear();
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 6'400, 16);
  EXPECT_TRUE(proposer_.proposed().empty());
  EXPECT_EQ(LastToWorker().type(), MessageType::kRegisterNodeReply);
  EXPECT_EQ(LastToWorker().header().request_id, 16u);
  // One that says something else (here a task it runs) is no retry: proposed.
  RegisterNode other{OneGpuNode("n1"), {TaskReport{TaskId{JobId(9), 0, 0}, TaskState::kRunning, 42}}, "test"};
  FromWorker("peer-a", other, 6'500, 17);
  EXPECT_EQ(proposer_.proposed().size(), 1u);
  EXPECT_EQ(WorkerFrames(MessageType::kRegisterNodeReply).back().header().request_id, 17u);

  // Settled: a later registration (a reconnect) is proposed and answered again.
  proposer_.clear();
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 20'000, 30);
  EXPECT_EQ(proposer_.proposed().size(), 1u);
  EXPECT_EQ(LastToWorker().header().request_id, 30u);

  // The node from another connection while one is in flight: proposed, and
  // each commit answers its own connection.
  proposer_.clear();
  proposer_.set_holding(true);
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 30'000, 40);
  FromWorker("peer-b", RegisterNode{OneGpuNode("n1"), {}, "test"}, 30'100, 41);
  EXPECT_EQ(proposer_.held(), 2u);
  // One stuck longer than kEventInFlightMs goes again.
  FromWorker("peer-b", RegisterNode{OneGpuNode("n1"), {}, "test"}, 30'100 + NodeRegistry::kEventInFlightMs, 42);
  EXPECT_EQ(proposer_.held(), 3u);
  const size_t before = outbox_.sent.size();
  proposer_.set_holding(false);
  proposer_.Release();
  std::vector<std::pair<std::string, uint64_t>> answered;
  for (size_t i = before; i < outbox_.sent.size(); ++i) {
    auto env = DecodeEnvelope(outbox_.sent[i].frame);
    if (env.ok() && env->type() == MessageType::kRegisterNodeReply) {
      answered.emplace_back(outbox_.sent[i].peer, env->header().request_id);
    }
  }
  EXPECT_EQ(answered, (std::vector<std::pair<std::string, uint64_t>>{{"peer-a", 40}, {"peer-b", 41}, {"peer-b", 42}}));
  EXPECT_EQ(*workers_.PeerFor("n1"), "peer-b") << "the last registration's connection";
}

TEST_F(RegistryTest, HeartbeatFromAnotherConnectionIsNotFound) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  FromWorker("peer-b", Heartbeat{"n1", {}}, 10);
  auto error = LastToWorker().Body<ErrorReply>();
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->code, "NotFound");
  FromWorker("peer-a", Heartbeat{"n1", {}}, 20);
  EXPECT_EQ(LastToWorker().type(), MessageType::kAck);
}

TEST_F(RegistryTest, SilentNodeGoesNotReadyAndComesBack) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  const int64_t heard_ms = workers_.LastSeenWallMs("n1");
  ASSERT_GT(heard_ms, 0);
  registry_->Tick(999);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);
  registry_->Tick(1000);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
  // LAST SEEN stays at the last message, not the moment it was found silent.
  EXPECT_EQ(state_.FindNode("n1")->last_seen_ms, heard_ms);
  proposer_.clear();
  registry_->Tick(5000);  // proposed once, not every tick
  EXPECT_TRUE(proposer_.proposed().empty());
  FromWorker("peer-a", Heartbeat{"n1", {}}, 5001);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);
}

// NotReady can commit after the node registered again, from an earlier
// leadership's entry or this one's scan for nodes that had not reconnected
// (proposed while the registration was in flight). The node's heartbeats
// bring it back all the same; before, only a NotReady this registry had
// itself proposed on the current link was undone, and the node stayed
// NotReady while it heartbeated.
TEST_F(RegistryTest, NotReadyCommittedAfterARegistrationIsUndoneByTheNextHeartbeat) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  proposer_.Propose(state::NodeStateCmd{"n1", NodeState::kNotReady}, [](const auto&) {});
  ASSERT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
  FromWorker("peer-a", Heartbeat{"n1", {}}, 100);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);
  EXPECT_EQ(LastToWorker().type(), MessageType::kAck);
  // It is watched again: silence makes it NotReady once more.
  registry_->Tick(1100);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
  // A heartbeat from another connection is refused and changes nothing.
  FromWorker("peer-b", Heartbeat{"n1", {}}, 1200);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
  FromWorker("peer-a", Heartbeat{"n1", {}}, 1300);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kReady);
}

TEST_F(RegistryTest, NodesThatNeverReconnectAfterARestartGoNotReady) {
  // State from before a restart: the node is known and Ready, but no
  // connection exists in this incarnation.
  proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("old"), {}}, [](const auto&) {});
  registry_->Tick(500);
  EXPECT_EQ(state_.FindNode("old")->state, NodeState::kReady);
  registry_->Tick(1000);
  EXPECT_EQ(state_.FindNode("old")->state, NodeState::kNotReady);
  EXPECT_EQ(workers_.PeerFor("old"), nullptr);
}

TEST_F(RegistryTest, HeartbeatUsageIsKeptUntilTheNextHeartbeat) {
  RegisterAndBindOneTask();
  const TaskId task{JobId(1), 0, 0};
  EXPECT_EQ(workers_.GpuMemoryUsed("n1", task), -1);
  Heartbeat beat{"n1", {task}, {TaskUsage{task, 1234}}};
  FromWorker("peer-a", beat, 10);
  EXPECT_EQ(workers_.GpuMemoryUsed("n1", task), 1234);
  FromWorker("peer-a", Heartbeat{"n1", {task}, {}}, 20);  // the node stopped measuring it
  EXPECT_EQ(workers_.GpuMemoryUsed("n1", task), -1);
  FromWorker("peer-b", beat, 30);  // another connection's claim is refused and changes nothing
  EXPECT_EQ(workers_.GpuMemoryUsed("n1", task), -1);
}

TEST_F(RegistryTest, UsageInAnyOrderIsFoundAndARepeatKeepsItsLastValue) {
  RegisterAndBindOneTask();
  const TaskId task{JobId(1), 0, 0};
  const TaskId other{JobId(9), 0, 0};
  FromWorker("peer-a", Heartbeat{"n1", {task}, {TaskUsage{other, 5}, TaskUsage{task, 1}, TaskUsage{task, 777}}}, 10);
  EXPECT_EQ(workers_.GpuMemoryUsed("n1", task), 777);
}

TEST_F(RegistryTest, BindIsResentUntilAckedAndCarriesTheEpoch) {
  proposer_.set_epoch(4);
  RegisterAndBindOneTask();

  dispatcher_->Tick(0);
  auto binds = WorkerFrames(MessageType::kBindTask);
  ASSERT_EQ(binds.size(), 1u);
  EXPECT_EQ(binds[0].header().epoch, 4u);
  auto bind = binds[0].Body<BindTask>();
  ASSERT_TRUE(bind.ok());
  EXPECT_EQ(bind->gpu_uuids, (std::vector<std::string>{"n1-0"}));

  dispatcher_->Tick(1999);
  EXPECT_EQ(WorkerFrames(MessageType::kBindTask).size(), 1u);
  dispatcher_->Tick(2000);  // no ack within the timeout: resend
  binds = WorkerFrames(MessageType::kBindTask);
  ASSERT_EQ(binds.size(), 2u);

  FromWorker("peer-a", Ack{}, 2001, binds[1].header().request_id);
  dispatcher_->Tick(4500);  // acked: wait for the reconfirm interval instead
  EXPECT_EQ(WorkerFrames(MessageType::kBindTask).size(), 2u);

  // Started: nothing more to send. Cancelled: a preempt goes out.
  const TaskEvent started = FirstTaskStarted();
  FromWorker("peer-a", started, 4600);
  EXPECT_EQ(LastToWorker().type(), MessageType::kTaskEventAck);
  proposer_.Propose(state::CancelJobCmd{1, 250}, [](const auto&) {});
  dispatcher_->Tick(4700);
  auto preempts = WorkerFrames(MessageType::kPreemptTask);
  ASSERT_EQ(preempts.size(), 1u);
  EXPECT_EQ(preempts[0].Body<PreemptTask>()->grace_ms, 250u);
}

TEST_F(RegistryTest, WorkerRefusingABindFailsTheTaskInsteadOfRetryingForever) {
  RegisterAndBindOneTask();
  dispatcher_->Tick(0);
  auto bind = WorkerFrames(MessageType::kBindTask).at(0);
  FromWorker("peer-a", ErrorReply::FromStatus(Status::InvalidArgument("GPU 0 does not exist")), 10,
             bind.header().request_id);
  EXPECT_EQ(state_.FindJob(JobId(1))->state, JobState::kFailed);
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
}

TEST_F(RegistryTest, AStaticMigLayoutTheHardwareForbidsIsRefusedBeforeTheLog) {
  NodeSpec node = OneGpuNode("n1");
  node.gpus[0].model = "A100-SXM4-80GB";
  node.gpus[0].memory_mib = 81920;
  node.gpus[0].mig_mode = "static";
  node.gpus[0].mig_instances = {{"3g.40gb", 0, "MIG-a"}, {"4g.40gb", 0, "MIG-b"}};  // overlap
  FromWorker("peer-a", RegisterNode{node, {}, "test"}, 0, /*request_id=*/5);
  EXPECT_TRUE(proposer_.proposed().empty());
  Envelope reply = LastToWorker();
  ASSERT_EQ(reply.type(), MessageType::kErrorReply);
  EXPECT_EQ(reply.Body<ErrorReply>()->ToStatus().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(state_.FindNode("n1"), nullptr);
}

// A task event as a worker that spells kind freely would send it: a string.
struct RawTaskEvent {
  static constexpr MessageType kType = MessageType::kTaskEvent;
  std::string node;
  uint64_t seq = 0;
  TaskId task;
  std::string kind;
  template <typename V>
  void Fields(V& v) {
    v.Required("node", node);
    v.Required("seq", seq);
    v.Required("task", task);
    v.Required("kind", kind);
  }
};

TEST_F(RegistryTest, AnEventOfAnUnknownKindIsRefusedBeforeTheLog) {
  RegisterAndBindOneTask();
  proposer_.clear();
  const TaskEvent started = FirstTaskStarted();
  FromWorker("peer-a", RawTaskEvent{started.node, started.seq, started.task, "exploded"}, 10, /*request_id=*/77);
  EXPECT_TRUE(proposer_.proposed().empty());
  Envelope reply = LastToWorker();
  ASSERT_EQ(reply.type(), MessageType::kErrorReply);
  EXPECT_EQ(reply.header().request_id, 77u);
  EXPECT_EQ(reply.Body<ErrorReply>()->ToStatus().message(), "body.kind: 'exploded' is not started, exited, failed or lost");
}

// The dispatcher keeps a record only while a command is in flight: once the
// task's start is committed, nothing about it is held any more.
TEST_F(RegistryTest, DispatcherForgetsATaskOnceItRuns) {
  RegisterAndBindOneTask();
  dispatcher_->Tick(0);
  EXPECT_EQ(dispatcher_->in_flight(), 1u);
  auto bind = WorkerFrames(MessageType::kBindTask).at(0);
  FromWorker("peer-a", Ack{}, 5, bind.header().request_id);
  EXPECT_EQ(dispatcher_->in_flight(), 1u) << "acknowledged, not yet started";
  const TaskEvent started = FirstTaskStarted();
  FromWorker("peer-a", started, 10);
  EXPECT_EQ(dispatcher_->in_flight(), 0u);
  dispatcher_->Tick(20'000);  // long past every timer: nothing is resent for a running task
  EXPECT_EQ(WorkerFrames(MessageType::kBindTask).size(), 1u);
}

// Each tick sends only what became due since the last one; commands already
// out wait for their own timers.
TEST_F(RegistryTest, DispatcherSendsOnlyNewCommandsEachTick) {
  NodeSpec node = OneGpuNode("n1");
  node.gpus.push_back(GpuInfo{.index = 1, .uuid = "n1-1"});
  node.gpus.push_back(GpuInfo{.index = 2, .uuid = "n1-2"});
  FromWorker("peer-a", RegisterNode{node, {}, "test"}, 0);
  JobSpec spec;
  spec.name = "j";
  spec.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{1, 100, 100}});
  for (int i = 0; i < 3; ++i) proposer_.Propose(state::SubmitJobCmd{spec, ""}, [](const auto&) {});
  proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 100, 100},
                                         state::PlanBind{JobId(2), 0, "n1", {1}, 100, 100}}, {}},
                    [](const auto&) {});
  dispatcher_->Tick(0);
  EXPECT_EQ(WorkerFrames(MessageType::kBindTask).size(), 2u);
  dispatcher_->Tick(10);
  EXPECT_EQ(WorkerFrames(MessageType::kBindTask).size(), 2u);
  proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(3), 0, "n1", {2}, 100, 100}}, {}}, [](const auto&) {});
  dispatcher_->Tick(20);
  auto binds = WorkerFrames(MessageType::kBindTask);
  ASSERT_EQ(binds.size(), 3u);
  EXPECT_EQ(binds[2].Body<BindTask>()->task, (TaskId{JobId(3), 0, 0}));
  EXPECT_EQ(dispatcher_->in_flight(), 3u);
  dispatcher_->Tick(2000);  // the first two time out; the third was sent at 20
  EXPECT_EQ(WorkerFrames(MessageType::kBindTask).size(), 5u);
}

// A bound task cancelled before it started gets its preempt at once, and a
// node that reconnects gets everything due for it again without waiting.
TEST_F(RegistryTest, DispatcherPreemptsAtOnceAndResendsToAReconnectedNode) {
  RegisterAndBindOneTask();
  dispatcher_->Tick(0);
  ASSERT_EQ(WorkerFrames(MessageType::kBindTask).size(), 1u);
  FromWorker("peer-b", RegisterNode{OneGpuNode("n1"), {}, "test"}, 100);  // the worker came back on a new connection
  dispatcher_->Tick(110);
  auto binds = WorkerFrames(MessageType::kBindTask);
  ASSERT_EQ(binds.size(), 2u);
  EXPECT_EQ(outbox_.sent.back().peer, "peer-b");
  proposer_.Propose(state::CancelJobCmd{1, 300}, [](const auto&) {});
  dispatcher_->Tick(120);
  ASSERT_EQ(WorkerFrames(MessageType::kPreemptTask).size(), 1u);
  EXPECT_EQ(dispatcher_->in_flight(), 1u) << "the preempt replaced the bind";
}

// Silence is found for links added after the registry last looked, and a
// node committed Ready by an earlier leadership's entry (no connection here)
// still goes NotReady at the next scan for nodes that never reconnected.
TEST_F(RegistryTest, LateLinksAndLateNodesAreStillWatched) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  registry_->Tick(500);
  FromWorker("peer-b", RegisterNode{OneGpuNode("n2"), {}, "test"}, 600);
  registry_->Tick(1000);
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
  EXPECT_EQ(state_.FindNode("n2")->state, NodeState::kReady);
  registry_->Tick(1599);
  EXPECT_EQ(state_.FindNode("n2")->state, NodeState::kReady);
  registry_->Tick(1600);
  EXPECT_EQ(state_.FindNode("n2")->state, NodeState::kNotReady);

  proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n3"), {}}, [](const auto&) {});
  registry_->Tick(1700);
  EXPECT_EQ(state_.FindNode("n3")->state, NodeState::kReady) << "the next scan is one timeout after the last";
  registry_->Tick(2000);
  EXPECT_EQ(state_.FindNode("n3")->state, NodeState::kNotReady);
}

}  // namespace
}  // namespace gpool::control
