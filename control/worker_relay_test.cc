// The WorkerRelay alone: a request goes to the node's connection and is
// answered only by that node's reply of the expected type to that request.
#include "control/worker_relay.h"

#include <gtest/gtest.h>

#include "control/testing/fake_ports.h"
#include "protocol/messages_common.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_worker.h"

namespace gpool::control {
namespace {

class WorkerRelayTest : public ::testing::Test {
 protected:
  WorkerRelayTest() { workers_.Connect("n1", "peer-n1", 0, 0); }

  // Asks n1 (or `node`) to start an exec; the answer lands in result_.
  uint64_t Ask(const std::string& node = "n1") {
    relay_.Ask<TaskExecStart, ExecStartReply>(node, TaskExecStart{TaskId{JobId(1), 0, 0}, {"true"}}, 100,
                                              [this](Result<ExecStartReply> r) {
                                                ++answers_;
                                                result_ = std::move(r);
                                              });
    if (outbox_.sent.empty()) return 0;
    return DecodeEnvelope(outbox_.sent.back().frame)->header().request_id;
  }

  state::ClusterState state_;
  WorkerTable workers_;
  RequestIds request_ids_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  WorkerRelay relay_{WorkerRelayOptions{.timeout_ms = 500}, workers_, request_ids_, outbox_, proposer_};
  Result<ExecStartReply> result_ = Status::Internal("no answer");
  int answers_ = 0;
};

TEST_F(WorkerRelayTest, AnUnknownNodeIsUnavailableAtOnce) {
  Ask("n9");
  EXPECT_EQ(answers_, 1);
  EXPECT_EQ(result_.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(result_.status().message(), "node n9 is not connected");
  EXPECT_TRUE(outbox_.sent.empty());
  EXPECT_EQ(relay_.in_flight(), 0u);
}

TEST_F(WorkerRelayTest, OnlyTheNodesReplyOfTheRightTypeToThisRequestAnswers) {
  const uint64_t id = Ask();
  ASSERT_EQ(outbox_.sent.size(), 1u);
  EXPECT_EQ(outbox_.sent[0].peer, "peer-n1");
  relay_.WorkerReplied("n1", WorkerReply(id + 1, ExecStartReply{.exec_id = 1}));  // another request
  relay_.WorkerReplied("n2", WorkerReply(id, ExecStartReply{.exec_id = 2}));      // another node
  relay_.WorkerReplied("n1", WorkerReply(id, FetchLogReply{}));                   // another type
  EXPECT_EQ(answers_, 0);
  relay_.WorkerReplied("n1", WorkerReply(id, ExecStartReply{.exec_id = 3}));
  ASSERT_EQ(answers_, 1);
  ASSERT_TRUE(result_.ok()) << result_.status().ToString();
  EXPECT_EQ(result_->exec_id, 3u);
  relay_.WorkerReplied("n1", WorkerReply(id, ExecStartReply{.exec_id = 4}));  // answered already
  EXPECT_EQ(answers_, 1);
}

TEST_F(WorkerRelayTest, TheNodesErrorIsTheAnswer) {
  const uint64_t id = Ask();
  relay_.WorkerReplied("n1", WorkerReply(id, ErrorReply::FromStatus(Status::NotFound("no such command"))));
  ASSERT_EQ(answers_, 1);
  EXPECT_EQ(result_.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(result_.status().message(), "no such command");
}

TEST_F(WorkerRelayTest, ARequestNotAnsweredInTimeIsUnavailable) {
  Ask();
  relay_.Tick(599);
  EXPECT_EQ(answers_, 0);
  relay_.Tick(600);
  ASSERT_EQ(answers_, 1);
  EXPECT_EQ(result_.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(result_.status().message(), "node n1 did not answer in time");
  EXPECT_EQ(relay_.in_flight(), 0u);
}

TEST_F(WorkerRelayTest, ResetFailsEverythingInFlight) {
  Ask();
  Ask();
  relay_.Reset(Status::Unavailable("leader changed"));
  EXPECT_EQ(answers_, 2);
  EXPECT_EQ(result_.status().message(), "leader changed");
}

}  // namespace
}  // namespace gpool::control
