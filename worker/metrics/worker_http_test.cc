// The worker's HTTP port over a real socket on 127.0.0.1: /readyz says
// whether the node is registered, with no credential even where /metrics
// needs the scrape token.
#include "worker/metrics/worker_http.h"

#include <poll.h>

#include <atomic>
#include <thread>

#include <httplib.h>

#include <gtest/gtest.h>

namespace gpool::worker {
namespace {

class WorkerHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto inbox = LoopInbox::Open();
    ASSERT_TRUE(inbox.ok()) << inbox.status().ToString();
    inbox_ = std::move(inbox).value();
  }
  void TearDown() override {
    http_.reset();
    stop_.store(true);
    if (loop_.joinable()) loop_.join();
  }

  void Start(bool with_loop, int64_t readiness_timeout_ms = 2000) {
    WorkerHttpOptions options;
    options.address = "127.0.0.1:0";
    options.token = "scrape-token";
    options.readiness_timeout_ms = readiness_timeout_ms;
    auto render = [] { return std::string("gpool_worker_registered 1\n"); };
    auto ready = [this]() -> Status {
      if (registered_.load()) return Status::Ok();
      return Status::Unavailable("not registered with a coordinator (trying tcp://127.0.0.1:7401)");
    };
    auto http = WorkerHttp::Start(options, *inbox_, render, ready);
    ASSERT_TRUE(http.ok()) << http.status().ToString();
    http_ = std::move(http).value();
    const std::string& address = http_->address();
    port_ = std::stoi(address.substr(address.rfind(':') + 1));
    if (!with_loop) return;
    loop_ = std::thread([this] {
      while (!stop_.load()) {
        pollfd item{inbox_->fd(), POLLIN, 0};
        if (::poll(&item, 1, 5) > 0) inbox_->RunPending();
      }
    });
  }

  httplib::Result Get(const std::string& path) {
    httplib::Client client("127.0.0.1", port_);
    return client.Get(path);
  }

  std::unique_ptr<LoopInbox> inbox_;
  std::unique_ptr<WorkerHttp> http_;
  std::thread loop_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> registered_{false};
  int port_ = 0;
};

TEST_F(WorkerHttpTest, ReadyzFollowsRegistrationWithoutTheScrapeToken) {
  Start(/*with_loop=*/true);
  auto before = Get("/readyz");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 503);
  EXPECT_EQ(before->body, "not ready: not registered with a coordinator (trying tcp://127.0.0.1:7401)\n");

  registered_.store(true);
  auto after = Get("/readyz");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(after->body, "ready\n");

  auto health = Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // /metrics on the same port still wants the token.
  auto metrics = Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 401);
}

TEST_F(WorkerHttpTest, ALoopThatDoesNotAnswerIsNotReady) {
  registered_.store(true);
  Start(/*with_loop=*/false, /*readiness_timeout_ms=*/100);
  auto ready = Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "not ready: the worker's loop did not answer within 100 ms\n");
}

}  // namespace
}  // namespace gpool::worker
