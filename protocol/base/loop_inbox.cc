#include "protocol/base/loop_inbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpool {

Result<std::unique_ptr<LoopInbox>> LoopInbox::Open() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return Status::IoError(std::string("eventfd: ") + std::strerror(errno));
  return std::unique_ptr<LoopInbox>(new LoopInbox(fd));
}

LoopInbox::~LoopInbox() {
  Close();
  ::close(fd_);
}

bool LoopInbox::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    tasks_.push_back(std::move(task));
  }
  const uint64_t one = 1;
  (void)!::write(fd_, &one, sizeof(one));
  return true;
}

void LoopInbox::RunPending() {
  uint64_t count = 0;
  (void)!::read(fd_, &count, sizeof(count));
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard lock(mu_);
    tasks.swap(tasks_);
  }
  for (auto& task : tasks) task();
}

void LoopInbox::Close() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    dropped.swap(tasks_);
  }
  // Destroying the tasks breaks their promises: their callers wake at once.
}

}  // namespace gpool
