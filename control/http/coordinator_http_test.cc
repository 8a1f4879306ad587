// The coordinator's HTTP port over a real socket on 127.0.0.1: /healthz and
// /readyz need no credential, /readyz answers what the loop thread says.
#include "control/http/coordinator_http.h"

#include <poll.h>

#include <atomic>
#include <thread>

#include <httplib.h>

#include <gtest/gtest.h>

namespace gpool::control {
namespace {

class CoordinatorHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto inbox = LoopInbox::Open();
    ASSERT_TRUE(inbox.ok()) << inbox.status().ToString();
    inbox_ = std::move(inbox).value();
  }
  void TearDown() override {
    http_.reset();
    StopLoop();
  }

  // Starts the port; every hook but readiness refuses, so a page that
  // needed a credential would fail.
  void Start(int64_t readiness_timeout_ms = 2000) {
    CoordinatorHttpHooks hooks;
    hooks.authenticate = [](const std::string&) -> Result<HttpCaller> {
      return Status::Unauthenticated("no credential in this test");
    };
    hooks.may_read_cluster = [](const HttpCaller&) { return Status::PermissionDenied("no"); };
    hooks.render_metrics = [] { return std::string("unreachable"); };
    hooks.readiness = [this] {
      ++readiness_calls_;
      EXPECT_EQ(std::this_thread::get_id(), loop_id_) << "readiness must run on the loop thread";
      return ready_;
    };
    CoordinatorHttpOptions options;
    options.server.address = "127.0.0.1:0";
    options.readiness_timeout_ms = readiness_timeout_ms;
    auto http = CoordinatorHttp::Start(options, *inbox_, std::move(hooks));
    ASSERT_TRUE(http.ok()) << http.status().ToString();
    http_ = std::move(http).value();
    const std::string& address = http_->address();
    port_ = std::stoi(address.substr(address.rfind(':') + 1));
  }

  // A loop that polls the inbox's fd as the coordinator's loop does.
  void StartLoop() {
    loop_ = std::thread([this] {
      while (!stop_.load()) {
        pollfd item{inbox_->fd(), POLLIN, 0};
        if (::poll(&item, 1, 5) > 0) inbox_->RunPending();
      }
    });
    loop_id_ = loop_.get_id();
  }
  void StopLoop() {
    stop_.store(true);
    if (loop_.joinable()) loop_.join();
  }

  httplib::Result Get(const std::string& path) {
    httplib::Client client("127.0.0.1", port_);
    return client.Get(path);
  }

  std::unique_ptr<LoopInbox> inbox_;
  std::unique_ptr<CoordinatorHttp> http_;
  std::thread loop_;
  std::thread::id loop_id_;
  std::atomic<bool> stop_{false};
  Status ready_ = Status::Ok();  // written only while no request is in flight
  std::atomic<int> readiness_calls_{0};
  int port_ = 0;
};

TEST_F(CoordinatorHttpTest, ReadyzAnswersTheLoopsVerdictWithoutACredential) {
  Start();
  StartLoop();
  auto ready = Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, "ready\n");

  ready_ = Status::Unavailable("knows no leader (role candidate: an election, or quorum lost)");
  auto not_ready = Get("/readyz");
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_EQ(not_ready->body, "not ready: knows no leader (role candidate: an election, or quorum lost)\n");
  EXPECT_EQ(readiness_calls_.load(), 2);

  // The same port's /metrics still wants a credential.
  auto metrics = Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 401);
}

TEST_F(CoordinatorHttpTest, ALoopThatDoesNotAnswerIsNotReadyButStillHealthy) {
  Start(/*readiness_timeout_ms=*/100);  // and no loop thread
  auto ready = Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "not ready: the coordinator's loop did not answer within 100 ms\n");
  auto health = Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  EXPECT_EQ(readiness_calls_.load(), 0);
  // TearDown closes the port before the inbox goes; the posted check is
  // dropped unrun.
}

}  // namespace
}  // namespace gpool::control
