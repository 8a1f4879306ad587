#include "protocol/security/zap_handler.h"

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "protocol/security/curve_socket.h"
#include "protocol/security/handshake_probe.h"

namespace gpool::security {
namespace {

constexpr int64_t kTimeoutMs = 5000;

KeyPair Pair() {
  auto pair = GenerateKeyPair();
  EXPECT_TRUE(pair.ok());
  return *pair;
}

// A CURVE ROUTER on an ephemeral port whose handler admits the keys in
// `admitted` as their names, for one domain.
class ZapTest : public ::testing::Test {
 protected:
  void StartServer(std::string domain = "clients") {
    auto handler = ZapHandler::Start(context_, [this](std::string_view d, std::string_view key)
                                                   -> std::optional<std::string> {
      std::lock_guard<std::mutex> lock(mu_);
      domains_seen_.emplace_back(d);
      auto it = admitted_.find(std::string(key));
      if (it == admitted_.end()) return std::nullopt;
      return "user|" + it->second + "|" + std::string(key);
    });
    ASSERT_TRUE(handler.ok()) << handler.status().ToString();
    handler_ = std::move(handler).value();
    server_ = zmq::socket_t(context_, zmq::socket_type::router);
    server_.set(zmq::sockopt::linger, 0);
    ASSERT_TRUE(MakeCurveServer(server_, server_keys_, domain).ok());
    server_.bind("tcp://127.0.0.1:*");
    endpoint_ = server_.get(zmq::sockopt::last_endpoint);
  }
  void Admit(const std::string& key, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    admitted_[key] = name;
  }
  Handshake Probe(const KeyPair& own, const std::string& server_key) {
    auto outcome = ProbeHandshake(context_, endpoint_, own, server_key, kTimeoutMs);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    return outcome.ok() ? *outcome : Handshake::kFailed;
  }

  zmq::context_t context_{1};
  KeyPair server_keys_ = Pair();
  std::mutex mu_;
  std::map<std::string, std::string> admitted_;
  std::vector<std::string> domains_seen_;
  std::unique_ptr<ZapHandler> handler_;
  zmq::socket_t server_;
  std::string endpoint_;

  void TearDown() override {
    server_.close();
    handler_.reset();
  }
};

TEST_F(ZapTest, AdmittedKeyGetsItsUserIdOnEveryFrame) {
  StartServer();
  const KeyPair alice = Pair();
  Admit(alice.public_key, "alice");
  zmq::socket_t client(context_, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  ASSERT_TRUE(MakeCurveClient(client, alice, server_keys_.public_key).ok());
  client.connect(endpoint_);
  client.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  server_.set(zmq::sockopt::rcvtimeo, static_cast<int>(kTimeoutMs));
  zmq::message_t identity;
  zmq::message_t body;
  ASSERT_TRUE(server_.recv(identity));
  ASSERT_TRUE(server_.recv(body));
  EXPECT_EQ(body.to_string(), "hello");
  EXPECT_EQ(std::string(body.gets("User-Id")), "user|alice|" + alice.public_key);
  EXPECT_EQ(handler_->admitted(), 1u);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(domains_seen_, std::vector<std::string>{"clients"});
  client.close();
}

TEST_F(ZapTest, UnknownKeyIsRefusedAtTheHandshake) {
  StartServer();
  EXPECT_EQ(Probe(Pair(), server_keys_.public_key), Handshake::kRefused);
  EXPECT_EQ(handler_->refused(), 1u);
  EXPECT_EQ(handler_->admitted(), 0u);
}

TEST_F(ZapTest, KeyAdmittedLaterIsAdmittedOnTheNextHandshake) {
  StartServer();
  const KeyPair bob = Pair();
  EXPECT_EQ(Probe(bob, server_keys_.public_key), Handshake::kRefused);
  Admit(bob.public_key, "bob");
  EXPECT_EQ(Probe(bob, server_keys_.public_key), Handshake::kAdmitted);
}

TEST_F(ZapTest, WrongServerKeyNeverReachesTheHandler) {
  StartServer();
  const KeyPair alice = Pair();
  Admit(alice.public_key, "alice");
  const Handshake outcome = Probe(alice, Pair().public_key);
  EXPECT_NE(outcome, Handshake::kAdmitted);
  EXPECT_EQ(handler_->admitted(), 0u);
}

TEST_F(ZapTest, PlaintextClientIsNotAdmitted) {
  StartServer();
  EXPECT_NE(Probe(KeyPair{}, ""), Handshake::kAdmitted);
}

// ZMQ_ZAP_ENFORCE_DOMAIN: a CURVE server with no handler in its context
// admits nobody, rather than everybody.
TEST(ZapEnforce, NoHandlerAdmitsNobody) {
  if (!ZapEnforceDomainSupported()) GTEST_SKIP() << "this libzmq lacks the draft ZMQ_ZAP_ENFORCE_DOMAIN";
  zmq::context_t context(1);
  const KeyPair server_keys = Pair();
  zmq::socket_t server(context, zmq::socket_type::router);
  server.set(zmq::sockopt::linger, 0);
  ASSERT_TRUE(MakeCurveServer(server, server_keys, "clients").ok());
  server.bind("tcp://127.0.0.1:*");
  auto outcome = ProbeHandshake(context, server.get(zmq::sockopt::last_endpoint), Pair(), server_keys.public_key,
                                kTimeoutMs);
  ASSERT_TRUE(outcome.ok());
  EXPECT_NE(*outcome, Handshake::kAdmitted);
  server.close();
}

TEST(ZapHandlerStart, SecondHandlerInOneContextIsUnavailable) {
  zmq::context_t context(1);
  auto first = ZapHandler::Start(context, [](auto, auto) { return std::optional<std::string>("x"); });
  ASSERT_TRUE(first.ok());
  auto second = ZapHandler::Start(context, [](auto, auto) { return std::optional<std::string>("x"); });
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
}

// Requests that are not RFC 27 CURVE requests get a reply (the REP socket
// needs one) and are counted; the handler keeps answering good ones.
TEST(ZapHandlerRobustness, MalformedRequestsAreRefusedAndCounted) {
  zmq::context_t context(1);
  auto handler = ZapHandler::Start(context, [](auto, auto) { return std::optional<std::string>("user|a|k"); });
  ASSERT_TRUE(handler.ok());
  zmq::socket_t req(context, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, static_cast<int>(kTimeoutMs));
  req.connect(kZapEndpoint);
  auto ask = [&](const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      req.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    std::vector<std::string> reply;
    do {
      zmq::message_t part;
      EXPECT_TRUE(req.recv(part));
      reply.push_back(part.to_string());
    } while (req.get(zmq::sockopt::rcvmore));
    return reply;
  };
  const std::string key32(32, '\x01');
  auto one = ask({"garbage"});
  ASSERT_EQ(one.size(), 6u);
  EXPECT_EQ(one[2], "500");
  auto plain = ask({"1.0", "7", "clients", "127.0.0.1", "", "PLAIN", "user", "pass"});
  ASSERT_EQ(plain.size(), 6u);
  EXPECT_EQ(plain[1], "7");
  EXPECT_EQ(plain[2], "400");
  auto short_key = ask({"1.0", "8", "clients", "127.0.0.1", "", "CURVE", "short"});
  EXPECT_EQ(short_key[2], "400");
  auto good = ask({"1.0", "9", "clients", "127.0.0.1", "", "CURVE", key32});
  ASSERT_EQ(good.size(), 6u);
  EXPECT_EQ(good[1], "9");
  EXPECT_EQ(good[2], "200");
  EXPECT_EQ(good[4], "user|a|k");
  EXPECT_EQ((*handler)->malformed(), 3u);
  EXPECT_EQ((*handler)->admitted(), 1u);
  req.close();
}

TEST(ZapHandlerLifetime, StopsAndJoinsPromptly) {
  zmq::context_t context(1);
  for (int i = 0; i < 3; ++i) {
    // Each handler frees the endpoint for the next one.
    auto handler = ZapHandler::Start(context, [](auto, auto) { return std::nullopt; });
    ASSERT_TRUE(handler.ok()) << i << ": " << handler.status().ToString();
  }
}

}  // namespace
}  // namespace gpool::security
