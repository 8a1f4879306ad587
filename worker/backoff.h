// Exponential backoff with jitter for registration retries: the base delay
// starts at initial_ms and doubles up to max_ms; each returned delay is the
// base times a factor drawn uniformly from [1 - jitter, 1 + jitter], so a
// rack of workers that lost the coordinator together does not retry in step.
//
// The randomness is injected (uniform in [0, 1)) so tests are exact.
// Thread-safety: a plain value owned by one thread.
#pragma once

#include <cstdint>
#include <functional>

namespace gpool::worker {

struct BackoffOptions {
  int64_t initial_ms = 100;
  int64_t max_ms = 5000;
  double jitter = 0.2;  // +-20 %
};

class Backoff {
 public:
  Backoff(BackoffOptions options, std::function<double()> uniform01)
      : options_(options), uniform01_(std::move(uniform01)), base_ms_(options.initial_ms) {}

  // The delay before the next attempt; the one after will be twice as long
  // (up to max_ms), before jitter.
  int64_t Next();
  // Back to initial_ms (after a success).
  void Reset() { base_ms_ = options_.initial_ms; }
  int64_t base_ms() const { return base_ms_; }

 private:
  BackoffOptions options_;
  std::function<double()> uniform01_;
  int64_t base_ms_;
};

}  // namespace gpool::worker
