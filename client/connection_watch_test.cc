// The client moves on as soon as its coordinator drops the connection
// (issue 49), rather than after its reply or connect timeout: a replica
// killed while a request was in flight, or while the client sat idle.
#include "client/connection_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "client/client.h"
#include "protocol/envelope.h"
#include "protocol/messages_admin.h"

namespace gpool {
namespace {

using WatchTestClock = std::chrono::steady_clock;

// A coordinator stand-in that can die: a ROUTER on an ephemeral port with
// its own context, served by a thread. It answers ClusterStatus with its
// name, except the requests `silent_from` on, which it only counts (as a
// coordinator killed before answering would). Destroying it closes its
// connections, as a killed process's kernel does.
class DyingServer {
 public:
  DyingServer(std::string name, int silent_from)
      : name_(std::move(name)), silent_from_(silent_from), socket_(context_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Serve(); });
  }
  ~DyingServer() {
    stop_ = true;
    thread_.join();
    socket_.close();
  }
  const std::string& endpoint() const { return endpoint_; }
  int requests() const { return requests_.load(); }

 private:
  void Serve() {
    while (!stop_) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(5));
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(socket_, std::back_inserter(parts)) || parts.size() != 2) continue;
      auto request = DecodeEnvelope(parts[1].to_string_view());
      if (!request.ok()) continue;
      if (++requests_ >= silent_from_) continue;
      Header header;
      header.request_id = request->header().request_id;
      ClusterStatusReply reply;
      reply.replica_id = name_;
      reply.role = "leader";
      const std::string frame = EncodeEnvelope(header, reply);
      std::array<zmq::const_buffer, 2> out = {zmq::buffer(parts[0].data(), parts[0].size()), zmq::buffer(frame)};
      zmq::send_multipart(socket_, out);
    }
  }

  std::string name_;
  int silent_from_;
  zmq::context_t context_;
  zmq::socket_t socket_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// Reply and connect timeouts far longer than the test allows itself, so
// only the connection watch can make it pass.
std::unique_ptr<Client> WatchTestClient(const std::string& endpoints) {
  ClientOptions options;
  options.endpoints = endpoints;
  options.timeout_ms = 10'000;
  options.connect_timeout_ms = 10'000;
  options.retries = 2;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(client).value();
}

constexpr auto kWatchTestBound = std::chrono::milliseconds(3000);

TEST(ConnectionWatchTest, ARequestInFlightToACoordinatorThatDiesMovesOnAtOnce) {
  auto first = std::make_unique<DyingServer>("first", /*silent_from=*/2);
  DyingServer second("second", 1 << 30);
  auto client = WatchTestClient(first->endpoint() + "," + second.endpoint());
  auto reply = client->ClusterStatus();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->replica_id, "first");

  // The second request reaches `first`, which dies without answering.
  std::thread killer([&] {
    while (first->requests() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    first.reset();
  });
  const auto start = WatchTestClock::now();
  reply = client->ClusterStatus();
  const auto took = WatchTestClock::now() - start;
  killer.join();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->replica_id, "second");
  EXPECT_LT(took, kWatchTestBound) << "waited for the 10 s reply timeout instead of noticing the dropped connection";
}

TEST(ConnectionWatchTest, AnIdleConnectionWhoseCoordinatorDiedIsLeftAtOnce) {
  auto first = std::make_unique<DyingServer>("first", 1 << 30);
  DyingServer second("second", 1 << 30);
  auto client = WatchTestClient(first->endpoint() + "," + second.endpoint());
  ASSERT_TRUE(client->ClusterStatus().ok());
  first.reset();  // dies while the client is idle

  const auto start = WatchTestClock::now();
  auto reply = client->ClusterStatus();
  const auto took = WatchTestClock::now() - start;
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->replica_id, "second");
  EXPECT_LT(took, kWatchTestBound) << "waited for the 10 s connect timeout on a connection known to be gone";
}

TEST(ConnectionWatchTest, ReportsALostConnectionOnlyOnceItWasLost) {
  zmq::context_t context;
  auto server = std::make_unique<zmq::socket_t>(context, zmq::socket_type::router);
  server->set(zmq::sockopt::linger, 0);
  server->bind("tcp://127.0.0.1:*");
  const std::string endpoint = server->get(zmq::sockopt::last_endpoint);
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  ConnectionWatch watch(context, dealer);
  ASSERT_TRUE(watch.active());
  dealer.connect(endpoint);
  // A round trip proves the connection is up; nothing is lost yet.
  dealer.send(zmq::str_buffer("ping"), zmq::send_flags::none);
  std::vector<zmq::message_t> parts;
  ASSERT_TRUE(zmq::recv_multipart(*server, std::back_inserter(parts)));
  EXPECT_FALSE(watch.Lost());

  server.reset();
  const auto deadline = WatchTestClock::now() + kWatchTestBound;
  while (!watch.Lost() && WatchTestClock::now() < deadline) {
    zmq::pollitem_t item = watch.poll_item();
    zmq::poll(&item, 1, std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(watch.Lost());
}

}  // namespace
}  // namespace gpool
