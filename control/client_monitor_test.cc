// ClientMonitor over a real ROUTER on 127.0.0.1: each message's ZMQ_SRCFD
// names a connection the monitor saw open, a connection's close reaches the
// ledger and names the peer that spoke on it, and the slot it held frees.
#include "control/client_monitor.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "control/frame_intake.h"

namespace gpool::control {
namespace {

class ClientMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto monitor = ClientMonitor::Start(context_, router_, /*max_per_key=*/2);
    ASSERT_TRUE(monitor.ok()) << monitor.status().ToString();
    monitor_ = std::move(monitor).value();
    router_.bind("tcp://127.0.0.1:*");
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
  }

  std::unique_ptr<zmq::socket_t> Connect() {
    auto dealer = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
    dealer->set(zmq::sockopt::linger, 0);
    dealer->connect(endpoint_);
    return dealer;
  }

  // Reads events and messages until `done` holds or 5 s pass; each message
  // is admitted as key "K" and its verdict kept.
  bool PumpUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::vector<zmq::pollitem_t> items = {{monitor_->events().handle(), 0, ZMQ_POLLIN, 0},
                                            {router_.handle(), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
      monitor_->Drain([this](const std::string& peer) { closed_.push_back(peer); });
      DrainRouter(
          router_, 100,
          [this](const std::string& peer, std::string_view, const Principal&, int fd) {
            verdicts_.push_back(monitor_->Admit(fd, peer, "K", [] { return false; }, 0,
                                                [this](const std::string& closed) { closed_.push_back(closed); }));
          },
          [](const std::string&, const Status&) {});
    }
    return true;
  }

  zmq::context_t context_{1};
  zmq::socket_t router_{context_, zmq::socket_type::router};
  std::unique_ptr<ClientMonitor> monitor_;
  std::string endpoint_;
  std::vector<Status> verdicts_;
  std::vector<std::string> closed_;
};

TEST_F(ClientMonitorTest, ConnectionsCountFromTheirFirstMessageAndFreeTheirSlotOnClose) {
  auto first = Connect();
  auto second = Connect();
  auto third = Connect();
  for (auto* dealer : {first.get(), second.get()}) dealer->send(zmq::str_buffer("hi"), zmq::send_flags::none);
  ASSERT_TRUE(PumpUntil([&] { return verdicts_.size() == 2; }));
  EXPECT_TRUE(verdicts_[0].ok() && verdicts_[1].ok());
  EXPECT_EQ(monitor_->ledger().held("K"), 2u);
  third->send(zmq::str_buffer("hi"), zmq::send_flags::none);
  ASSERT_TRUE(PumpUntil([&] { return verdicts_.size() == 3; }));
  EXPECT_EQ(verdicts_[2].code(), StatusCode::kResourceExhausted) << verdicts_[2].ToString();

  first->close();
  ASSERT_TRUE(PumpUntil([&] { return closed_.size() == 1; }));
  EXPECT_EQ(monitor_->ledger().held("K"), 1u);
  third->send(zmq::str_buffer("again"), zmq::send_flags::none);
  ASSERT_TRUE(PumpUntil([&] { return verdicts_.size() == 4; }));
  EXPECT_TRUE(verdicts_[3].ok()) << verdicts_[3].ToString();
  EXPECT_EQ(monitor_->ledger().held("K"), 2u);
}

}  // namespace
}  // namespace gpool::control
