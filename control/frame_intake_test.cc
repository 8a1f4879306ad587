#include "control/frame_intake.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpool::control {
namespace {

// A ROUTER and a DEALER over inproc (no network), no CurveZMQ: every
// connection is the insecure cluster's principal.
class FrameIntakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.bind("inproc://intake");
    dealer_.set(zmq::sockopt::routing_id, "peer-1");
    dealer_.connect("inproc://intake");
  }

  // Drains with `max`; delivered bodies and rejections in order.
  void Drain(int max) {
    DrainRouter(
        router_, max,
        [&](const std::string& peer, std::string_view bytes, const Principal&, int) {
          got_.push_back(peer + ":" + std::string(bytes));
        },
        [&](const std::string& peer, const Status& why) { rejected_.push_back({peer, why}); });
  }

  // Waits until the router has something to read.
  void AwaitInput() {
    zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(5000)), 1);
  }

  zmq::context_t context_{1};
  zmq::socket_t router_{context_, zmq::socket_type::router};
  zmq::socket_t dealer_{context_, zmq::socket_type::dealer};
  std::vector<std::string> got_;
  std::vector<std::pair<std::string, Status>> rejected_;
};

TEST_F(FrameIntakeTest, OneFrameMessagesAreDeliveredWithTheirPeer) {
  dealer_.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  AwaitInput();
  Drain(10);
  EXPECT_EQ(got_, std::vector<std::string>{"peer-1:hello"});
  EXPECT_TRUE(rejected_.empty());
}

TEST_F(FrameIntakeTest, AMessageOfSeveralFramesIsMalformedAndNotDelivered) {
  dealer_.send(zmq::str_buffer("a"), zmq::send_flags::sndmore);
  dealer_.send(zmq::str_buffer("b"), zmq::send_flags::none);
  dealer_.send(zmq::str_buffer("after"), zmq::send_flags::none);
  AwaitInput();
  for (int i = 0; i < 100 && got_.empty(); ++i) {
    Drain(10);
    if (got_.empty()) AwaitInput();
  }
  ASSERT_EQ(rejected_.size(), 1u);
  EXPECT_EQ(rejected_[0].first, "peer-1");
  EXPECT_EQ(rejected_[0].second.code(), StatusCode::kMalformed);
  EXPECT_NE(rejected_[0].second.message().find("got 2"), std::string::npos) << rejected_[0].second.ToString();
  EXPECT_EQ(got_, std::vector<std::string>{"peer-1:after"}) << "the next message is read as usual";
}

TEST_F(FrameIntakeTest, AtMostMaxFramesAreReadATurn) {
  for (const char* body : {"1", "2", "3"}) dealer_.send(zmq::buffer(std::string(body)), zmq::send_flags::none);
  AwaitInput();
  Drain(1);
  EXPECT_EQ(got_, std::vector<std::string>{"peer-1:1"}) << "a turn stops at max_frames, input or not";
  for (int i = 0; i < 100 && got_.size() < 3; ++i) {
    AwaitInput();
    Drain(1);
  }
  EXPECT_EQ(got_, (std::vector<std::string>{"peer-1:1", "peer-1:2", "peer-1:3"}));
}

}  // namespace
}  // namespace gpool::control
