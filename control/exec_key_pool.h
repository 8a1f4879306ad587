// ExecKeyPool: jobs' exec key pairs made ahead, on a thread of their own.
//
// Every submission gets a CURVE key pair (JobRecord::exec_token/exec_key,
// gateway.h): two to three Curve25519 scalar multiplications, ~150 us, and
// on the coordinator's loop thread that capped how many submissions a
// second the leader could take (issue 46). The pool keeps up to `capacity`
// pairs ready and refills once it is half empty; Take() hands one out, or
// makes one at once when the pool has run dry (a burst larger than it).
// No pair is handed out twice.
//
// Thread-safety: Take() may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>

#include "protocol/base/status.h"
#include "protocol/security/keys.h"

namespace gpool::control {

class ExecKeyPool {
 public:
  explicit ExecKeyPool(size_t capacity = 1024);
  ~ExecKeyPool();  // stops the thread; pairs not taken are dropped
  ExecKeyPool(const ExecKeyPool&) = delete;
  ExecKeyPool& operator=(const ExecKeyPool&) = delete;

  Result<security::KeyPair> Take();

  size_t ready() const;

 private:
  void Run();

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<security::KeyPair> ready_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace gpool::control
