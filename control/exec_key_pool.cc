#include "control/exec_key_pool.h"

#include <utility>

namespace gpool::control {

ExecKeyPool::ExecKeyPool(size_t capacity) : capacity_(capacity), thread_([this] { Run(); }) {}

ExecKeyPool::~ExecKeyPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Result<security::KeyPair> ExecKeyPool::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_.empty()) {
      security::KeyPair pair = std::move(ready_.front());
      ready_.pop_front();
      if (ready_.size() <= capacity_ / 2) wake_.notify_one();
      return pair;
    }
    wake_.notify_one();
  }
  return security::GenerateKeyPair();  // run dry: made here, as without a pool
}

size_t ExecKeyPool::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size();
}

void ExecKeyPool::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || ready_.size() <= capacity_ / 2; });
    if (stopping_) return;
    while (!stopping_ && ready_.size() < capacity_) {
      lock.unlock();
      auto pair = security::GenerateKeyPair();
      lock.lock();
      if (!pair.ok()) return;  // no CURVE in this libzmq: Take() answers the same error itself
      ready_.push_back(std::move(pair).value());
    }
  }
}

}  // namespace gpool::control
