#include "protocol/base/clock.h"

#include <chrono>

namespace gpool {

int64_t SystemClock::WallMs() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t SystemClock::MonoMs() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

SystemClock& SystemClock::Get() {
  static SystemClock clock;
  return clock;
}

}  // namespace gpool
