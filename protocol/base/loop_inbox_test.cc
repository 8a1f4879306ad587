#include "protocol/base/loop_inbox.h"

#include <poll.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace gpool {
namespace {

// A loop that polls the inbox's fd the way the coordinator's loop does.
void LoopUntil(LoopInbox& inbox, const std::atomic<bool>& stop) {
  while (!stop.load()) {
    pollfd item{inbox.fd(), POLLIN, 0};
    if (::poll(&item, 1, 5) > 0) inbox.RunPending();
  }
}

TEST(LoopInboxTest, CallRunsOnTheLoopThreadAndReturnsItsResult) {
  auto inbox = LoopInbox::Open();
  ASSERT_TRUE(inbox.ok());
  std::atomic<bool> stop{false};
  std::thread::id loop_id;
  std::thread loop([&] {
    loop_id = std::this_thread::get_id();
    LoopUntil(**inbox, stop);
  });
  std::thread::id ran_on;
  auto result = (*inbox)->Call<int>([&] {
    ran_on = std::this_thread::get_id();
    return 42;
  }, std::chrono::seconds(10));
  stop = true;
  loop.join();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, 42);
  EXPECT_EQ(ran_on, loop_id);
}

TEST(LoopInboxTest, CallGivesUpWhenTheLoopDoesNotRunIt) {
  auto inbox = LoopInbox::Open();
  ASSERT_TRUE(inbox.ok());
  // No loop: the call must come back after its timeout, not hang.
  auto result = (*inbox)->Call<int>([] { return 1; }, std::chrono::milliseconds(20));
  EXPECT_FALSE(result.has_value());
}

TEST(LoopInboxTest, CloseWakesAWaitingCallAndRefusesLaterOnes) {
  auto inbox = LoopInbox::Open();
  ASSERT_TRUE(inbox.ok());
  std::optional<int> result = 7;
  std::thread caller([&] { result = (*inbox)->Call<int>([] { return 1; }, std::chrono::seconds(60)); });
  // Close once the call is queued (readable fd), then the caller must return
  // long before its 60 s timeout.
  pollfd item{(*inbox)->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&item, 1, 10'000), 1);
  (*inbox)->Close();
  caller.join();
  EXPECT_FALSE(result.has_value());
  EXPECT_FALSE((*inbox)->Post([] {}));
}

}  // namespace
}  // namespace gpool
