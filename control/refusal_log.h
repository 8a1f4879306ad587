// RefusalLog: at most one log line a second for a kind of refusal, the
// ones in between counted into the next line, so a flood of refused
// connections or requests (issue 48) cannot flood the log as well.
#pragma once

#include <cstdint>

namespace gpool::control {

class RefusalLog {
 public:
  // Whether this refusal gets a line; `*unlogged` is then how many before
  // it did not.
  bool Take(int64_t now_ms, uint64_t* unlogged) {
    if (logged_once_ && now_ms - last_ms_ < 1000) {
      ++unlogged_;
      return false;
    }
    logged_once_ = true;
    last_ms_ = now_ms;
    *unlogged = unlogged_;
    unlogged_ = 0;
    return true;
  }

 private:
  bool logged_once_ = false;
  int64_t last_ms_ = 0;
  uint64_t unlogged_ = 0;
};

}  // namespace gpool::control
