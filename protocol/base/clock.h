// Clock: the only way code reads time, so tests can use FakeClock and never sleep.
//
// Times are integer milliseconds. Wall time (for display and records that
// survive restarts) and monotonic time (for timeouts) are separate.
// SystemClock is thread-safe; FakeClock is thread-safe too (atomics) so a
// test thread may advance it while an actor reads it.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpool {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t WallMs() const = 0;
  // Milliseconds from an arbitrary origin; never goes backwards.
  virtual int64_t MonoMs() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t WallMs() const override;
  int64_t MonoMs() const override;
  // A process-wide instance.
  static SystemClock& Get();
};

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
