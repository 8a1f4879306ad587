// LoopInbox: lets another thread run work on an event loop's thread.
//
// gpool's coordinator and worker keep their state on one loop thread and
// share nothing (docs/architecture.md). The HTTP server answers on its own
// threads, so a scrape or a dashboard request posts its work here and waits:
// the loop polls fd() with its sockets, runs what was posted in its own turn
// (RunPending), and the answer goes back through a future. Nothing of the
// state is ever read off the loop thread.
//
// Call() gives up after its timeout (a loop stuck in a long fsync answers
// nothing, and the HTTP client is told so instead of hanging); Close() fails
// every waiting and later Call at once so shutdown never waits for one.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>

#include "protocol/base/status.h"

namespace gpool {

class LoopInbox {
 public:
  // Opens the eventfd the loop polls.
  static Result<std::unique_ptr<LoopInbox>> Open();
  ~LoopInbox();
  LoopInbox(const LoopInbox&) = delete;
  LoopInbox& operator=(const LoopInbox&) = delete;

  // Readable while work is posted; the loop adds it to its poll set.
  int fd() const { return fd_; }

  // Any thread: queue `task` for the loop. False once closed.
  bool Post(std::function<void()> task);
  // The loop thread: runs everything posted so far.
  void RunPending();
  // Any thread but the loop's: fails queued and later work.
  void Close();

  // Any thread but the loop's: runs `fn` on the loop and returns its result,
  // or nullopt when the loop did not run it within `timeout` or was closed.
  template <typename T>
  std::optional<T> Call(std::function<T()> fn, std::chrono::milliseconds timeout) {
    auto promise = std::make_shared<std::promise<T>>();
    std::future<T> future = promise->get_future();
    // The task owns the promise alone: dropped unrun by Close, it breaks
    // the promise and the wait below ends at once.
    if (!Post([promise = std::move(promise), fn = std::move(fn)] { promise->set_value(fn()); })) return std::nullopt;
    if (future.wait_for(timeout) != std::future_status::ready) return std::nullopt;
    try {
      return future.get();
    } catch (const std::future_error&) {
      return std::nullopt;  // dropped unrun by Close
    }
  }

 private:
  explicit LoopInbox(int fd) : fd_(fd) {}
  int fd_;
  std::mutex mu_;
  std::deque<std::function<void()>> tasks_;
  bool closed_ = false;
};

}  // namespace gpool
