#include "control/replication/peer_transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace gpool::replication {
namespace {

// Drains until `count` frames arrived or a bounded number of polls passed.
// Late connection probes are not counted.
std::vector<std::string> Receive(PeerTransport& transport, size_t count) {
  std::vector<std::string> got;
  for (int i = 0; i < 200 && got.size() < count; ++i) {
    zmq::pollitem_t item{transport.inbound().handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(25));
    for (auto& frame : transport.Drain()) {
      if (frame.bytes != "probe") got.push_back(std::move(frame.bytes));
    }
  }
  return got;
}

// Sends probes from `from` to peer `to_id` until one arrives at `to`.
bool AwaitConnected(PeerTransport& from, uint64_t to_id, PeerTransport& to) {
  for (int i = 0; i < 500; ++i) {
    from.Send(to_id, "probe");
    zmq::pollitem_t item{to.inbound().handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(10));
    if (!to.Drain().empty()) return true;
  }
  return false;
}

TEST(PeerTransportTest, ReplicasExchangeFramesInOrder) {
  zmq::context_t context;
  auto a = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
  auto b = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->AddPeer(2, (*b)->listen_endpoint()).ok());
  ASSERT_TRUE((*b)->AddPeer(1, (*a)->listen_endpoint()).ok());

  // With ZMQ_IMMEDIATE, frames sent before the connection is up are dropped:
  // keep sending a probe until one arrives, as Raft's heartbeats would. Each
  // direction is its own connection, so both are probed.
  ASSERT_TRUE(AwaitConnected(**a, 2, **b));
  ASSERT_TRUE(AwaitConnected(**b, 1, **a));
  for (int i = 0; i < 100; ++i) (*a)->Send(2, "m" + std::to_string(i));
  auto got = Receive(**b, 100);
  ASSERT_EQ(got.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i], "m" + std::to_string(i));
  (*b)->Send(1, std::string("\x00\xff", 2));
  auto back = Receive(**a, 1);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], std::string("\x00\xff", 2));
}

TEST(PeerTransportTest, UnknownPeerAndRemovedPeerAreDroppedNotBlocked) {
  zmq::context_t context;
  auto a = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
  ASSERT_TRUE(a.ok());
  (*a)->Send(9, "nobody");
  EXPECT_EQ((*a)->stats().dropped_unknown_peer, 1u);
  // A peer that is down: sends return at once and are counted as dropped.
  ASSERT_TRUE((*a)->AddPeer(3, "tcp://127.0.0.1:1").ok());
  for (int i = 0; i < 10; ++i) (*a)->Send(3, "lost");
  EXPECT_EQ((*a)->stats().dropped_queue_full, 10u);
  (*a)->RemovePeer(3);
  (*a)->Send(3, "gone");
  EXPECT_EQ((*a)->stats().dropped_unknown_peer, 2u);
}

TEST(PeerTransportTest, MultipartFromAStrangerIsDropped) {
  zmq::context_t context;
  auto a = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
  ASSERT_TRUE(a.ok());
  zmq::socket_t stranger(context, zmq::socket_type::dealer);
  stranger.set(zmq::sockopt::linger, 0);
  stranger.connect((*a)->listen_endpoint());
  stranger.send(zmq::str_buffer("one"), zmq::send_flags::sndmore);
  stranger.send(zmq::str_buffer("two"), zmq::send_flags::none);
  stranger.send(zmq::str_buffer("fine"), zmq::send_flags::none);
  auto got = Receive(**a, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "fine");
  EXPECT_EQ((*a)->stats().dropped_malformed, 1u);
}

TEST(PeerTransportTest, TokenMustMatchOrTheFrameIsDropped) {
  zmq::context_t context;
  auto a = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0", .token = "s3cret"});
  auto b = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0", .token = "s3cret"});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->AddPeer(2, (*b)->listen_endpoint()).ok());
  ASSERT_TRUE(AwaitConnected(**a, 2, **b));
  (*a)->Send(2, "ok");
  auto got = Receive(**b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "ok");

  // A stranger with the wrong token, and one with none at all.
  zmq::socket_t stranger(context, zmq::socket_type::dealer);
  stranger.set(zmq::sockopt::linger, 0);
  stranger.connect((*b)->listen_endpoint());
  stranger.send(zmq::str_buffer("s3creT"), zmq::send_flags::sndmore);
  stranger.send(zmq::str_buffer("forged"), zmq::send_flags::none);
  stranger.send(zmq::str_buffer("untokened"), zmq::send_flags::none);
  stranger.send(zmq::str_buffer("s3cret"), zmq::send_flags::sndmore);
  stranger.send(zmq::str_buffer("genuine"), zmq::send_flags::none);
  got = Receive(**b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "genuine");
  EXPECT_EQ((*b)->stats().dropped_unauthenticated, 1u);
  EXPECT_EQ((*b)->stats().dropped_malformed, 1u);
}

TEST(PeerTransportTest, AddPeerIsIdempotentAndRefusesBadEndpoints) {
  zmq::context_t context;
  auto a = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
  auto b = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->AddPeer(2, (*b)->listen_endpoint()).ok());
  ASSERT_TRUE(AwaitConnected(**a, 2, **b));
  // The same endpoint again keeps the live connection: nothing is lost.
  ASSERT_TRUE((*a)->AddPeer(2, (*b)->listen_endpoint()).ok());
  (*a)->Send(2, "still-connected");
  auto got = Receive(**b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "still-connected");
  auto bad = (*a)->AddPeer(3, "nonsense://x");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("replica 3"), std::string::npos) << bad.ToString();
}

TEST(PeerTransportTest, BindFailureIsATypedError) {
  zmq::context_t context;
  auto a = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = "tcp://127.0.0.1:0"});
  ASSERT_TRUE(a.ok());
  auto clash = PeerTransport::Open(context, PeerTransportOptions{.listen_endpoint = (*a)->listen_endpoint()});
  EXPECT_EQ(clash.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gpool::replication
