// gpool-bench-retention: the coordinator's state-machine memory and restart
// time after a month of finished jobs, with the retention defaults
// (control/state/retention.h) and, as the baseline in the same run, without
// retention.
//
// Each run drives a ClusterState in-process with the commands a coordinator
// would commit for it: a 10,000-GPU cluster (1,250 nodes of 8 GPUs), then
// `--jobs` one-task, one-GPU jobs submitted evenly over `--days`, each bound
// at once and running 10 minutes to 2 hours (Submit, ApplyPlan, started,
// exited). With retention, the leader's check runs every `--check-every-ms`
// of simulated time and commits a ForgetJobsCmd when anything is past the
// policy, as RetentionDriver does. A snapshot is taken every 10,000 entries
// (--snapshot-every's default) and the entries after the last one are kept,
// as the log would keep them.
//
// Each run is a child process, so its VmRSS and VmHWM are its own; at the end
// it writes its last snapshot and the log tail to a file, and a fresh child
// measures the restart: Restore the snapshot, decode and apply the tail (what
// Coordinator::Recover does), its time and the memory it ends with.
//
// What is not measured: sockets, LevelDB's caches and the log entries on
// disk (they are compacted at each snapshot), and the scheduler's view (empty
// once nothing is pending). The baseline keeps every job; at 1,000,000 jobs
// it would need several GB, so it runs `--baseline-jobs` (default 200,000)
// and reports bytes per finished job; its params say so.
//
//   gpool-bench-retention [--jobs 1000000] [--days 30] [--baseline-jobs 200000]
//                         [--check-every-ms 600000] [--budget-mib 512]
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_jobs.h"
#include "control/state/cluster_state.h"
#include "control/state/commands.h"
#include "protocol/model/task_report.h"
#include "protocol/wire.h"

using gpool::bench::TrainingJob;

namespace {

using gpool::JobId;
using gpool::JobSpec;
using gpool::TaskGroupSpec;
namespace state = gpool::state;

constexpr uint32_t kNodes = 1'250;
constexpr uint32_t kGpusPerNode = 8;
constexpr uint64_t kSnapshotEvery = 10'000;

struct Options {
  uint64_t jobs = 1'000'000;
  uint64_t baseline_jobs = 200'000;
  int64_t days = 30;
  int64_t check_every_ms = 600'000;
  uint64_t budget_mib = 512;
};

size_t StatusKib(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  size_t kib = 0;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, field, n) == 0 && std::sscanf(line + n, " %zu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib;
}
size_t RssBytes() {
  malloc_trim(0);  // what the process holds, not what malloc keeps for later
  return StatusKib("VmRSS:") * 1024;
}
size_t HwmBytes() { return StatusKib("VmHWM:") * 1024; }

// The state machine and its log, as a coordinator keeps them.
class Replica {
 public:
  void Apply(int64_t time_ms, state::CommandBody body) {
    state::Command command{time_ms, std::move(body)};
    tail_.push_back(state::EncodeCommand(command));
    state_.Apply(++index_, command);
    if (index_ % kSnapshotEvery == 0) {
      snapshot_ = state_.Snapshot();
      tail_.clear();
    }
  }
  const state::ClusterState& state() const { return state_; }
  const std::string& snapshot() const { return snapshot_; }
  const std::vector<std::string>& tail() const { return tail_; }
  // Once written out: a coordinator keeps neither in memory (the snapshot
  // and the log are on disk).
  void DropLog() {
    snapshot_ = {};
    tail_ = {};
  }

 private:
  state::ClusterState state_;
  uint64_t index_ = 0;
  std::string snapshot_;
  std::vector<std::string> tail_;
};

struct MonthResult {
  size_t rss = 0;
  size_t hwm = 0;
  size_t jobs_live = 0;
  uint64_t jobs_forgotten = 0;
  size_t snapshot_bytes = 0;
  size_t tail_entries = 0;
  double seconds = 0;
};

// Runs the month and writes the last snapshot and log tail to `restart_file`.
MonthResult RunMonth(uint64_t jobs, const Options& options, bool retention, const std::string& restart_file) {
  const auto wall_start = std::chrono::steady_clock::now();
  const state::RetentionPolicy policy;  // the defaults
  Replica replica;
  for (uint32_t n = 0; n < kNodes; ++n) {
    gpool::NodeSpec node;
    node.name = "node-" + std::to_string(n);
    node.cpu_milli = 128'000;
    node.memory_mib = 1'024 * 1'024;
    for (uint32_t g = 0; g < kGpusPerNode; ++g) {
      node.gpus.push_back(gpool::GpuInfo{.index = g, .uuid = node.name + "-gpu-" + std::to_string(g), .model = "H100"});
    }
    replica.Apply(0, state::RegisterNodeCmd{node, {}, {}});
  }
  const int64_t month_ms = options.days * 24 * 3600 * 1000;
  const int64_t gap_ms = jobs == 0 ? 0 : month_ms / static_cast<int64_t>(jobs);
  // (exit time, job) of running jobs, earliest first.
  using Exit = std::pair<int64_t, uint64_t>;
  std::priority_queue<Exit, std::vector<Exit>, std::greater<>> running;
  std::vector<std::string> node_of(jobs + 1);
  int64_t next_check = options.check_every_ms;
  auto end_job = [&](const Exit& exit) {
    gpool::TaskEvent event;
    event.node = node_of[exit.second];
    event.task = gpool::TaskId{JobId(exit.second), 0, 0};
    event.kind = gpool::TaskEventKind::kExited;
    event.pid = 1000;
    replica.Apply(exit.first, state::TaskEventCmd{event});
    node_of[exit.second].clear();
  };
  auto settle_until = [&](int64_t now) {
    while (!running.empty() && running.top().first <= now) {
      const Exit exit = running.top();
      running.pop();
      // The leader looks at its own pace, between commits.
      while (retention && next_check <= exit.first) {
        if (replica.state().AnyForgettable(next_check - policy.keep_ms, policy.keep_jobs)) {
          replica.Apply(next_check, state::ForgetJobsCmd{next_check - policy.keep_ms, policy.keep_jobs});
        }
        next_check += options.check_every_ms;
      }
      end_job(exit);
    }
  };
  for (uint64_t i = 0; i < jobs; ++i) {
    const int64_t now = static_cast<int64_t>(i) * gap_ms;
    settle_until(now);
    const uint64_t id = i + 1;  // ids are handed out in order from 1
    replica.Apply(now, state::SubmitJobCmd{TrainingJob(i), "key-" + std::to_string(i)});
    // Slot i mod 10,000: reused every 10,000 jobs (over 7 hours at the
    // month's pace), long after its last job's 2 hours at most.
    const uint32_t slot = static_cast<uint32_t>(i % (kNodes * kGpusPerNode));
    node_of[id] = "node-" + std::to_string(slot / kGpusPerNode);
    state::ApplyPlanCmd plan;
    plan.binds.push_back(state::PlanBind{JobId(id), 0, node_of[id], {slot % kGpusPerNode}, 4'000, 32'768});
    replica.Apply(now, std::move(plan));
    gpool::TaskEvent started;
    started.node = node_of[id];
    started.task = gpool::TaskId{JobId(id), 0, 0};
    started.kind = gpool::TaskEventKind::kStarted;
    started.pid = 1000;
    replica.Apply(now, state::TaskEventCmd{started});
    const int64_t run_ms = 600'000 + static_cast<int64_t>((i * 7'919) % 6'600'000);
    running.emplace(now + run_ms, id);
  }
  settle_until(INT64_MAX);

  MonthResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  node_of = {};
  running = {};
  result.jobs_live = replica.state().jobs().size();
  result.jobs_forgotten = replica.state().forgotten_count();
  result.snapshot_bytes = replica.snapshot().size();
  result.tail_entries = replica.tail().size();
  {
    std::ofstream out(restart_file, std::ios::binary | std::ios::trunc);
    auto put = [&](const std::string& bytes) {
      const uint64_t size = bytes.size();
      out.write(reinterpret_cast<const char*>(&size), sizeof(size));
      out.write(bytes.data(), static_cast<std::streamsize>(size));
    };
    put(replica.snapshot());
    for (const auto& entry : replica.tail()) put(entry);
  }
  replica.DropLog();
  result.rss = RssBytes();
  result.hwm = HwmBytes();
  return result;
}

struct RestartResult {
  double ms = 0;
  size_t rss = 0;
  size_t hwm = 0;
  size_t jobs = 0;
  bool ok = false;
};

// Coordinator::Recover, from the file RunMonth wrote.
RestartResult Restart(const std::string& restart_file) {
  std::ifstream in(restart_file, std::ios::binary);
  std::vector<std::string> records;
  uint64_t size = 0;
  while (in.read(reinterpret_cast<char*>(&size), sizeof(size))) {
    std::string bytes(size, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    records.push_back(std::move(bytes));
  }
  RestartResult result;
  if (records.empty()) return result;
  const auto start = std::chrono::steady_clock::now();
  state::ClusterState restored;
  if (!restored.Restore(records[0]).ok()) return result;
  uint64_t index = restored.applied_index();
  for (size_t i = 1; i < records.size(); ++i) {
    auto command = state::DecodeCommand(records[i]);
    if (!command.ok()) return result;
    restored.Apply(++index, *command);
  }
  result.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  records = {};
  result.jobs = restored.jobs().size();
  result.rss = RssBytes();
  result.hwm = HwmBytes();
  result.ok = true;
  return result;
}

// Runs `fn` in a child process and returns what it wrote to the pipe.
template <typename T, typename F>
T InChild(F&& fn) {
  int fds[2];
  T out{};
  if (pipe(fds) != 0) return out;
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const T value = fn();
    (void)!write(fds[1], &value, sizeof(value));
    _exit(0);
  }
  close(fds[1]);
  (void)!read(fds[0], &out, sizeof(out));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return out;
}

void Print(const char* metric, double value, const char* unit, const std::string& params) {
  std::printf("{\"metric\": \"%s\", \"value\": %.0f, \"unit\": \"%s\", \"params\": {%s}}\n", metric, value, unit,
              params.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const uint64_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--jobs") options.jobs = value;
    else if (flag == "--baseline-jobs") options.baseline_jobs = value;
    else if (flag == "--days") options.days = static_cast<int64_t>(value);
    else if (flag == "--check-every-ms") options.check_every_ms = static_cast<int64_t>(value);
    else if (flag == "--budget-mib") options.budget_mib = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const state::RetentionPolicy policy;
  const size_t empty_rss = InChild<size_t>([] { return RssBytes(); });
  const std::string file = "/tmp/gpool-bench-retention-" + std::to_string(getpid());
  // The cluster alone (nodes, queues), for what each job adds.
  const size_t nodes_rss = InChild<MonthResult>([&] { return RunMonth(0, options, false, file); }).rss;

  struct Run {
    const char* name;
    uint64_t jobs;
    bool retention;
  };
  double baseline_per_job = 0;
  for (const Run& run : {Run{"retention", options.jobs, true}, Run{"baseline", options.baseline_jobs, false}}) {
    const MonthResult month =
        InChild<MonthResult>([&] { return RunMonth(run.jobs, options, run.retention, file); });
    const RestartResult restart = InChild<RestartResult>([&] { return Restart(file); });
    std::remove(file.c_str());
    char params[768];
    std::snprintf(params, sizeof(params),
                  "\"run\": \"%s\", \"retention\": %s, \"jobs\": %llu, \"days\": %lld, \"gpus\": %u, "
                  "\"retain_finished_ms\": %lld, \"retain_finished_jobs\": %llu, \"check_every_ms\": %lld, "
                  "\"jobs_live\": %zu, \"jobs_forgotten\": %llu, \"snapshot_bytes\": %zu, \"replayed_entries\": %zu, "
                  "\"empty_process_rss\": %zu, \"cluster_only_rss\": %zu, \"what\": \"ClusterState in-process (no sockets, LevelDB or "
                  "scheduler view)\"%s",
                  run.name, run.retention ? "true" : "false", static_cast<unsigned long long>(run.jobs),
                  static_cast<long long>(options.days), kNodes * kGpusPerNode,
                  static_cast<long long>(policy.keep_ms), static_cast<unsigned long long>(policy.keep_jobs),
                  static_cast<long long>(options.check_every_ms), month.jobs_live,
                  static_cast<unsigned long long>(month.jobs_forgotten), month.snapshot_bytes, month.tail_entries,
                  empty_rss, nodes_rss,
                  run.retention ? ""
                                : ", \"note\": \"without retention every job stays; 1,000,000 would need several GB, "
                                  "so fewer jobs run and bytes_per_finished_job scales it\"");
    Print("month_rss", static_cast<double>(month.rss), "bytes", params);
    Print("month_peak_rss", static_cast<double>(month.hwm), "bytes", params);
    Print("month_seconds", month.seconds, "s", params);
    if (restart.ok) {
      Print("restart_ms", restart.ms, "ms", params);
      Print("restart_rss", static_cast<double>(restart.rss), "bytes", params);
      Print("restart_peak_rss", static_cast<double>(restart.hwm), "bytes", params);
    } else {
      std::fprintf(stderr, "restart of run %s failed\n", run.name);
    }
    if (run.retention) {
      // Resident at rest (after the month, after a restart) within the
      // budget; peaks (a snapshot being written, one being loaded, which
      // holds its bytes and their decoded form at once) within twice it.
      const size_t budget_bytes = options.budget_mib << 20;
      std::string budget = std::string(params) + ", \"budget_bytes\": " + std::to_string(budget_bytes) +
                           ", \"peak_budget_bytes\": " + std::to_string(2 * budget_bytes);
      const bool met = month.rss <= budget_bytes && restart.rss <= budget_bytes && month.hwm <= 2 * budget_bytes &&
                       restart.hwm <= 2 * budget_bytes;
      Print("retention_budget_met", met ? 1 : 0, "bool", budget);
    } else if (month.jobs_live > 0) {
      baseline_per_job = static_cast<double>(month.rss - std::min(month.rss, nodes_rss)) /
                         static_cast<double>(month.jobs_live);
      Print("bytes_per_finished_job", baseline_per_job, "bytes", params);
      std::string extrapolated = std::string(params) + ", \"extrapolated_to_jobs\": " + std::to_string(options.jobs);
      Print("baseline_rss_extrapolated", baseline_per_job * static_cast<double>(options.jobs), "bytes", extrapolated);
    }
  }
  return 0;
}
