// FakeClock: a Clock that moves only when a test calls Advance, so tests
// and benches never sleep. Test code only: product binaries read time from
// SystemClock (clock.h).
//
// Thread-safe (atomics): a test thread may advance it while an actor reads it.
#pragma once

#include <atomic>
#include <cstdint>

#include "protocol/base/clock.h"

namespace gpool {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ms = 1'700'000'000'000) : wall_(start_ms), mono_(0) {}
  int64_t WallMs() const override { return wall_.load(); }
  int64_t MonoMs() const override { return mono_.load(); }
  void Advance(int64_t ms) {
    wall_ += ms;
    mono_ += ms;
  }

 private:
  std::atomic<int64_t> wall_;
  std::atomic<int64_t> mono_;
};

}  // namespace gpool
