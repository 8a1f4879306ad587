// ApplyBatchTimer: what one batch of committed entries cost the loop, per
// command name, for the slow-batch log of ApplyPipeline (issue 49: the
// slow-turn log says "apply" and no more, and a 632 ms batch at 10,000 GPUs
// caused an election; this says which command it was).
//
// Thread-safety: none; one batch on the loop thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace gpool::control {

// A batch that held the loop this long is logged.
inline constexpr int64_t kSlowApplyBatchUs = 100'000;

class ApplyBatchTimer {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  static TimePoint Now() { return std::chrono::steady_clock::now(); }

  // One entry of command `name` ("" : it did not decode) applied since `start`.
  void Time(std::string_view name, TimePoint start) {
    Add(name, std::chrono::duration_cast<std::chrono::microseconds>(Now() - start).count());
  }
  void Add(std::string_view name, int64_t us) {
    total_us_ += us;
    ++entries_;
    Spent& spent = by_name_[name.empty() ? std::string_view("undecodable") : name];
    ++spent.count;
    spent.sum_us += us;
    spent.max_us = std::max(spent.max_us, us);
  }

  int64_t total_us() const { return total_us_; }
  uint64_t entries() const { return entries_; }
  // "Name:COUNTxMSms(max MS)" per command, by name.
  std::string Summary() const {
    std::string out;
    for (const auto& [name, spent] : by_name_) {
      // Appended, not `"" + string`: GCC 12 -O2 warns falsely inside that
      // operator+ (bug 105651: -Wstringop-overflow, else -Warray-bounds).
      if (!out.empty()) out += ' ';
      out.append(name).append(":").append(std::to_string(spent.count)).append("x");
      out.append(std::to_string(spent.sum_us / 1000)).append("ms(max ");
      out.append(std::to_string(spent.max_us / 1000)).append(")");
    }
    return out;
  }

 private:
  struct Spent {
    uint64_t count = 0;
    int64_t sum_us = 0;
    int64_t max_us = 0;
  };
  int64_t total_us_ = 0;
  uint64_t entries_ = 0;
  std::map<std::string_view, Spent> by_name_;  // names are CommandName's static strings
};

}  // namespace gpool::control
