#include "worker/runner/testing/fake_process_launcher.h"

#include <csignal>

namespace gpool::worker {

Result<int64_t> FakeProcessLauncher::Launch(const LaunchRequest& request) {
  if (!fail_next_.ok()) {
    Status status = std::move(fail_next_);
    fail_next_ = Status::Ok();
    return status;
  }
  const int64_t pid = next_pid_++;
  running_.insert(pid);
  launched_.push_back({pid, request});
  return pid;
}

Status FakeProcessLauncher::Signal(int64_t pid, int signal) {
  signals_.emplace_back(pid, signal);
  if (!running_.count(pid)) return Status::NotFound("pid " + std::to_string(pid) + " is not running");
  if (signal == SIGKILL || !ignored_.count(signal)) {
    running_.erase(pid);
    pending_exits_.push_back({pid, 128 + signal, signal});
  }
  return Status::Ok();
}

std::vector<ExitInfo> FakeProcessLauncher::Reap() { return std::exchange(pending_exits_, {}); }

Result<AdoptedProcess> FakeProcessLauncher::Adopt(const std::string& state_dir) {
  adopted_.push_back(state_dir);
  auto it = adoptable_.find(state_dir);
  if (it == adoptable_.end()) {
    AdoptedProcess lost;
    lost.exit.exit_code = 255;
    lost.exit.reason = "lost with its supervisor: no supervisor left a trace";
    return lost;
  }
  if (it->second.running) running_.insert(it->second.pid);
  return it->second;
}

void FakeProcessLauncher::ExitWithReason(int64_t pid, int32_t exit_code, int32_t signal, std::string reason) {
  if (running_.erase(pid)) pending_exits_.push_back({pid, exit_code, signal, std::move(reason)});
}

void FakeProcessLauncher::Exit(int64_t pid, int32_t exit_code) {
  if (running_.erase(pid)) pending_exits_.push_back({pid, exit_code, 0});
}

}  // namespace gpool::worker
