// PeerTransport and a rotated peer's key (issue 48): CurveZMQ pins the
// server's public key, so a replica whose key was rotated is reached under
// whichever key it serves during the grace (the new one preferred), and
// under the new one only once the grace has ended.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "control/replication/peer_transport.h"
#include "protocol/base/testing/fake_clock.h"
#include "protocol/security/keys.h"
#include "protocol/security/zap_handler.h"

namespace gpool::replication {
namespace {

security::KeyPair RotationPair() {
  auto pair = security::GenerateKeyPair();
  EXPECT_TRUE(pair.ok());
  return pair.ok() ? *pair : security::KeyPair{};
}

// Sends probes from `from` to peer `to_id` until one arrives at `to` (at
// most about 6 s: a reconnection under the other key waits a second).
bool RotationAwaitConnected(PeerTransport& from, uint64_t to_id, PeerTransport& to, int polls = 600) {
  for (int i = 0; i < polls; ++i) {
    from.Send(to_id, "probe");
    zmq::pollitem_t item{to.inbound().handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(10));
    if (!to.Drain().empty()) return true;
  }
  return false;
}

// A ZAP handler that admits every key (who is admitted is KeyDirectory's
// business, tested apart): these tests are about the server keys pinned.
std::unique_ptr<security::ZapHandler> AdmitAllPeers(zmq::context_t& context) {
  auto zap = security::ZapHandler::Start(
      context, [](std::string_view, std::string_view) -> std::optional<std::string> { return "replica|2|"; });
  EXPECT_TRUE(zap.ok()) << zap.status().ToString();
  return zap.ok() ? std::move(zap).value() : nullptr;
}

std::unique_ptr<PeerTransport> OpenRotationPeer(zmq::context_t& context, const security::KeyPair& keys,
                                           const std::string& endpoint, const Clock* clock) {
  PeerTransportOptions options;
  options.listen_endpoint = endpoint;
  options.curve_keys = keys;
  options.clock = clock;
  auto transport = PeerTransport::Open(context, options);
  // A port just closed in this context is released by libzmq's reaper
  // thread, not at once: binding it again may need a few tries.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!transport.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a retry pause, bounded by the deadline
    transport = PeerTransport::Open(context, options);
  }
  EXPECT_TRUE(transport.ok()) << transport.status().ToString();
  return transport.ok() ? std::move(transport).value() : nullptr;
}

TEST(PeerKeyRotation, DuringTheGraceThePeerIsReachedUnderWhicheverKeyItServes) {
  zmq::context_t context;
  auto zap = AdmitAllPeers(context);
  FakeClock clock;
  const security::KeyPair a_keys = RotationPair(), old_keys = RotationPair(), new_keys = RotationPair();
  auto a = OpenRotationPeer(context, a_keys, "tcp://127.0.0.1:0", &clock);
  auto b = OpenRotationPeer(context, old_keys, "tcp://127.0.0.1:0", &clock);
  ASSERT_TRUE(a && b);
  const std::string b_endpoint = b->listen_endpoint();
  ASSERT_TRUE(a->AddPeer(2, b_endpoint, old_keys.public_key).ok());
  ASSERT_TRUE(RotationAwaitConnected(*a, 2, *b));

  // The rotation commits while B still runs on its old key: the working
  // connection is kept.
  ASSERT_TRUE(a->RotatePeerKey(2, new_keys.public_key, old_keys.public_key, clock.WallMs() + 60'000).ok());
  EXPECT_EQ(a->PinnedKey(2), old_keys.public_key);
  ASSERT_TRUE(RotationAwaitConnected(*a, 2, *b));

  // B restarts on its new key, same endpoint: A finds it under the new key.
  b.reset();
  b = OpenRotationPeer(context, new_keys, b_endpoint, &clock);
  ASSERT_TRUE(b);
  ASSERT_TRUE(RotationAwaitConnected(*a, 2, *b));
  EXPECT_EQ(a->PinnedKey(2), new_keys.public_key);
  EXPECT_GE(a->stats().key_switches, 1u);
  EXPECT_EQ(a->RotatePeerKey(9, new_keys.public_key, old_keys.public_key, 0).code(), StatusCode::kNotFound);
  EXPECT_EQ(a->RotatePeerKey(2, "short", old_keys.public_key, 0).code(), StatusCode::kInvalidArgument);
}

TEST(PeerKeyRotation, AfterTheGraceOnlyTheNewKeyIsUsed) {
  zmq::context_t context;
  auto zap = AdmitAllPeers(context);
  FakeClock clock;
  const security::KeyPair a_keys = RotationPair(), old_keys = RotationPair(), new_keys = RotationPair();
  auto a = OpenRotationPeer(context, a_keys, "tcp://127.0.0.1:0", &clock);
  auto b = OpenRotationPeer(context, old_keys, "tcp://127.0.0.1:0", &clock);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->AddPeer(2, b->listen_endpoint(), old_keys.public_key).ok());
  ASSERT_TRUE(RotationAwaitConnected(*a, 2, *b));
  ASSERT_TRUE(a->RotatePeerKey(2, new_keys.public_key, old_keys.public_key, clock.WallMs() + 1000).ok());
  EXPECT_EQ(a->PinnedKey(2), old_keys.public_key);
  clock.Advance(1000);
  // The first send after the deadline moves the connection to the new key;
  // B, still on its old one, is no longer reached, and A never goes back.
  a->Send(2, "after");
  EXPECT_EQ(a->PinnedKey(2), new_keys.public_key);
  // 1.5 s spans a reconnection attempt (one a second while sends fail).
  EXPECT_FALSE(RotationAwaitConnected(*a, 2, *b, 150));
  EXPECT_EQ(a->PinnedKey(2), new_keys.public_key);

  // A rotation without a grace moves at once.
  auto c = OpenRotationPeer(context, a_keys, "tcp://127.0.0.1:0", &clock);
  ASSERT_TRUE(a->AddPeer(3, c->listen_endpoint(), old_keys.public_key).ok());
  ASSERT_TRUE(a->RotatePeerKey(3, new_keys.public_key, old_keys.public_key, 0).ok());
  EXPECT_EQ(a->PinnedKey(3), new_keys.public_key);
}

}  // namespace
}  // namespace gpool::replication
