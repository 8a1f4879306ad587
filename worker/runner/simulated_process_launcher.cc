#include "worker/runner/simulated_process_launcher.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "protocol/base/text.h"

namespace gpool::worker {
namespace {

std::vector<std::string> SplitWords(const std::string& script) {
  std::vector<std::string> words;
  std::istringstream in(script);
  for (std::string word; in >> word;) {
    // The first command of a script: stop at a separator.
    if (word == ";" || word == "&&" || word == "||" || word == "|") break;
    const size_t cut = word.find_first_of(";&|");
    if (cut != std::string::npos) {
      if (cut > 0) words.push_back(word.substr(0, cut));
      break;
    }
    words.push_back(word);
  }
  return words;
}

}  // namespace

SimulatedRun SimulateCommand(const std::vector<std::string>& argv) {
  std::vector<std::string> words = argv;
  if (words.size() >= 3 && (words[0] == "sh" || words[0] == "bash" || words[0] == "/bin/sh" ||
                            words[0] == "/bin/bash") && words[1] == "-c") {
    words = SplitWords(words[2]);
  }
  SimulatedRun run;
  if (words.empty()) return run;
  const std::string& program = words[0];
  if (program == "false") {
    run.exit_code = 1;
  } else if (program == "exit" && words.size() >= 2) {
    run.exit_code = static_cast<int32_t>(std::strtol(words[1].c_str(), nullptr, 10) & 0xff);
  } else if ((program == "sleep" || program == "/bin/sleep" || program == "/usr/bin/sleep") && words.size() >= 2) {
    if (words[1] == "infinity" || words[1] == "inf") {
      run.run_ms.reset();
      return run;
    }
    errno = 0;
    char* end = nullptr;
    const double seconds = std::strtod(words[1].c_str(), &end);
    // A malformed duration fails at once, as sleep(1) would.
    if (errno != 0 || end == words[1].c_str() || *end != '\0' || !std::isfinite(seconds) || seconds < 0) {
      run.exit_code = 1;
    } else {
      run.run_ms = static_cast<int64_t>(std::min(seconds, 1e9) * 1000.0);
    }
  }
  return run;
}

Result<int64_t> SimulatedProcessLauncher::Launch(const LaunchRequest& request) {
  if (request.argv.empty()) return Status::InvalidArgument("empty command");
  {
    errno = 0;
    std::ofstream log(request.log_path, std::ios::app);
    // The reason too: a full tmpfs (ENOSPC) and a missing directory call for different fixes.
    if (!log) {
      return Status::IoError("cannot open the task log " + request.log_path +
                             (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()));
    }
    log << "gpool-worker: simulated node, no program runs; simulating: " << JoinWords(request.argv) << "\n";
  }
  const SimulatedRun run = SimulateCommand(request.argv);
  const int64_t pid = next_pid_++;
  Running& task = running_[pid];
  task.exit_code = run.exit_code;
  if (run.run_ms) {
    task.exit_at_ms = clock_->MonoMs() + *run.run_ms;
    exits_by_time_.emplace(*task.exit_at_ms, pid);
  }
  return pid;
}

Status SimulatedProcessLauncher::Signal(int64_t pid, int signal) {
  auto it = running_.find(pid);
  if (it == running_.end()) return Status::NotFound("pid " + std::to_string(pid) + " is not running");
  if (signal == 0) return Status::Ok();
  if (it->second.exit_at_ms) {
    auto [first, last] = exits_by_time_.equal_range(*it->second.exit_at_ms);
    for (auto at = first; at != last; ++at) {
      if (at->second == pid) {
        exits_by_time_.erase(at);
        break;
      }
    }
  }
  running_.erase(it);
  signalled_.push_back({pid, 128 + signal, signal});
  return Status::Ok();
}

int64_t SimulatedProcessLauncher::NextExitMs(int64_t now_ms) const {
  if (!signalled_.empty()) return now_ms;
  return exits_by_time_.empty() ? INT64_MAX : exits_by_time_.begin()->first;
}

std::vector<ExitInfo> SimulatedProcessLauncher::Reap() {
  std::vector<ExitInfo> exits = std::exchange(signalled_, {});
  const int64_t now = clock_->MonoMs();
  while (!exits_by_time_.empty() && exits_by_time_.begin()->first <= now) {
    const int64_t pid = exits_by_time_.begin()->second;
    exits_by_time_.erase(exits_by_time_.begin());
    auto it = running_.find(pid);
    if (it == running_.end()) continue;
    exits.push_back({pid, it->second.exit_code, 0});
    running_.erase(it);
  }
  return exits;
}

}  // namespace gpool::worker
