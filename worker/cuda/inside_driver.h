// Marks the calls a hook makes into the real driver, per thread, so that a
// driver which calls its own exported entry points by name (bound through
// the global scope, where a program linked with -lcuda has put the
// interposer) does not have them governed a second time: an allocation
// counted twice, a launch measured twice. Inside the mark, every hook only
// forwards.
#pragma once

namespace gpool::cuda {

inline thread_local bool t_inside_driver = false;

class InsideDriver {
 public:
  InsideDriver() : outer_(t_inside_driver) { t_inside_driver = true; }
  ~InsideDriver() { t_inside_driver = outer_; }
  InsideDriver(const InsideDriver&) = delete;
  InsideDriver& operator=(const InsideDriver&) = delete;

  // Whether this thread is already inside a hook's call to the driver.
  static bool Now() { return t_inside_driver; }

 private:
  bool outer_;
};

// Calls `call` (a call into the real driver) inside the mark.
template <typename Call>
auto CallDriver(Call&& call) {
  InsideDriver inside;
  return call();
}

}  // namespace gpool::cuda
