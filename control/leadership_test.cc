// The components on a replica that does not serve (a follower, or a leader
// still catching up), and what a change of leadership resets: over fakes,
// no sockets.
#include <gtest/gtest.h>

#include "control/dispatcher.h"
#include "control/gateway.h"
#include "control/node_registry.h"
#include "control/testing/fake_ports.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_worker.h"

namespace gpool::control {
namespace {

// Applies proposals at once while leading; a follower proposes nothing.
class SwitchableProposer final : public Proposer {
 public:
  explicit SwitchableProposer(state::ClusterState& state) : state_(state) {}

  void Propose(state::CommandBody body, ApplyCallback done) override {
    proposed.push_back(std::string(state::CommandName(body)));
    done(state_.Apply(++index_, state::Command{1'000'000, std::move(body)}));
  }
  uint64_t epoch() const override { return leading_ ? 7 : 0; }
  bool leading() const override { return leading_; }
  std::string leader_client_address() const override { return leader_; }
  std::string leader_worker_address() const override { return leader_worker_; }
  void ReadBarrier(ReadCallback done) override {
    if (defer_reads) {
      barriers.push_back(std::move(done));
    } else {
      done(Status::Ok());
    }
  }

  void Follow(std::string leader, std::string leader_worker = {}) {
    leading_ = false;
    leader_ = std::move(leader);
    leader_worker_ = std::move(leader_worker);
  }
  void Lead() {
    leading_ = true;
    leader_.clear();
  }

  std::vector<std::string> proposed;
  bool defer_reads = false;
  std::vector<ReadCallback> barriers;

 private:
  state::ClusterState& state_;
  uint64_t index_ = 0;
  bool leading_ = true;
  std::string leader_;
  std::string leader_worker_;
};

class LeadershipTest : public ::testing::Test {
 protected:
  LeadershipTest() {
    NodeRegistryOptions options;
    options.node_timeout_ms = 1000;
    registry_ = std::make_unique<NodeRegistry>(options, state_, workers_, outbox_, proposer_, /*start_ms=*/0);
    dispatcher_ =
        std::make_unique<Dispatcher>(DispatcherOptions{}, state_, workers_, request_ids_, outbox_, proposer_);
    relay_ = std::make_unique<WorkerRelay>(WorkerRelayOptions{}, workers_, request_ids_, outbox_, proposer_);
    registry_->Subscribe(dispatcher_.get());
    registry_->Subscribe(relay_.get());
    gateway_ = std::make_unique<Gateway>(GatewayOptions{}, state_, workers_, *relay_, outbox_, proposer_);
  }

  template <typename T>
  void FromClient(const T& body, uint64_t request_id = 1) {
    gateway_->OnFrame("client", EncodeEnvelope(Header{.request_id = request_id}, body), 0);
  }
  template <typename T>
  void FromWorker(const std::string& peer, const T& body, int64_t now, uint64_t request_id = 1) {
    registry_->OnFrame(peer, EncodeEnvelope(Header{.request_id = request_id}, body), now);
  }

  Envelope Last() {
    EXPECT_FALSE(outbox_.sent.empty());
    auto env = DecodeEnvelope(outbox_.sent.back().frame);
    EXPECT_TRUE(env.ok());
    return std::move(env).value();
  }

  static JobSpec OneGpuJob() {
    JobSpec spec;
    spec.name = "j";
    TaskGroupSpec group;
    group.command = {"true"};
    group.resources.gpus = 1;
    spec.tasks.push_back(group);
    return spec;
  }

  state::ClusterState state_;
  WorkerTable workers_;
  RequestIds request_ids_;
  SwitchableProposer proposer_{state_};
  RecordingOutbox outbox_;
  std::unique_ptr<NodeRegistry> registry_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<WorkerRelay> relay_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(LeadershipTest, FollowerRedirectsClientsToTheLeaderAndProposesNothing) {
  proposer_.Follow("tcp://10.0.0.2:7400");
  FromClient(SubmitJob{OneGpuJob(), "key-1"}, 5);
  Envelope reply = Last();
  ASSERT_EQ(reply.type(), MessageType::kErrorReply);
  EXPECT_EQ(reply.header().request_id, 5u);
  EXPECT_EQ(reply.header().epoch, 0u) << "a follower must not raise anyone's epoch";
  auto error = reply.Body<ErrorReply>();
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->code, "NotLeader");
  EXPECT_EQ(error->leader, "tcp://10.0.0.2:7400");
  EXPECT_TRUE(proposer_.proposed.empty());
  // Reads too: the follower's state may be behind.
  FromClient(ListJobs{}, 6);
  auto read = Last().Body<ErrorReply>();
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->code, "NotLeader");
  // Even the status: with a leader known, the leader's view is the one to show.
  FromClient(ClusterStatus{}, 7);
  EXPECT_EQ(Last().type(), MessageType::kErrorReply);
}

TEST_F(LeadershipTest, ReadsWaitForTheReadBarrier) {
  proposer_.defer_reads = true;
  FromClient(SubmitJob{OneGpuJob(), "key-1"}, 1);
  const size_t sent = outbox_.sent.size();
  FromClient(ListJobs{}, 2);
  FromClient(GetJob{1}, 3);
  FromClient(ListNodes{}, 4);
  EXPECT_EQ(outbox_.sent.size(), sent) << "no read is answered before the barrier";
  ASSERT_EQ(proposer_.barriers.size(), 3u);
  proposer_.barriers[0](Status::Ok());
  EXPECT_EQ(Last().type(), MessageType::kListJobsReply);
  proposer_.barriers[1](Status::Ok());
  EXPECT_EQ(Last().type(), MessageType::kGetJobReply);
  // Leadership lost while waiting: the client is redirected.
  proposer_.barriers[2](Status::NotLeader("deposed"));
  auto error = Last().Body<ErrorReply>();
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->code, "NotLeader");
  EXPECT_EQ(Last().header().request_id, 4u);
  // The status report does not wait.
  FromClient(ClusterStatus{}, 5);
  EXPECT_EQ(Last().type(), MessageType::kClusterStatusReply);
}

TEST_F(LeadershipTest, ReplicaWithNoLeaderStillAnswersStatus) {
  proposer_.Follow("");
  FromClient(ClusterStatus{}, 8);
  EXPECT_EQ(Last().type(), MessageType::kClusterStatusReply);
  FromClient(SubmitJob{OneGpuJob(), "key-1"}, 9);
  auto error = Last().Body<ErrorReply>();
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->code, "NotLeader");
  EXPECT_TRUE(error->leader.empty());
}

TEST_F(LeadershipTest, FollowerSendsWorkersOnAndIgnoresTheirReplies) {
  proposer_.Follow("tcp://10.0.0.2:7400", "tcp://10.0.0.2:7401");
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0, 3);
  auto error = Last().Body<ErrorReply>();
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->code, "NotLeader");
  EXPECT_EQ(error->leader, "tcp://10.0.0.2:7401") << "the worker goes straight to the leader's worker endpoint";
  EXPECT_EQ(state_.FindNode("n1"), nullptr);
  const size_t sent = outbox_.sent.size();
  FromWorker("peer-a", Ack{}, 0, 4);  // an answer to an earlier leader's command
  EXPECT_EQ(outbox_.sent.size(), sent) << "replies are never answered";
  EXPECT_TRUE(proposer_.proposed.empty());
}

TEST_F(LeadershipTest, NewLeadershipGivesNodesAFreshWindowBeforeNotReady) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  proposer_.proposed.clear();
  // Leadership moves away and back at t=5000 (a new term): connections of
  // the old leadership are gone, and n1 has a full timeout to find us.
  registry_->Reset(5000);
  EXPECT_EQ(workers_.PeerFor("n1"), nullptr);
  registry_->Tick(5999);
  EXPECT_TRUE(proposer_.proposed.empty());
  registry_->Tick(6000);
  ASSERT_EQ(proposer_.proposed.size(), 1u);
  EXPECT_EQ(proposer_.proposed[0], "NodeState");
  EXPECT_EQ(state_.FindNode("n1")->state, NodeState::kNotReady);
}

TEST_F(LeadershipTest, DispatcherResetResendsBindsAndFailsLogFetches) {
  FromWorker("peer-a", RegisterNode{OneGpuNode("n1"), {}, "test"}, 0);
  FromClient(SubmitJob{OneGpuJob(), "k"});
  state::ApplyPlanCmd plan;
  plan.binds.push_back(state::PlanBind{JobId(1), 0, "n1", {0}, 0, 0});
  proposer_.Propose(plan, [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  dispatcher_->Tick(100);
  auto binds = [&] {
    int n = 0;
    for (const auto& s : outbox_.sent) {
      auto env = DecodeEnvelope(s.frame);
      n += s.to_worker && env.ok() && env->type() == MessageType::kBindTask ? 1 : 0;
    }
    return n;
  };
  ASSERT_EQ(binds(), 1);
  dispatcher_->Tick(200);
  EXPECT_EQ(binds(), 1) << "not due again yet";
  Status fetch_status;
  relay_->Ask<FetchLog, FetchLogReply>("n1", FetchLog{TaskId{JobId(1), 0, 0}, 100}, 200,
                                      [&](Result<FetchLogReply> r) { fetch_status = r.status(); });
  dispatcher_->Reset();
  relay_->Reset(Status::Unavailable("leader changed"));
  EXPECT_EQ(fetch_status.code(), StatusCode::kUnavailable);
  dispatcher_->Tick(300);
  EXPECT_EQ(binds(), 2) << "a new leadership re-sends what it cannot know was delivered";
}

}  // namespace
}  // namespace gpool::control
