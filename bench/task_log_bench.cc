// gpool-bench-task-logs: the worker's log retention (worker/runner/
// task_log_janitor.h) over a directory of task logs as a node that ran short
// tasks for weeks leaves it: `logs` ended tasks' logs, one a second apart,
// of which the newest `keep` stay (--task-logs-max).
//
//   task_logs_pass_ms        one whole pass, every entry read and every log
//                            past the limit removed (params: steps, removed)
//   task_logs_step_max_ms    the longest step: the most a pass holds the
//                            worker's loop in one turn
//   task_logs_step_p99_ms    the same, p99 over the pass's steps
// Baseline in the same run, on the same directory rebuilt:
//   baseline_list_and_unlink_ms  the directory listed (lstat of each entry)
//                            and the same files unlinked in one go: the
//                            floor for the whole pass's work
//
// Prints JSON lines {"metric", "value", "unit", "params"}.
// Usage: gpool-bench-task-logs [logs=100000] [keep=10000] [dir=/tmp]
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "protocol/base/clock.h"
#include "worker/runner/task_log_janitor.h"

namespace {

using Steady = std::chrono::steady_clock;

double MsSince(Steady::time_point start) {
  return std::chrono::duration<double, std::milli>(Steady::now() - start).count();
}

std::string LogName(uint64_t job) { return std::to_string(job) + ".0.0.log"; }

// `logs` logs of 64 bytes, job i last written logs - i seconds ago.
bool Fill(const std::string& dir, uint64_t logs) {
  const std::string line(63, 'x');
  const int64_t now_s = gpool::SystemClock::Get().WallMs() / 1000;
  for (uint64_t job = 1; job <= logs; ++job) {
    const std::string path = dir + "/" + LogName(job);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::write(fd, (line + "\n").data(), 64) != 64) return false;
    struct timespec times[2];
    times[0].tv_sec = times[1].tv_sec = now_s - static_cast<int64_t>(logs - job);
    times[0].tv_nsec = times[1].tv_nsec = 0;
    ::futimens(fd, times);
    ::close(fd);
  }
  return true;
}

void Print(const char* metric, double value, const char* unit, uint64_t logs, uint64_t keep, const std::string& extra) {
  std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"params\": {\"logs\": %llu, \"keep\": %llu%s}}\n",
              metric, value, unit, static_cast<unsigned long long>(logs), static_cast<unsigned long long>(keep),
              extra.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t logs = argc > 1 ? std::stoull(argv[1]) : 100'000;
  const uint64_t keep = argc > 2 ? std::stoull(argv[2]) : 10'000;
  std::string root = argc > 3 ? argv[3] : "/tmp";
  if (keep >= logs) {
    std::fprintf(stderr, "keep (%llu) must be below logs (%llu)\n", static_cast<unsigned long long>(keep),
                 static_cast<unsigned long long>(logs));
    return 2;
  }
  std::string tmpl = root + "/gpool-bench-task-logs-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  int rc = 0;
  if (!Fill(dir, logs)) {
    std::perror("writing the logs");
    rc = 1;
  } else {
    gpool::worker::TaskLogRetention retention;
    retention.max_logs = keep;  // the week's age limit removes none of these
    // Its log line would break the JSON lines on stdout.
    auto quiet = std::make_shared<spdlog::logger>("task-logs", std::make_shared<spdlog::sinks::null_sink_mt>());
    gpool::worker::TaskLogJanitor janitor(dir, retention, &gpool::SystemClock::Get(), quiet);
    const auto live = [](const gpool::TaskId&) { return false; };
    std::vector<double> steps;
    const auto pass_start = Steady::now();
    do {
      const auto step_start = Steady::now();
      janitor.Step(live);
      steps.push_back(MsSince(step_start));
    } while (janitor.pass_in_progress());
    const double pass_ms = MsSince(pass_start);
    const uint64_t removed = janitor.totals().removed_logs;
    std::vector<double> sorted = steps;
    std::sort(sorted.begin(), sorted.end());
    const double p99 = sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
    const std::string extra = ", \"steps\": " + std::to_string(steps.size()) + ", \"removed\": " +
                              std::to_string(removed) + ", \"kept\": " + std::to_string(janitor.totals().kept_logs);
    Print("task_logs_pass_ms", pass_ms, "ms", logs, keep, extra);
    Print("task_logs_step_max_ms", sorted.back(), "ms", logs, keep, extra);
    Print("task_logs_step_p99_ms", p99, "ms", logs, keep, extra);
    if (removed != logs - keep) rc = 1;  // the pass must have removed exactly the oldest

    // The floor: the same directory listed and the same files unlinked.
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    if (!Fill(dir, logs)) return 1;
    const auto floor_start = Steady::now();
    if (DIR* d = ::opendir(dir.c_str())) {
      while (struct dirent* entry = ::readdir(d)) {
        struct stat st {};
        ::lstat((dir + "/" + entry->d_name).c_str(), &st);
      }
      ::closedir(d);
    }
    for (uint64_t job = 1; job <= logs - keep; ++job) ::unlink((dir + "/" + LogName(job)).c_str());
    Print("baseline_list_and_unlink_ms", MsSince(floor_start), "ms", logs, keep, "");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rc;
}
