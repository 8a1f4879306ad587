// gpool-bench-scale (issue 49): a 3-replica cluster at the scale issue 49
// sizes for, snapshotted and exported every few seconds while clients submit.
//
// State, by default: 12,500 simulated 8-GPU nodes (100,000 GPUs; two fleet
// workers, `gpool-worker --simulate`, at most 10,000 nodes each), 100,000
// live simulated tasks (12,500 jobs of 8 one-GPU `sleep` tasks), 1,000,000
// retained finished jobs and 90 days of usage records of 10,000 of the GPUs.
// The finished jobs and their usage are built OFFLINE (bench/scale_state.h:
// the commands a coordinator would have committed, applied in-process with
// a fake clock ending now) into a snapshot file, restored into every
// replica's data dir with `gpool-coordinator --restore-snapshot` (what
// `gpool admin snapshot restore` runs) before the replicas start. Then the
// fleet registers and the live tasks are submitted through the cluster.
// The replicas keep the finished jobs (--retain-finished-jobs and
// --retain-finished-ms above what was built); usage retention is the
// coordinator's default.
//
// Measured, while `--clients` threads submit small jobs (0 GPUs, `true`)
// without pause:
//   idle  `--idle-seconds` with no export taken,
//   busy  `--minutes` with an export (`gpool admin snapshot save`'s
//         ExportSnapshot, read to the end) started every `--export-every-ms`;
//         each export is a snapshot the leader's forked child encodes and
//         the leader then saves (so periodic snapshots happen every few
//         seconds too; "snapshot started" lines in the leader's log count
//         them).
// Reported (JSON lines {"metric", "value", "unit", "params"}):
//   leader_changes                      the term's rise over both phases (0 expected)
//   loop_stall_ms_p99_{idle,busy}, loop_stall_ms_max_busy
//                                       from the leader's gpool_loop_iteration_seconds (bucket upper
//                                       bounds) and gpool_loop_iteration_max_seconds (scraped every 5 s)
//   commit_latency_ms_p99_{idle,busy}, commit_latency_ratio_busy_over_idle
//   snapshot_bytes, export_ms_{p50,max}, snapshots_started_busy
//   leader_rss_steady_bytes             the leader's VmRSS at the end of the busy phase
//   follower_rss_steady_bytes, follower_restart_peak_rss_bytes, follower_restart_rss_bytes,
//   leader_rss_growth_follower_stopped_bytes, follower_stopped_catch_up_ms
//                                       a follower frozen (SIGSTOP) for --stopped-follower-seconds
//                                       while clients submit and exports (so snapshots and log
//                                       compaction) go on: the leader's VmRSS at most during it against
//                                       before (frames for a follower that reads none of them must stay
//                                       bounded: a snapshot's chunks in a window, appends within the
//                                       in-flight byte bound), beside the live follower's growth in the
//                                       same seconds (the state grows too), then SIGCONT and the time
//                                       to catch up
//   fleet_task_logs_max_per_node        task logs on the fleet's busiest node at the end of the busy
//                                       phase: within --fleet-task-logs-max (the nodes' --task-logs-max,
//                                       10,000 by default), plus what 5 s add (a node's retention
//                                       passes come 5 s apart while they remove) and its live tasks'
//   follower_restart_ms                 a follower killed (SIGKILL) at the end, restarted, caught up:
//                                       VmHWM of the new process (the restart's peak) against the
//                                       killed one's VmRSS
// Scaled down for a quick run:
//   gpool-bench-scale --gpus 1000 --tasks 1000 --jobs 10000 --usage-days 90 --usage-gpus 1000
//                     --minutes 1 --idle-seconds 20
// `--build-only 1` stops after the offline state (its size and build time),
// for a size the machine cannot run as a cluster.
// Not part of ctest. GPOOL_BENCH_KEEP=1 keeps the data dirs and logs.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_jobs.h"
#include "bench/bench_client.h"
#include "bench/bench_process.h"
#include "bench/fleet_dir.h"
#include "bench/scale_metrics.h"
#include "bench/scale_state.h"
#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_snapshot.h"

using gpool::bench::SimpleJob;

namespace {

using namespace gpool::bench;  // NOLINT: the shared bench helpers
constexpr int kScaleReplicas = 3;
constexpr uint32_t kScaleNodesPerFleet = 10'000;  // gpool-worker --simulate's bound

struct ScaleOptions {
  uint64_t gpus = 100'000;
  uint64_t tasks = 100'000;
  uint64_t jobs = 1'000'000;
  uint32_t usage_days = 90;
  uint32_t usage_gpus = 10'000;
  double minutes = 10;
  int64_t idle_seconds = 60;
  int64_t export_every_ms = 5'000;
  int clients = 4;
  int64_t stopped_follower_seconds = 30;  // 0: skip the phase
  bool build_only = false;  // --build-only 1: the offline state's figures, no cluster
  uint64_t fleet_task_logs_max = 10'000;  // the fleet nodes' --task-logs-max (the worker's default)
};

std::string g_scale_params;

void ScalePrint(const std::string& metric, double value, const char* unit) {
  std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"params\": {%s}}\n", metric.c_str(), value,
              unit, g_scale_params.c_str());
  std::fflush(stdout);
}

void ScaleProgress(const char* what) {
  std::fprintf(stderr, "[scale] %s\n", what);
  std::fflush(stderr);
}

// VmRSS / VmHWM of a process, bytes; 0 when it is gone.
uint64_t ScaleProcKib(pid_t pid, const char* field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  const size_t n = std::strlen(field);
  for (std::string line; std::getline(status, line);) {
    if (line.compare(0, n, field) == 0) return std::strtoull(line.c_str() + n, nullptr, 10) * 1024;
  }
  return 0;
}

// Waits for `done` for up to `seconds`, checking every `every_ms`.
template <typename F>
bool ScaleWaitFor(F&& done, double seconds, int every_ms) {
  const auto deadline = SteadyClock::now() + std::chrono::duration<double>(seconds);
  while (SteadyClock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
  }
  return done();
}

class ScaleCluster {
 public:
  // The fleet's task logs go to tmpfs where there is one, as gpool-bench-e2e's
  // do: a hundred thousand small files created and removed on ext4 cost
  // minutes of the run (removing a 1,000-GPU run's took over a minute).
  explicit ScaleCluster(std::string dir)
      : dir_(std::move(dir)),
        fleet_dir_(BenchFleetDir(std::filesystem::path(dir_).filename().string() + "-fleet", dir_ + "/fleet")) {
    std::filesystem::create_directories(dir_);
    std::filesystem::create_directories(fleet_dir_);
    for (int i = 0; i < kScaleReplicas; ++i) {
      client_.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
      worker_.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
      peer_.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
      http_.push_back(ReservePort());
    }
    for (int r = 0; r < kScaleReplicas; ++r) {
      const std::string id = std::to_string(r + 1);
      peers_ += (r ? "," : "") + id + "=" + peer_[r];
      clients_ += (r ? "," : "") + id + "=" + client_[r];
      workers_ += (r ? "," : "") + id + "=" + worker_[r];
    }
    pids_.assign(kScaleReplicas, -1);
  }
  ~ScaleCluster() {
    for (pid_t pid : fleet_) Kill(pid, SIGKILL);
    for (pid_t pid : pids_) Kill(pid, SIGKILL);
    if (std::getenv("GPOOL_BENCH_KEEP") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      std::filesystem::remove_all(fleet_dir_, ec);
    } else {
      std::fprintf(stderr, "data dirs and logs kept in %s (the fleet's task logs in %s)\n", dir_.c_str(),
                   fleet_dir_.c_str());
    }
  }
  std::string data_dir(int r) const { return dir_ + "/c" + std::to_string(r + 1); }
  std::string log_path(int r) const { return data_dir(r) + ".log"; }

  // Every replica's data dir from the same file and --peers (docs/operations.md 15.6).
  void Restore(const std::string& file) {
    for (int r = 0; r < kScaleReplicas; ++r) {
      const pid_t pid = Spawn({GPOOL_COORDINATOR_BIN, "--restore-snapshot", file, "--data-dir", data_dir(r), "--peers",
                               peers_},
                              dir_ + "/restore" + std::to_string(r + 1) + ".log");
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "restoring replica %d failed; see %s/restore%d.log\n", r + 1, dir_.c_str(), r + 1);
        std::exit(1);
      }
    }
  }
  void Start(int r, uint64_t retain_jobs) {
    pids_[r] = Spawn({GPOOL_COORDINATOR_BIN, "--insecure", "--id", std::to_string(r + 1), "--peers", peers_,
                      "--peer-clients", clients_, "--peer-workers", workers_, "--data-dir", data_dir(r),
                      "--client-addr", client_[r], "--worker-addr", worker_[r], "--http-address",
                      "127.0.0.1:" + std::to_string(http_[r]), "--http-insecure", "--metrics-per-gpu=false", "--heartbeat-ms", "1000",
                      "--node-timeout-ms", "10000", "--retain-finished-jobs", std::to_string(retain_jobs),
                      "--retain-finished-ms", std::to_string(int64_t{400} * 24 * 3600 * 1000), "--log-level",
                      std::getenv("GPOOL_BENCH_LOG") ? std::getenv("GPOOL_BENCH_LOG") : "info"},
                     log_path(r));
  }
  void KillReplica(int r) {
    Kill(pids_[r], SIGKILL);
    pids_[r] = -1;
  }
  void SignalReplica(int r, int sig) { ::kill(pids_[r], sig); }
  void StartFleets(uint32_t nodes, const std::string& spec, uint64_t task_logs_max) {
    for (uint32_t fleet = 0, left = nodes; left > 0; ++fleet) {
      const uint32_t count = std::min(left, FleetSize(nodes));
      fleet_.push_back(Spawn({GPOOL_WORKER_BIN, "--insecure", "--simulate", std::to_string(count), "--spec", spec,
                              "--node-name", ScaleFleetBase(fleet), "--coordinator", Join(worker_), "--data-dir",
                              fleet_dir_ + "/" + ScaleFleetBase(fleet), "--log-level", "warn", "--task-logs-max",
                              std::to_string(task_logs_max)},
                             dir_ + "/" + ScaleFleetBase(fleet) + ".log"));
      left -= count;
    }
  }
  // Nodes per fleet worker: as few workers as the bound allows, evenly.
  static uint32_t FleetSize(uint32_t nodes) {
    const uint32_t fleets = (nodes + kScaleNodesPerFleet - 1) / kScaleNodesPerFleet;
    return fleets == 0 ? 1 : (nodes + fleets - 1) / fleets;
  }
  std::string endpoints() const { return Join(client_); }
  const std::string& client(int r) const { return client_[r]; }
  int http(int r) const { return http_[r]; }
  pid_t pid(int r) const { return pids_[r]; }
  // A process of the cluster that has exited (reaped here), or "": a waiting
  // bench stops at once with the log to read instead of waiting out its bound.
  std::string Exited() const {
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (pids_[r] > 0 && waitpid(pids_[r], nullptr, WNOHANG) == pids_[r]) return "replica " + std::to_string(r + 1) + " (see " + log_path(static_cast<int>(r)) + ")";
    }
    for (pid_t pid : fleet_) {
      if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == pid) return "a fleet worker (see " + dir_ + ")";
    }
    return "";
  }
  const std::string& dir() const { return dir_; }
  // The task logs the fleet's busiest node holds (FLEET/<fleet>/<node>/tasks/*.log).
  uint64_t MaxTaskLogsPerNode() const {
    uint64_t most = 0;
    std::error_code ec;
    for (const auto& fleet : std::filesystem::directory_iterator(fleet_dir_, ec)) {
      for (const auto& node : std::filesystem::directory_iterator(fleet.path(), ec)) {
        uint64_t logs = 0;
        for (const auto& file : std::filesystem::directory_iterator(node.path() / "tasks", ec)) {
          logs += file.path().extension() == ".log";
        }
        most = std::max(most, logs);
      }
    }
    return most;
  }
  // Lines of replica r's log that contain `text`.
  int CountInLog(int r, const std::string& text) const {
    std::ifstream log(log_path(r));
    int count = 0;
    for (std::string line; std::getline(log, line);) count += line.find(text) != std::string::npos;
    return count;
  }

 private:
  static std::string Join(const std::vector<std::string>& eps) {
    std::string out;
    for (const auto& e : eps) out += (out.empty() ? "" : ",") + e;
    return out;
  }
  std::string dir_;
  std::string fleet_dir_;
  std::vector<std::string> client_, worker_, peer_;
  std::vector<int> http_;
  std::string peers_, clients_, workers_;
  std::vector<pid_t> pids_;
  std::vector<pid_t> fleet_;
};

struct ScaleAck {
  SteadyClock::time_point sent;
  SteadyClock::time_point acked;
};

// The leader's replica number (0-based) and its status; exits when none
// answers as leader within a minute.
std::pair<int, gpool::ClusterStatusReply> ScaleLeader(gpool::Client& observer, const ScaleCluster& cluster) {
  for (int i = 0; i < 1200; ++i) {
    auto status = observer.ClusterStatus();
    if (status.ok() && status->role == "leader") {
      const int r = std::atoi(status->replica_id.c_str()) - 1;
      if (r >= 0 && r < kScaleReplicas) return {r, *status};
    }
    usleep(50'000);
  }
  std::fprintf(stderr, "no leader; logs in %s (GPOOL_BENCH_KEEP=1 keeps them)\n", cluster.dir().c_str());
  std::exit(1);
}

struct ScaleExports {
  std::vector<double> ms;
  uint64_t bytes = 0;
  int errors = 0;
};

// One export read to the end, as `gpool admin snapshot save` reads it.
void ScaleExportOnce(gpool::Client& exporter, ScaleExports& out) {
  const auto started = SteadyClock::now();
  gpool::ExportSnapshot request;
  request.max_bytes = 4u << 20;
  auto chunk = exporter.ExportSnapshot(request);
  bool ok = chunk.ok();
  while (ok && chunk->offset + chunk->data.size() < chunk->total_bytes) {
    request.export_id = chunk->export_id;
    request.offset = chunk->offset + chunk->data.size();
    chunk = exporter.ExportSnapshot(request);
    ok = chunk.ok();
  }
  if (!ok) {
    ++out.errors;
    std::fprintf(stderr, "export failed: %s\n", chunk.status().ToString().c_str());
    return;
  }
  out.ms.push_back(Ms(SteadyClock::now() - started));
  out.bytes = chunk->total_bytes;
}

int RunScale(const ScaleOptions& options) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gpool-bench-scale-" + std::to_string(getpid()))).string();
  ScaleCluster cluster(dir);
  const std::string spec = std::string(GPOOL_WORKER_EXAMPLES_DIR) + "/node-8gpu.yaml";
  const uint32_t nodes = static_cast<uint32_t>((options.gpus + 7) / 8);

  // 1. The finished jobs and their usage, offline, in a child (its memory is
  //    its own and gone once the file is written).
  ScaleProgress("building the state offline");
  const std::string file = dir + "/state.gpoolsnap";
  ScaleStateOptions state_options;
  state_options.spec_path = spec;
  state_options.nodes = nodes;
  state_options.nodes_per_fleet = ScaleCluster::FleetSize(nodes);
  state_options.jobs = options.jobs;
  state_options.usage_gpus = options.usage_gpus;
  state_options.usage_days = options.usage_days;
  state_options.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  int report_pipe[2];
  if (pipe(report_pipe) != 0) return 1;
  std::fflush(stdout);
  const pid_t builder = fork();
  if (builder == 0) {
    close(report_pipe[0]);
    const ScaleStateReport built = BuildScaleSnapshot(state_options, file);
    (void)!write(report_pipe[1], &built, sizeof(built));
    _exit(0);
  }
  close(report_pipe[1]);
  ScaleStateReport built{};
  const bool built_ok = read(report_pipe[0], &built, sizeof(built)) == static_cast<ssize_t>(sizeof(built));
  close(report_pipe[0]);
  waitpid(builder, nullptr, 0);
  if (!built_ok) {
    std::fprintf(stderr, "building the state failed\n");
    return 1;
  }
  ScalePrint("offline_state_build_s", built.build_s, "s");
  ScalePrint("offline_state_encode_s", built.encode_s, "s");
  ScalePrint("offline_state_jobs", static_cast<double>(built.jobs), "count");
  ScalePrint("offline_state_usage_records", static_cast<double>(built.usage_records), "count");
  ScalePrint("offline_state_bytes", static_cast<double>(built.state_bytes), "bytes");
  ScalePrint("offline_state_rss_bytes", static_cast<double>(built.rss_bytes), "bytes");
  ScalePrint("offline_state_peak_rss_bytes", static_cast<double>(built.peak_rss_bytes), "bytes");
  if (options.build_only) return 0;

  // 2. Restore into every replica's data dir, start them and the fleet.
  const auto restore_start = SteadyClock::now();
  cluster.Restore(file);
  ScalePrint("restore_ms", Ms(SteadyClock::now() - restore_start), "ms");
  std::filesystem::remove(file);
  const uint64_t retain_jobs = 2 * (options.jobs + options.tasks) + 1'000'000;  // nothing built or run is forgotten
  const auto start = SteadyClock::now();
  for (int r = 0; r < kScaleReplicas; ++r) cluster.Start(r, retain_jobs);
  cluster.StartFleets(nodes, spec, options.fleet_task_logs_max);
  auto observer = ConnectOrExit(cluster.endpoints(), 30'000);
  ScaleProgress("waiting for the fleet");
  uint32_t ready = 0;
  std::string exited;
  if (!ScaleWaitFor([&] {
        if (!(exited = cluster.Exited()).empty()) return true;
        auto status = observer->ClusterStatus();
        ready = status.ok() && status->role == "leader" ? status->nodes_ready : 0;
        return ready == nodes;
      }, 900, 500)) {
    std::fprintf(stderr, "only %u of %u nodes became ready\n", ready, nodes);
    return 1;
  }
  if (!exited.empty()) {
    std::fprintf(stderr, "%s exited while the fleet registered\n", exited.c_str());
    return 1;
  }
  ScalePrint("fleet_ready_s", Ms(SteadyClock::now() - start) / 1000, "s");

  // 3. The live tasks: jobs of 8 one-GPU `sleep` tasks, until every one runs.
  ScaleProgress("submitting the live tasks");
  const auto live_start = SteadyClock::now();
  const uint64_t live_jobs = (options.tasks + 7) / 8;
  {
    std::atomic<uint64_t> next{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        auto client = ConnectOrExit(cluster.endpoints(), 30'000);
        for (uint64_t i; (i = next++) < live_jobs;) {
          const uint32_t replicas = static_cast<uint32_t>(std::min<uint64_t>(8, options.tasks - 8 * i));
          const std::string name = "live-" + std::to_string(i);
          auto reply = client->Submit(SimpleJob(name, replicas, 1, {"sleep", "86400"}), "key-" + name);
          if (!reply.ok()) std::fprintf(stderr, "submit %s: %s\n", name.c_str(), reply.status().ToString().c_str());
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  uint32_t used = 0, running = 0;
  if (!ScaleWaitFor([&] {
        auto status = observer->ClusterStatus();
        if (!status.ok()) return false;
        used = status->gpus_used;
        running = status->jobs_running;
        return used >= options.tasks && running >= live_jobs;
      }, 1800, 1000)) {
    std::fprintf(stderr, "live tasks: %u GPUs used, %u jobs running of %llu\n", used, running,
                 static_cast<unsigned long long>(live_jobs));
    return 1;
  }
  ScalePrint("live_tasks_running_s", Ms(SteadyClock::now() - live_start) / 1000, "s");
  ScalePrint("live_tasks", static_cast<double>(used), "count");

  // 4. Load through both phases.
  const auto leader_now = ScaleLeader(*observer, cluster);
  const int leader = leader_now.first;
  const uint64_t term_before = leader_now.second.term;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<ScaleAck> acks;  // guarded by mu
  std::atomic<uint64_t> submit_errors{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < options.clients; ++t) {
    submitters.emplace_back([&, t] {
      auto client = ConnectOrExit(cluster.endpoints(), 30'000);
      for (int i = 0; !stop; ++i) {
        const std::string name = "load-" + std::to_string(t) + "-" + std::to_string(i);
        const auto sent = SteadyClock::now();
        if (!client->Submit(SimpleJob(name, 1, 0, {"true"}), "key-" + name).ok()) {
          ++submit_errors;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        acks.push_back(ScaleAck{sent, SteadyClock::now()});
      }
    });
  }
  ScaleProgress("idle phase");
  const std::string idle_page = ScaleHttpGet(cluster.http(leader), "/metrics");
  if (idle_page.empty()) {
    std::fprintf(stderr, "cannot read the leader's /metrics on port %d\n", cluster.http(leader));
    stop = true;
    for (auto& s : submitters) s.join();
    return 1;
  }
  const int snapshots_before_idle = cluster.CountInLog(leader, "snapshot started");
  const auto idle_start = SteadyClock::now();
  std::this_thread::sleep_until(idle_start + std::chrono::seconds(options.idle_seconds));
  const std::string busy_page = ScaleHttpGet(cluster.http(leader), "/metrics");
  const int snapshots_before_busy = cluster.CountInLog(leader, "snapshot started");

  ScaleProgress("busy phase: exports every few seconds");
  const auto busy_start = SteadyClock::now();
  const auto busy_end = busy_start + std::chrono::milliseconds(static_cast<int64_t>(options.minutes * 60'000));
  // The loop's max, scraped every 5 s (the gauge covers the last 10-20 s).
  std::atomic<bool> busy_done{false};
  double loop_max_s = 0;
  std::thread scraper([&] {
    while (!busy_done) {
      const std::string page = ScaleHttpGet(cluster.http(leader), "/metrics");
      loop_max_s = std::max(loop_max_s, ScaleSample(page, "gpool_loop_iteration_max_seconds"));
      for (int i = 0; i < 50 && !busy_done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  ScaleExports exports;
  auto exporter = ConnectOrExit(cluster.endpoints(), 600'000);
  while (SteadyClock::now() < busy_end) {
    const auto started = SteadyClock::now();
    ScaleExportOnce(*exporter, exports);
    std::this_thread::sleep_until(started + std::chrono::milliseconds(options.export_every_ms));
  }
  const auto busy_stop = SteadyClock::now();
  busy_done = true;
  scraper.join();
  const std::string end_page = ScaleHttpGet(cluster.http(leader), "/metrics");
  loop_max_s = std::max(loop_max_s, ScaleSample(end_page, "gpool_loop_iteration_max_seconds"));
  const int snapshots_after_busy = cluster.CountInLog(leader, "snapshot started");
  const uint64_t leader_rss = ScaleProcKib(cluster.pid(leader), "VmRSS:");
  const uint64_t leader_hwm = ScaleProcKib(cluster.pid(leader), "VmHWM:");

  // 4b. A follower frozen while the cluster stays busy (submits, exports,
  //     snapshots compacting the log past it).
  double stopped_growth = -1, live_growth = -1, stopped_catch_up_ms = -1;
  if (options.stopped_follower_seconds > 0) {
    ScaleProgress("a follower stopped (SIGSTOP)");
    // The leader now (it may have changed in the busy phase): a follower is
    // frozen, and the leader's memory is what is watched.
    const int current = ScaleLeader(*observer, cluster).first;
    const int frozen = (current + 2) % kScaleReplicas;
    const uint64_t before = ScaleProcKib(cluster.pid(current), "VmRSS:");
    uint64_t most = before;
    // The live follower grows with the state too (clients keep submitting):
    // its growth is the baseline the leader's is read against.
    const int live = (current + 1) % kScaleReplicas;
    const uint64_t live_before = ScaleProcKib(cluster.pid(live), "VmRSS:");
    uint64_t live_most = live_before;
    ScaleExports frozen_exports;  // apart from the busy phase's figures
    cluster.SignalReplica(frozen, SIGSTOP);
    const auto frozen_end = SteadyClock::now() + std::chrono::seconds(options.stopped_follower_seconds);
    while (SteadyClock::now() < frozen_end) {
      const auto started = SteadyClock::now();
      ScaleExportOnce(*exporter, frozen_exports);
      most = std::max(most, ScaleProcKib(cluster.pid(current), "VmRSS:"));
      std::this_thread::sleep_until(started + std::chrono::milliseconds(std::min<int64_t>(options.export_every_ms, 1000)));
      most = std::max(most, ScaleProcKib(cluster.pid(current), "VmRSS:"));
      live_most = std::max(live_most, ScaleProcKib(cluster.pid(live), "VmRSS:"));
    }
    const uint64_t commit_at_resume = ScaleLeader(*observer, cluster).second.commit_index;
    cluster.SignalReplica(frozen, SIGCONT);
    const auto resumed = SteadyClock::now();
    const bool back = ScaleWaitFor([&] {
      const std::string page = ScaleHttpGet(cluster.http(frozen), "/metrics");
      return !page.empty() && ScaleSample(page, "gpool_raft_applied_index") >= static_cast<double>(commit_at_resume);
    }, 600, 200);
    stopped_growth = static_cast<double>(most - before);
    live_growth = static_cast<double>(live_most - live_before);
    if (back) stopped_catch_up_ms = Ms(SteadyClock::now() - resumed);
  }
  stop = true;
  for (auto& s : submitters) s.join();
  const auto [leader_after, status_after] = ScaleLeader(*observer, cluster);
  const uint64_t term_after = status_after.term;
  // What the workers cost the leader of now: re-registrations (a fleet that
  // cannot get an answer registers again) and commands sent again.
  const std::string workers_page = ScaleHttpGet(cluster.http(leader_after), "/metrics");

  std::vector<double> idle, busy;
  for (const ScaleAck& ack : acks) {
    if (ack.sent >= idle_start && ack.sent < busy_start) idle.push_back(Ms(ack.acked - ack.sent));
    if (ack.sent >= busy_start && ack.sent < busy_stop) busy.push_back(Ms(ack.acked - ack.sent));
  }
  const auto loop_hist = [](const std::string& page) { return ScaleHistogram(page, "gpool_loop_iteration_seconds"); };
  double idle_turns = 0, busy_turns = 0;
  const double stall_idle = ScaleQuantile(loop_hist(idle_page), loop_hist(busy_page), 0.99, &idle_turns) * 1000;
  const double stall_busy = ScaleQuantile(loop_hist(busy_page), loop_hist(end_page), 0.99, &busy_turns) * 1000;
  const double idle_p99 = Percentile(idle, 0.99);
  const double busy_p99 = Percentile(busy, 0.99);
  ScalePrint("leader_changes", static_cast<double>(term_after - term_before), "count");
  ScalePrint("loop_stall_ms_p99_idle", stall_idle, "ms (bucket upper bound)");
  ScalePrint("loop_stall_ms_p99_busy", stall_busy, "ms (bucket upper bound)");
  ScalePrint("loop_stall_ms_max_busy", loop_max_s * 1000, "ms");
  ScalePrint("loop_turns_busy", busy_turns, "count");
  ScalePrint("commit_latency_ms_p99_idle", idle_p99, "ms");
  ScalePrint("commit_latency_ms_p99_busy", busy_p99, "ms");
  ScalePrint("commit_latency_ratio_busy_over_idle", idle_p99 > 0 ? busy_p99 / idle_p99 : 0, "ratio");
  ScalePrint("commits_idle", static_cast<double>(idle.size()), "count");
  ScalePrint("commits_busy", static_cast<double>(busy.size()), "count");
  ScalePrint("submit_errors", static_cast<double>(submit_errors.load()), "count");
  ScalePrint("exports", static_cast<double>(exports.ms.size()), "count");
  ScalePrint("export_errors", exports.errors, "count");
  ScalePrint("export_ms_p50", Percentile(exports.ms, 0.5), "ms");
  ScalePrint("export_ms_max", Percentile(exports.ms, 1.0), "ms");
  ScalePrint("snapshot_bytes", static_cast<double>(exports.bytes), "bytes");
  ScalePrint("snapshots_started_idle", snapshots_before_busy - snapshots_before_idle, "count");
  ScalePrint("snapshots_started_busy", snapshots_after_busy - snapshots_before_busy, "count");
  ScalePrint("leader_rss_steady_bytes", static_cast<double>(leader_rss), "bytes");
  ScalePrint("leader_peak_rss_bytes", static_cast<double>(leader_hwm), "bytes");
  ScalePrint("leader_worker_registrations", ScaleSample(workers_page, "gpool_worker_registrations_total"),
             "count (since it was elected)");
  ScalePrint("leader_commands_resent", ScaleSample(workers_page, "gpool_worker_commands_resent_total"),
             "count (since it was elected)");
  ScalePrint("leader_commands_waiting_at_end", ScaleSample(workers_page, "gpool_worker_commands_waiting"), "count");
  // Each node's ended tasks' logs stay within --task-logs-max (plus its live
  // tasks'): the busiest node runs most of the clients' short jobs.
  ScalePrint("fleet_task_logs_max_per_node", static_cast<double>(cluster.MaxTaskLogsPerNode()), "logs");
  if (options.stopped_follower_seconds > 0) {
    ScalePrint("leader_rss_growth_follower_stopped_bytes", stopped_growth, "bytes");
    ScalePrint("live_follower_rss_growth_same_period_bytes", live_growth, "bytes");
    ScalePrint("follower_stopped_catch_up_ms", stopped_catch_up_ms, "ms (-1: not caught up in 600 s)");
  }

  // 5. A follower killed and restarted: its peak while it loads against its
  //    steady size before.
  const int follower = (leader + 1) % kScaleReplicas;
  const uint64_t follower_rss = ScaleProcKib(cluster.pid(follower), "VmRSS:");
  const uint64_t commit_at_kill = ScaleLeader(*observer, cluster).second.commit_index;
  ScaleProgress("restarting a follower");
  cluster.KillReplica(follower);
  const auto restart_start = SteadyClock::now();
  cluster.Start(follower, retain_jobs);
  // Caught up: its own applied index (its /metrics) at the leader's commit
  // index when it was killed.
  const bool caught_up = ScaleWaitFor([&] {
    const std::string page = ScaleHttpGet(cluster.http(follower), "/metrics");
    return !page.empty() && ScaleSample(page, "gpool_raft_applied_index") >= static_cast<double>(commit_at_kill);
  }, 900, 200);
  if (!caught_up) {
    std::fprintf(stderr, "the restarted follower did not catch up in 900 s\n");
    return 1;
  }
  ScalePrint("follower_restart_ms", Ms(SteadyClock::now() - restart_start), "ms");
  ScalePrint("follower_rss_steady_bytes", static_cast<double>(follower_rss), "bytes");
  ScalePrint("follower_restart_peak_rss_bytes", static_cast<double>(ScaleProcKib(cluster.pid(follower), "VmHWM:")),
             "bytes");
  ScalePrint("follower_restart_rss_bytes", static_cast<double>(ScaleProcKib(cluster.pid(follower), "VmRSS:")), "bytes");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ScaleOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--gpus") options.gpus = std::strtoull(value, nullptr, 10);
    else if (flag == "--tasks") options.tasks = std::strtoull(value, nullptr, 10);
    else if (flag == "--jobs") options.jobs = std::strtoull(value, nullptr, 10);
    else if (flag == "--usage-days") options.usage_days = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    else if (flag == "--usage-gpus") options.usage_gpus = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    else if (flag == "--minutes") options.minutes = std::strtod(value, nullptr);
    else if (flag == "--idle-seconds") options.idle_seconds = std::atoll(value);
    else if (flag == "--export-every-ms") options.export_every_ms = std::atoll(value);
    else if (flag == "--clients") options.clients = std::atoi(value);
    else if (flag == "--build-only") options.build_only = std::atoi(value) != 0;
    else if (flag == "--stopped-follower-seconds") options.stopped_follower_seconds = std::atoll(value);
    else if (flag == "--fleet-task-logs-max") options.fleet_task_logs_max = std::strtoull(value, nullptr, 10);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "every flag takes a value\n");
    return 2;
  }
  if (options.gpus < 8 || options.gpus > 8ull * 4 * kScaleNodesPerFleet || options.tasks > options.gpus ||
      options.usage_gpus > options.gpus || options.usage_days == 0 || !(options.minutes > 0) ||
      options.idle_seconds <= 0 || options.export_every_ms <= 0 || options.clients <= 0 ||
      options.stopped_follower_seconds < 0) {
    std::fprintf(stderr,
                 "need 8 <= --gpus <= 320000, --tasks and --usage-gpus <= --gpus, and --usage-days, --minutes, "
                 "--idle-seconds, --export-every-ms, --clients > 0, --stopped-follower-seconds >= 0\n");
    return 2;
  }
  char params[512];
  std::snprintf(params, sizeof(params),
                "\"gpus\": %llu, \"tasks\": %llu, \"jobs\": %llu, \"usage_days\": %u, \"usage_gpus\": %u, "
                "\"minutes\": %.2f, \"idle_seconds\": %lld, \"export_every_ms\": %lld, \"clients\": %d, "
                "\"replicas\": %d, \"fleet_task_logs_max\": %llu",
                static_cast<unsigned long long>(options.gpus), static_cast<unsigned long long>(options.tasks),
                static_cast<unsigned long long>(options.jobs), options.usage_days, options.usage_gpus,
                options.minutes, static_cast<long long>(options.idle_seconds),
                static_cast<long long>(options.export_every_ms), options.clients, kScaleReplicas,
                static_cast<unsigned long long>(options.fleet_task_logs_max));
  g_scale_params = params;
  return RunScale(options);
}
