// Clock: the only way code reads time, so tests can use FakeClock
// (testing/fake_clock.h) and never sleep.
//
// Times are integer milliseconds. Wall time (for display and records that
// survive restarts) and monotonic time (for timeouts) are separate.
// SystemClock is thread-safe.
#pragma once

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

}  // namespace gpool
