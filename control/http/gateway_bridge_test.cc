#include "control/http/gateway_bridge.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "control/frames.h"
#include "control/http/coordinator_http.h"
#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"

namespace gpool::control {
namespace {

struct Sent {
  std::string peer;
  std::string frame;
  Principal principal;
};

TEST(GatewayBridgeTest, SendsAReadAsTheEnvelopeAZeroMqClientWouldAndReturnsTheReplyAsJson) {
  std::vector<Sent> sent;
  GatewayBridge bridge([&](const std::string& peer, std::string_view frame, const Principal& principal) {
    sent.push_back({peer, std::string(frame), principal});
  });
  auto done = std::make_shared<std::promise<BridgeReply>>();
  auto reply = done->get_future();
  Principal user{Principal::Kind::kUser, "alice", "KEY"};
  bridge.Request("ListJobs", R"({"limit": 5})", user, "tok", done);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(GatewayBridge::IsBridgePeer(sent[0].peer));
  EXPECT_EQ(sent[0].principal, user);
  // The gateway's own decoder reads it.
  auto envelope = DecodeEnvelope(sent[0].frame);
  ASSERT_TRUE(envelope.ok()) << envelope.status().ToString();
  EXPECT_EQ(envelope->type(), MessageType::kListJobs);
  EXPECT_EQ(envelope->header().token, "tok");
  auto body = envelope->Body<ListJobs>();
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->limit, 5u);

  ListJobsReply answer;
  answer.jobs.push_back(JobSummary{.job_id = 7, .name = "j"});
  EXPECT_TRUE(bridge.Deliver(sent[0].peer, EncodeEnvelope(Header{.type = MessageType::kListJobsReply}, answer)));
  ASSERT_EQ(reply.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  BridgeReply got = reply.get();
  ASSERT_TRUE(got.status.ok()) << got.status.ToString();
  EXPECT_EQ(got.type, "ListJobsReply");
  EXPECT_EQ(nlohmann::json::parse(got.json)["jobs"][0]["job_id"], 7);
  EXPECT_EQ(bridge.in_flight(), 0u);
  // A real client's frame is not the bridge's.
  EXPECT_FALSE(bridge.Deliver(std::string("\0\x12\x34\x56\x78", 5), "x"));
}

TEST(GatewayBridgeTest, ErrorsComeBackTyped) {
  std::vector<Sent> sent;
  GatewayBridge bridge([&](const std::string& peer, std::string_view frame, const Principal& principal) {
    sent.push_back({peer, std::string(frame), principal});
  });
  auto done = std::make_shared<std::promise<BridgeReply>>();
  auto reply = done->get_future();
  bridge.Request("GetJob", R"({"job_id": 9})", {}, "", done);
  ASSERT_EQ(sent.size(), 1u);
  bridge.Deliver(sent[0].peer, MakeError(1, 0, Status::NotLeader("ask the leader"), "tcp://10.0.0.2:7400"));
  BridgeReply got = reply.get();
  EXPECT_EQ(got.status.code(), StatusCode::kNotLeader);
  EXPECT_EQ(got.leader, "tcp://10.0.0.2:7400");
}

TEST(GatewayBridgeTest, WritesUnknownTypesAndBadBodiesAreRefusedWithoutReachingTheGateway) {
  size_t sent = 0;
  GatewayBridge bridge([&](const std::string&, std::string_view, const Principal&) { ++sent; });
  for (auto [type, body] : std::vector<std::pair<std::string, std::string>>{
           {"SubmitJob", "{}"}, {"CancelJob", "{}"}, {"NoSuchThing", "{}"}, {"ListJobs", "[1]"}, {"ListJobs", "{"}}) {
    auto done = std::make_shared<std::promise<BridgeReply>>();
    auto reply = done->get_future();
    bridge.Request(type, body, {}, "", done);
    ASSERT_EQ(reply.wait_for(std::chrono::seconds(0)), std::future_status::ready) << type;
    EXPECT_FALSE(reply.get().status.ok()) << type << " " << body;
  }
  EXPECT_EQ(sent, 0u);
}

TEST(GatewayBridgeTest, QueryParametersBecomeTypedFields) {
  std::multimap<std::string, std::string> params{{"limit", "5"}, {"include_finished", "false"}, {"queue", "a b"}};
  EXPECT_EQ(nlohmann::json::parse(QueryToJson(params)),
            nlohmann::json({{"limit", 5}, {"include_finished", false}, {"queue", "a b"}}));
}

}  // namespace
}  // namespace gpool::control
