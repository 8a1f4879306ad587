// gpool-bench-snapshot-cluster (issue 49): a replicated coordinator with a
// large state, clients submitting, and state images taken every few seconds
// (`gpool admin snapshot save`'s ExportSnapshot, read to the end), with the
// images encoded on the leader's loop (--snapshot-on-loop: the branch
// point's behaviour) and by a forked child, one fresh cluster each, in one run.
//
// Three real gpool-coordinator replicas on 127.0.0.1 (--insecure, no
// workers). Fill: `--jobs` jobs, each with `--env-vars` environment
// variables (many small records, as usage and job history are), submitted by
// 8 threads. Then, while 4 threads submit small jobs without pause:
//   idle: `--seconds` with no image taken (the log ratio keeps periodic
//         snapshots away: the log grows far slower than the state),
//   busy: `--seconds` with an export started every `--export-every-ms`.
// Reported per mode:
//   leader_changes      elections over both phases (the term's rise)
//   commit_latency_ms   submit to acknowledgement, p99, idle and busy
//   ack_gap_ms          the longest time without any acknowledgement, p99 of
//                       100 ms windows and max: the clients' view of a loop stall
//   export_ms           start to last chunk, max; snapshot_bytes: the image
// Periodic snapshots run too, every --snapshot-every entries (their save is
// a link and a small reference since the rest of issue 49; before, a
// LevelDB write of the whole image on the loop).
//
// Prints JSON lines {"metric", "value", "unit", "params"}.
//   gpool-bench-snapshot-cluster [--jobs 20000] [--env-vars 40] [--seconds 10] [--export-every-ms 2000]
//                                [--snapshot-every 10000]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_client.h"
#include "bench/bench_process.h"
#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_snapshot.h"

namespace {

using namespace gpool::bench;  // NOLINT: the shared bench helpers
constexpr int kSnapClusterReplicas = 3;

struct SnapClusterOptions {
  uint64_t jobs = 20'000;
  uint32_t env_vars = 40;
  int64_t seconds = 10;
  int64_t export_every_ms = 2'000;
  uint64_t snapshot_every = 10'000;  // the coordinator's default
};

std::string g_snap_params;

void SnapPrint(const std::string& metric, double value, const char* unit, const std::string& mode) {
  std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"params\": {%s, \"mode\": \"%s\"}}\n",
              metric.c_str(), value, unit, g_snap_params.c_str(), mode.c_str());
  std::fflush(stdout);
}

gpool::JobSpec SnapJob(const std::string& name, uint32_t env_vars) {
  gpool::JobSpec spec;
  spec.name = name;
  gpool::TaskGroupSpec group;
  group.command = {"true"};
  group.resources.gpus = 1;
  for (uint32_t i = 0; i < env_vars; ++i) group.env["VAR_" + std::to_string(i)] = name + "-value-" + std::to_string(i);
  spec.tasks.push_back(group);
  return spec;
}

struct SnapAck {
  SteadyClock::time_point sent;
  SteadyClock::time_point acked;
};

class SnapCluster {
 public:
  SnapCluster(const std::string& dir, bool on_loop, uint64_t snapshot_every) : dir_(dir) {
    std::filesystem::create_directories(dir_);
    for (int i = 0; i < kSnapClusterReplicas; ++i) {
      client_.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
      peer_.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
      worker_.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
    }
    std::string peers, clients;
    for (int r = 0; r < kSnapClusterReplicas; ++r) {
      peers += (r ? "," : "") + std::to_string(r + 1) + "=" + peer_[r];
      clients += (r ? "," : "") + std::to_string(r + 1) + "=" + client_[r];
    }
    for (int i = 0; i < kSnapClusterReplicas; ++i) {
      std::vector<std::string> argv = {GPOOL_COORDINATOR_BIN, "--insecure", "--id", std::to_string(i + 1), "--peers",
                                       peers, "--peer-clients", clients, "--data-dir",
                                       dir_ + "/c" + std::to_string(i + 1), "--client-addr", client_[i],
                                       "--worker-addr", worker_[i], "--heartbeat-ms", "200",
                                       "--snapshot-every", std::to_string(snapshot_every)};
      if (on_loop) argv.push_back("--snapshot-on-loop");
      pids_.push_back(Spawn(argv, dir_ + "/c" + std::to_string(i + 1) + ".log"));
    }
  }
  ~SnapCluster() {
    for (pid_t pid : pids_) Kill(pid, SIGKILL);
    std::filesystem::remove_all(dir_);
  }
  // Lines of every replica's log that contain `text`.
  int CountInLogs(const std::string& text) const {
    int count = 0;
    for (int i = 0; i < kSnapClusterReplicas; ++i) {
      std::ifstream log(dir_ + "/c" + std::to_string(i + 1) + ".log");
      for (std::string line; std::getline(log, line);) count += line.find(text) != std::string::npos;
    }
    return count;
  }
  std::string endpoints() const {
    std::string out;
    for (const auto& e : client_) out += (out.empty() ? "" : ",") + e;
    return out;
  }

 private:
  std::string dir_;
  std::vector<std::string> client_, peer_, worker_;
  std::vector<pid_t> pids_;
};

void RunSnapMode(const std::string& mode, const SnapClusterOptions& options, const std::string& dir) {
  SnapCluster cluster(dir, mode == "on_loop", options.snapshot_every);
  const std::string endpoints = cluster.endpoints();
  auto observer = ConnectOrExit(endpoints, 5'000);
  auto term = [&]() -> uint64_t {
    for (int i = 0; i < 200; ++i) {
      auto status = observer->ClusterStatus();
      if (status.ok() && status->role == "leader") return status->term;
      usleep(50'000);
    }
    std::fprintf(stderr, "no leader; logs in %s\n", dir.c_str());
    std::exit(1);
  };
  (void)term();

  // Fill.
  const auto fill_start = SteadyClock::now();
  std::atomic<uint64_t> next{0};
  std::vector<std::thread> fillers;
  for (int t = 0; t < 8; ++t) {
    fillers.emplace_back([&, t] {
      auto client = ConnectOrExit(endpoints, 5'000);
      for (uint64_t i; (i = next++) < options.jobs;) {
        const std::string name = "fill-" + std::to_string(i);
        (void)client->Submit(SnapJob(name, options.env_vars), "key-" + name);
      }
      (void)t;
    });
  }
  for (auto& f : fillers) f.join();
  SnapPrint("fill_ms", Ms(SteadyClock::now() - fill_start), "ms", mode);

  // Load through both phases.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<SnapAck> acks;  // guarded by mu
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&, t] {
      auto client = ConnectOrExit(endpoints, 10'000);
      for (int i = 0; !stop; ++i) {
        const std::string name = "load-" + std::to_string(t) + "-" + std::to_string(i);
        const auto sent = SteadyClock::now();
        if (!client->Submit(SnapJob(name, 1), "key-" + name).ok()) continue;
        std::lock_guard<std::mutex> lock(mu);
        acks.push_back(SnapAck{sent, SteadyClock::now()});
      }
    });
  }
  const uint64_t term_before = term();
  const auto idle_start = SteadyClock::now();
  std::this_thread::sleep_until(idle_start + std::chrono::seconds(options.seconds));
  const auto busy_start = SteadyClock::now();
  const auto busy_end = busy_start + std::chrono::seconds(options.seconds);
  double export_max_ms = 0;
  uint64_t snapshot_bytes = 0;
  int exports = 0;
  int export_errors = 0;
  auto exporter = ConnectOrExit(endpoints, 60'000);
  while (SteadyClock::now() < busy_end) {
    const auto started = SteadyClock::now();
    gpool::ExportSnapshot request;
    request.max_bytes = 4u << 20;
    auto chunk = exporter->ExportSnapshot(request);
    bool ok = chunk.ok();
    while (ok && chunk->offset + chunk->data.size() < chunk->total_bytes) {
      request.export_id = chunk->export_id;
      request.offset = chunk->offset + chunk->data.size();
      chunk = exporter->ExportSnapshot(request);
      ok = chunk.ok();
    }
    if (ok) {
      ++exports;
      snapshot_bytes = chunk->total_bytes;
      export_max_ms = std::max(export_max_ms, Ms(SteadyClock::now() - started));
    } else {
      ++export_errors;
      std::fprintf(stderr, "export failed: %s\n", chunk.status().ToString().c_str());
    }
    std::this_thread::sleep_until(started + std::chrono::milliseconds(options.export_every_ms));
  }
  const auto busy_done = SteadyClock::now();
  stop = true;
  for (auto& s : submitters) s.join();
  const uint64_t term_after = term();

  std::vector<double> idle, busy;
  std::vector<SteadyClock::time_point> ack_times;
  for (const SnapAck& ack : acks) {
    if (ack.sent >= idle_start && ack.sent < busy_start) idle.push_back(Ms(ack.acked - ack.sent));
    if (ack.sent >= busy_start && ack.sent < busy_done) busy.push_back(Ms(ack.acked - ack.sent));
    if (ack.acked >= idle_start && ack.acked < busy_done) ack_times.push_back(ack.acked);
  }
  std::sort(ack_times.begin(), ack_times.end());
  std::vector<double> gaps;
  for (size_t i = 1; i < ack_times.size(); ++i) gaps.push_back(Ms(ack_times[i] - ack_times[i - 1]));
  SnapPrint("leader_changes", static_cast<double>(term_after - term_before), "count", mode);
  SnapPrint("commit_latency_ms_p99_idle", Percentile(idle, 0.99), "ms", mode);
  SnapPrint("commit_latency_ms_p99_busy", Percentile(busy, 0.99), "ms", mode);
  SnapPrint("commit_latency_ms_max_busy", Percentile(busy, 1.0), "ms", mode);
  SnapPrint("commits_idle", static_cast<double>(idle.size()), "count", mode);
  SnapPrint("commits_busy", static_cast<double>(busy.size()), "count", mode);
  SnapPrint("ack_gap_ms_p99", Percentile(gaps, 0.99), "ms", mode);
  SnapPrint("ack_gap_ms_max", Percentile(gaps, 1.0), "ms", mode);
  SnapPrint("exports", exports, "count", mode);
  SnapPrint("export_errors", export_errors, "count", mode);
  SnapPrint("export_ms_max", export_max_ms, "ms", mode);
  SnapPrint("snapshot_bytes", static_cast<double>(snapshot_bytes), "bytes", mode);
  // Periodic snapshots over the whole run, every replica (docs/operations.md 6.1).
  SnapPrint("periodic_snapshots_saved", cluster.CountInLogs("snapshot saved"), "count", mode);
}

}  // namespace

int main(int argc, char** argv) {
  SnapClusterOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--jobs") options.jobs = static_cast<uint64_t>(value);
    else if (flag == "--env-vars") options.env_vars = static_cast<uint32_t>(value);
    else if (flag == "--seconds") options.seconds = value;
    else if (flag == "--export-every-ms") options.export_every_ms = value;
    else if (flag == "--snapshot-every") options.snapshot_every = static_cast<uint64_t>(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (options.seconds <= 0 || options.export_every_ms <= 0 || options.snapshot_every == 0) {
    std::fprintf(stderr, "--seconds, --export-every-ms and --snapshot-every must be > 0\n");
    return 2;
  }
  char params[256];
  std::snprintf(params, sizeof(params),
                "\"jobs\": %llu, \"env_vars\": %u, \"seconds\": %lld, \"export_every_ms\": %lld, "
                "\"snapshot_every\": %llu",
                static_cast<unsigned long long>(options.jobs), options.env_vars,
                static_cast<long long>(options.seconds), static_cast<long long>(options.export_every_ms),
                static_cast<unsigned long long>(options.snapshot_every));
  g_snap_params = params;
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gpool-bench-snapshot-cluster-" + std::to_string(getpid()))).string();
  for (const std::string mode : {"on_loop", "fork"}) RunSnapMode(mode, options, dir + "/" + mode);
  std::filesystem::remove_all(dir);
  return 0;
}
