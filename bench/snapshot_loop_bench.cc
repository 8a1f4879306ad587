// gpool-bench-snapshot-loop (issue 49): how long the coordinator's loop
// stalls while snapshots of a large state are taken, with the image encoded
// on the loop (the branch point's MaybeTakeSnapshot: ClusterState::Snapshot()
// then CommitLog::SaveSnapshot, in one turn) and by a forked child
// (SnapshotTaker + SnapshotFork), in the same run on the same state.
//
// In-process, over a real LocalLog on LevelDB in a temp dir: the state holds
// `--jobs` retained jobs (each submitted, bound, run and exited: what
// retention keeps for a month) on 1,250 nodes. The loop then turns every
// `--tick-ms` (a heartbeat's pace) for `--seconds`; each turn a client's
// submit arrives on schedule (open loop) and is proposed, fsynced and applied,
// and a snapshot is due every `--every-ms` of turns. Reported per mode:
//   loop_stall_ms      a turn's lateness past its schedule (p50, p99, max):
//                      what followers see as missing heartbeats
//   commit_latency_ms  a submit's arrival to applied (p99), idle and during
//                      snapshots (from the snapshot's start to its save)
//   snapshot_bytes, snapshots, fork_pause_ms (max), save_ms (max: on the
//   loop, the LevelDB write and log compaction; in the fork mode, since the
//   rest of issue 49, a link of the child's file and a small reference)
// What it does not show: Raft elections (see the replicated-cluster bench
// left as future work in the report), sockets.
//
// Prints JSON lines {"metric", "value", "unit", "params"}.
//   gpool-bench-snapshot-loop [--jobs 200000] [--seconds 12] [--every-ms 3000] [--tick-ms 5]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "bench/bench_jobs.h"
#include "control/disk_full_mode.h"
#include "control/log/local_log.h"
#include "control/snapshot_schedule.h"
#include "control/snapshot_taker.h"
#include "control/state/cluster_state.h"
#include "control/state/commands.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"

using gpool::bench::TrainingJob;

namespace {

using namespace gpool;
using BenchClock = std::chrono::steady_clock;

constexpr uint32_t kNodes = 1'250;
constexpr uint32_t kGpusPerNode = 8;

struct Options {
  uint64_t jobs = 200'000;
  int64_t seconds = 12;
  int64_t every_ms = 3'000;
  int64_t tick_ms = 5;
};

std::string g_params;

void Print(const std::string& metric, double value, const char* unit, const std::string& mode) {
  std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"params\": {%s, \"mode\": \"%s\"}}\n",
              metric.c_str(), value, unit, g_params.c_str(), mode.c_str());
  std::fflush(stdout);
}

double Ms(BenchClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t at = std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())));
  return values[at];
}

// The state: nodes, then `jobs` finished jobs, applied directly (no log).
void BuildState(state::ClusterState& state, uint64_t jobs, uint64_t& index) {
  auto apply = [&](int64_t t, state::CommandBody body) { state.Apply(++index, state::Command{t, std::move(body)}); };
  for (uint32_t n = 0; n < kNodes; ++n) {
    NodeSpec node;
    node.name = "node-" + std::to_string(n);
    node.cpu_milli = 128'000;
    node.memory_mib = 1'024 * 1'024;
    for (uint32_t g = 0; g < kGpusPerNode; ++g) {
      node.gpus.push_back(GpuInfo{.index = g, .uuid = node.name + "-gpu-" + std::to_string(g), .model = "H100"});
    }
    apply(0, state::RegisterNodeCmd{node, {}, {}});
  }
  for (uint64_t i = 0; i < jobs; ++i) {
    const int64_t now = static_cast<int64_t>(i) * 1'000;
    const uint64_t id = i + 1;
    apply(now, state::SubmitJobCmd{TrainingJob(i), "key-" + std::to_string(i)});
    const uint32_t slot = static_cast<uint32_t>(i % (kNodes * kGpusPerNode));
    const std::string node = "node-" + std::to_string(slot / kGpusPerNode);
    state::ApplyPlanCmd plan;
    plan.binds.push_back(state::PlanBind{JobId(id), 0, node, {slot % kGpusPerNode}, 4'000, 32'768});
    apply(now, std::move(plan));
    for (TaskEventKind kind : {TaskEventKind::kStarted, TaskEventKind::kExited}) {
      TaskEvent event;
      event.node = node;
      event.task = TaskId{JobId(id), 0, 0};
      event.kind = kind;
      event.pid = 1000;
      apply(now, state::TaskEventCmd{event});
    }
  }
}

// A LocalLog on a fresh LevelDB whose first entry follows `index`.
struct BenchStore {
  std::unique_ptr<storage::LevelDbStore> kv;
  std::unique_ptr<storage::LogStore> store;
  std::unique_ptr<control::DiskFullMode> disk;
  std::unique_ptr<log::LocalLog> log;
};

BenchStore OpenStore(const std::filesystem::path& dir, uint64_t index) {
  BenchStore s;
  storage::LevelDbOptions db;
  db.path = (dir / "db").string();
  s.kv = std::move(storage::LevelDbStore::Open(db).value());
  s.store = std::move(storage::LogStore::Open(s.kv.get()).value());
  // The state was built without a log: a placeholder snapshot at its index
  // starts the log right after it (never read back: the bench does not recover).
  if (!s.store->SaveSnapshot(storage::SnapshotMeta{index, 1}, "bench placeholder", /*sync=*/true).ok()) {
    std::fprintf(stderr, "cannot prepare the bench's log store\n");
    std::exit(1);
  }
  DiskGuardOptions disk;
  disk.path = dir.string();
  disk.reserve_bytes = 0;
  s.disk = std::make_unique<control::DiskFullMode>(disk, *s.kv, *s.store);
  // Issue 49: the fork mode keeps its images as files there, as a coordinator does.
  s.log = std::move(log::LocalLog::Open(s.store.get(), (dir / "images").string()).value());
  s.disk->Attach(s.log.get());
  return s;
}

void RunMode(const std::string& mode, state::ClusterState& state, const Options& options,
             const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "images");
  BenchStore store = OpenStore(dir, state.applied_index());
  const uint64_t entries_per_snapshot = static_cast<uint64_t>(options.every_ms / options.tick_ms);
  control::SnapshotSchedule schedule(entries_per_snapshot, /*log_ratio=*/0);
  control::ReplicationMetrics metrics;
  control::SnapshotTaker taker(schedule, *store.log, *store.disk, &metrics,
                               std::make_unique<control::SnapshotFork>((dir / "images").string()));
  const bool forked = mode == "fork";

  std::vector<double> stalls;
  std::vector<double> idle_latency;
  std::vector<double> snapshot_latency;
  double fork_pause_max = 0;
  double save_max = 0;
  uint64_t snapshot_bytes = 0;
  uint64_t snapshots = 0;
  uint64_t submitted = 0;
  // A snapshot's window: from the turn that starts it to the end of the turn
  // after the one that saves it, so arrivals delayed by the save count too.
  bool in_snapshot = false;
  bool leave_snapshot = false;
  const auto start = BenchClock::now();
  const auto end = start + std::chrono::seconds(options.seconds);
  auto next_turn = start;
  auto last_turn = start;
  while (BenchClock::now() < end) {
    std::this_thread::sleep_until(next_turn);  // the poll's timeout: the bench paces the loop
    const auto turn = BenchClock::now();
    // Lateness past the tick: the time the last turn's work kept the loop
    // from heartbeating.
    if (turn != start) stalls.push_back(std::max(0.0, Ms(turn - last_turn) - static_cast<double>(options.tick_ms)));
    last_turn = turn;
    // The submits that arrived since the last turn (one per tick, on schedule).
    std::vector<BenchClock::time_point> arrivals;
    while (start + std::chrono::milliseconds(options.tick_ms * static_cast<int64_t>(submitted)) <= turn) {
      arrivals.push_back(start + std::chrono::milliseconds(options.tick_ms * static_cast<int64_t>(submitted)));
      ++submitted;
    }
    for (size_t i = 0; i < arrivals.size(); ++i) {
      const state::Command command{0, state::SubmitJobCmd{TrainingJob(1'000'000'000 + submitted + i), ""}};
      (void)store.log->Propose(state::EncodeCommand(command));
    }
    auto committed = store.log->Sync();
    if (!committed.ok()) {
      std::fprintf(stderr, "sync failed: %s\n", committed.status().ToString().c_str());
      std::exit(1);
    }
    for (const auto& entry : committed->entries) {
      auto command = state::DecodeCommand(entry.data);
      state.Apply(entry.index, *command);
      schedule.Applied(entry.index, entry.data.size());
    }
    const auto applied = BenchClock::now();
    for (const auto& arrival : arrivals) {
      (in_snapshot ? snapshot_latency : idle_latency).push_back(Ms(applied - arrival));
    }
    if (leave_snapshot) in_snapshot = leave_snapshot = false;

    const uint64_t before = metrics.snapshots;
    const auto snap_start = BenchClock::now();
    if (forked) {
      const bool was_running = taker.fork().running();
      taker.Tick(state, static_cast<int64_t>(Ms(BenchClock::now() - start)));
      if (!was_running && taker.fork().running()) {
        fork_pause_max = std::max(fork_pause_max, taker.fork().last_fork_ms());
        in_snapshot = true;
      }
    } else if (schedule.Due()) {
      // The branch point's MaybeTakeSnapshot, on the loop.
      in_snapshot = true;
      const std::string image = state.Snapshot();
      if (store.log->SaveSnapshot(state.applied_index(), image).ok()) {
        schedule.Covered(state.applied_index(), image.size());
        ++metrics.snapshots;
        metrics.last_snapshot_bytes = image.size();
      }
    }
    if (metrics.snapshots != before) {
      ++snapshots;
      snapshot_bytes = metrics.last_snapshot_bytes;
      save_max = std::max(save_max, Ms(BenchClock::now() - snap_start));
      leave_snapshot = true;
    }
    next_turn = BenchClock::now() + std::chrono::milliseconds(options.tick_ms);
  }
  Print("loop_stall_ms_p50", Percentile(stalls, 0.50), "ms", mode);
  Print("loop_stall_ms_p99", Percentile(stalls, 0.99), "ms", mode);
  Print("loop_stall_ms_max", Percentile(stalls, 1.0), "ms", mode);
  Print("commit_latency_ms_p99_idle", Percentile(idle_latency, 0.99), "ms", mode);
  Print("commit_latency_ms_p99_during_snapshots", Percentile(snapshot_latency, 0.99), "ms", mode);
  Print("commits_during_snapshots", static_cast<double>(snapshot_latency.size()), "count", mode);
  Print("snapshots", static_cast<double>(snapshots), "count", mode);
  Print("snapshot_bytes", static_cast<double>(snapshot_bytes), "bytes", mode);
  // The loop's own share: fork mode saves (reads the child's file, writes
  // LevelDB, compacts the log); inline mode encodes and saves.
  Print(forked ? "save_ms_max" : "encode_and_save_ms_max", save_max, "ms", mode);
  if (forked) Print("fork_pause_ms_max", fork_pause_max, "ms", mode);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  spdlog::set_level(spdlog::level::warn);  // stdout carries the JSON lines
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--jobs") options.jobs = static_cast<uint64_t>(value);
    else if (flag == "--seconds") options.seconds = value;
    else if (flag == "--every-ms") options.every_ms = value;
    else if (flag == "--tick-ms") options.tick_ms = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (options.tick_ms <= 0 || options.every_ms < options.tick_ms || options.seconds <= 0) {
    std::fprintf(stderr, "--tick-ms must be > 0, --every-ms >= --tick-ms, --seconds > 0\n");
    return 2;
  }
  char params[256];
  std::snprintf(params, sizeof(params), "\"jobs\": %llu, \"seconds\": %lld, \"every_ms\": %lld, \"tick_ms\": %lld",
                static_cast<unsigned long long>(options.jobs), static_cast<long long>(options.seconds),
                static_cast<long long>(options.every_ms), static_cast<long long>(options.tick_ms));
  g_params = params;
  const auto build_start = BenchClock::now();
  state::ClusterState state;
  uint64_t index = 0;
  BuildState(state, options.jobs, index);
  Print("state_build_ms", Ms(BenchClock::now() - build_start), "ms", "setup");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpool-bench-snapshot-loop-" + std::to_string(getpid()));
  for (const std::string mode : {"inline", "fork"}) RunMode(mode, state, options, dir / mode);
  std::filesystem::remove_all(dir);
  return 0;
}
