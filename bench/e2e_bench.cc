// gpool-bench-e2e: the whole control plane end to end on this machine.
//
// Three real gpool-coordinator replicas (Raft, fsync) and ONE gpool-worker
// in fleet mode (`--simulate N --spec worker/examples/node-8gpu.yaml`: N
// simulated 8-GPU nodes, each with its own connection; tasks are simulated,
// so no process is forked per task), all on 127.0.0.1 with ports reserved
// up front. The coordinators' data dirs are in the temp dir (their fsyncs
// count); the fleet's (task logs) is on tmpfs where there is one (FleetDir). Once all N nodes are Ready it measures, in this order:
//
//   baseline   a raw ZeroMQ DEALER/ROUTER round trip on loopback (p50);
//   latency    submit-to-running on an idle cluster: one 1-GPU job at a
//              time, from the Submit call until GetJob shows its task
//              Running (or already Succeeded: it ran). GetJob is polled
//              back to back; there is no watch in the client API. Reported
//              as p50 and p99, and p50 over the ZeroMQ round trip;
//   submit     submissions/s accepted: `clients` threads submit small
//              one-task jobs (0 GPUs, `true`) without pause for `seconds`;
//   drain      10 small jobs per node submitted to a queue held at a
//              capability of 1 millicore (they wait), then released by one
//              queue update: jobs run to completion per second from the
//              update until the cluster is idle, and the nodes that left
//              Ready meanwhile (0 expected), with the CPU seconds the
//              leader, the followers and the workers used over it
//              (leader_cpu_ms_per_1000_jobs: the leader's cost per job,
//              which a loaded machine's wall time hides; "leader": the
//              replica leading at the release), and the leader's CPU while
//              the backlog was submitted (backlog_submit_leader_cpu_s);
//   placement  placements/s bound: once the cluster is idle again, `jobs`
//              jobs of `tasks_per_job` 1-GPU tasks (`sleep 3600`) are
//              submitted at once from one thread each; from the first
//              submit until ClusterStatus counts every task's GPU used
//              (bound: the placement is committed) and until ListJobs
//              counts every task running (the workers reported them started
//              and that is committed).
//
// Every phase reports the Raft terms it started and ended in
// ("term_changes"): a leader change inside a measurement (an overloaded
// leader missing its heartbeats) shows there rather than as a slow number.
//
// With --real-workers N the fleet is replaced by N real gpool-worker
// processes (one node each, the same 8-GPU spec, named real-0001...) that
// start every task as a real process under its supervisor (cgroups, PID
// namespace, its user when run as root), so a regression in the real start
// path shows here too. The placement phase then fills 80 % of their GPUs
// with `sleep` tasks and cancels them afterwards, and the drain phase
// releases 500 jobs per worker.
//
// Usage: gpool-bench-e2e [nodes=1000] [seconds=5] [latency_samples=200]
//        gpool-bench-e2e --real-workers N [seconds=5] [latency_samples=200]
// Prints JSON lines {"metric", "value", "unit", "params"}; progress goes to
// stderr. Every process started is killed on exit, failures included
// (children also die with the bench: PR_SET_PDEATHSIG). GPOOL_BENCH_KEEP=1
// keeps the logs; GPOOL_BENCH_LOG=info (or debug) sets the coordinators'
// log level (default warn); GPOOL_BENCH_COORDINATOR_ARGS adds flags to every
// replica's command line (split at spaces).
//
// Profiling the drain: --drain-only skips the latency and submit phases (the
// cluster starts, the backlog is queued and released, then placement runs).
// GPOOL_BENCH_PERF_DRAIN=FILE runs `perf record -g -p <leader pid> -o FILE`
// from the release until the cluster is idle again, so the profile holds the
// leader's drain and nothing else (`perf report -i FILE --no-children`).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bench/bench_jobs.h"
#include "bench/bench_process.h"
#include "bench/fleet_dir.h"
#include "bench/zmq_baseline.h"
#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/model/queue_update.h"

using gpool::bench::SimpleJob;

namespace {

using namespace gpool::bench;  // NOLINT: the shared bench helpers
constexpr int kReplicas = 3;

bool WaitUntil(const std::function<bool()>& done, double seconds, int poll_ms = 5) {
  const auto end = SteadyClock::now() + std::chrono::duration<double>(seconds);
  while (SteadyClock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  return false;
}

// The processes of one run; the destructor stops them whatever happened.
struct Cluster {
  std::string dir;
  std::string fleet_dir;  // the fleet's data dir (its nodes' task logs)
  std::vector<std::string> client, worker, peer;
  std::vector<pid_t> pids;

  ~Cluster() {
    for (pid_t pid : pids) kill(pid, SIGTERM);
    for (pid_t pid : pids) {
      // A bounded wait, then SIGKILL: a stuck process must not hang the bench.
      bool gone = false;
      for (int i = 0; i < 500 && !gone; ++i) {
        gone = waitpid(pid, nullptr, WNOHANG) == pid;
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!gone) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
    if (std::getenv("GPOOL_BENCH_KEEP") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      std::filesystem::remove_all(fleet_dir, ec);
    } else {
      std::fprintf(stderr, "logs kept in %s (the fleet's task logs in %s)\n", dir.c_str(), fleet_dir.c_str());
    }
  }

  static std::string Join(const std::vector<std::string>& eps) {
    std::string out;
    for (const auto& e : eps) out += (out.empty() ? "" : ",") + e;
    return out;
  }

  // GPOOL_BENCH_COORDINATOR_ARGS: more flags for every replica, split at
  // spaces (e.g. "--election-timeout-ms 2000" on a loaded machine, where
  // elections would otherwise change the work a phase measures).
  static std::vector<std::string> ExtraCoordinatorArgs() {
    std::vector<std::string> out;
    const char* extra = std::getenv("GPOOL_BENCH_COORDINATOR_ARGS");
    std::string word;
    for (const char* c = extra ? extra : ""; ; ++c) {
      if (*c == ' ' || *c == '\0') {
        if (!word.empty()) out.push_back(std::move(word));
        word.clear();
        if (*c == '\0') break;
      } else {
        word += *c;
      }
    }
    return out;
  }

  void StartReplicas() {
    std::string peers, clients, workers;
    for (int r = 0; r < kReplicas; ++r) {
      const std::string id = std::to_string(r + 1);
      peers += (r ? "," : "") + id + "=" + peer[r];
      clients += (r ? "," : "") + id + "=" + client[r];
      workers += (r ? "," : "") + id + "=" + worker[r];
    }
    for (int i = 0; i < kReplicas; ++i) {
      const std::string name = dir + "/c" + std::to_string(i + 1);
      std::vector<std::string> argv = {
          GPOOL_COORDINATOR_BIN, "--insecure", "--id", std::to_string(i + 1), "--peers", peers, "--peer-clients",
          clients, "--peer-workers", workers, "--data-dir", name, "--client-addr", client[i], "--worker-addr",
          worker[i], "--heartbeat-ms", "1000", "--node-timeout-ms", "10000", "--log-level",
          (std::getenv("GPOOL_BENCH_LOG") ? std::getenv("GPOOL_BENCH_LOG") : "warn")};
      for (std::string& arg : ExtraCoordinatorArgs()) argv.push_back(std::move(arg));
      pids.push_back(Spawn(argv, name + ".log"));
    }
  }

  // N real workers, one node each.
  void StartWorkers(int count, const std::string& spec) {
    for (int i = 0; i < count; ++i) {
      const std::string name = RealNodeName(i);
      pids.push_back(Spawn({GPOOL_WORKER_BIN, "--insecure", "--spec", spec, "--node-name", name, "--coordinator",
                            Join(worker), "--data-dir", fleet_dir + "/" + name, "--log-level", "warn"},
                           dir + "/" + name + ".log"));
    }
  }

  static std::string RealNodeName(int index) {
    char name[32];
    std::snprintf(name, sizeof(name), "real-%04d", index + 1);
    return name;
  }

  void StartFleet(int nodes, const std::string& spec) {
    pids.push_back(Spawn({GPOOL_WORKER_BIN, "--insecure", "--simulate", std::to_string(nodes), "--spec", spec, "--coordinator",
                          Join(worker), "--data-dir", fleet_dir, "--log-level", "warn"},
                         dir + "/fleet.log"));
  }
};

std::unique_ptr<gpool::Client> Connect(const std::string& endpoints, int timeout_ms = 5000) {
  gpool::ClientOptions options;
  options.endpoints = endpoints;
  options.timeout_ms = timeout_ms;
  options.retries = 10;
  auto client = gpool::Client::Connect(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(client).value();
}

// Where the fleet keeps its nodes' task logs: GPOOL_BENCH_FLEET_DIR, else
// tmpfs (/dev/shm) when there is one, else the temp dir. The fleet stands for
// a thousand machines, each writing its own tasks' logs to its own disk; on
// one shared ext4 file system those thousands of file creations in a burst
// were serialized behind its inode allocator (perf: 78 % of the fleet's time
// in __ext4_new_inode), and the fleet fell seconds behind the coordinators
// it is there to load. The coordinators' data dirs stay in the temp dir:
// their fsyncs are part of what is measured.
std::string FleetDir() {
  const std::string leaf = "gpool-bench-e2e-fleet-" + std::to_string(getpid());
  return BenchFleetDir(leaf, (std::filesystem::temp_directory_path() / leaf).string());
}

// The leader's Raft term as the cluster reports it; 0 if it cannot tell.
uint64_t Term(gpool::Client& client) {
  auto status = client.ClusterStatus();
  return status.ok() ? status->term : 0;
}

// Nothing pending, running or holding a GPU. `fewest_ready`, when given,
// keeps the fewest Ready nodes seen.
bool Idle(gpool::Client& client, uint32_t* fewest_ready = nullptr) {
  auto status = client.ClusterStatus();
  if (status.ok() && fewest_ready != nullptr && status->role == "leader") {
    *fewest_ready = std::min(*fewest_ready, status->nodes_ready);
  }
  return status.ok() && status->role == "leader" && status->jobs_pending == 0 && status->jobs_running == 0 &&
         status->gpus_used == 0;
}

// CPU seconds (user + system) `pid` has used so far; 0 if unreadable.
// Under a loaded machine the drain's wall time says little, but the CPU the
// leader spent per drained job still compares builds (issue 49).
double CpuSeconds(pid_t pid) {
  FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (file == nullptr) return 0;
  char buffer[1024];
  const size_t size = std::fread(buffer, 1, sizeof(buffer) - 1, file);
  std::fclose(file);
  buffer[size] = '\0';
  // Fields after the command (in parentheses, which may hold spaces): the
  // 14th and 15th of the line are utime and stime, in clock ticks.
  const char* rest = std::strrchr(buffer, ')');
  unsigned long long utime = 0, stime = 0;
  if (rest == nullptr ||
      std::sscanf(rest + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) {
    return 0;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The replica answering as leader, 1-based; 0 when none answers so.
int LeaderReplica(gpool::Client& observer, const Cluster& cluster) {
  auto status = observer.ClusterStatus();
  const int id = status.ok() && status->role == "leader" ? std::atoi(status->replica_id.c_str()) : 0;
  return id >= 1 && id <= kReplicas && id <= static_cast<int>(cluster.pids.size()) ? id : 0;
}

// GPOOL_BENCH_PERF_DRAIN=FILE: `perf record -g` attached to the leader for
// the drain; its pid (0 when not asked or the leader is unknown). Returns once
// perf has created FILE (it is attached then), or after 10 s.
pid_t StartDrainProfile(gpool::Client& observer, const Cluster& cluster) {
  const char* file = std::getenv("GPOOL_BENCH_PERF_DRAIN");
  if (file == nullptr) return 0;
  const int id = LeaderReplica(observer, cluster);
  if (id == 0) {
    std::fprintf(stderr, "GPOOL_BENCH_PERF_DRAIN: no leader to profile\n");
    return 0;
  }
  std::error_code ec;
  std::filesystem::remove(file, ec);
  const pid_t perf = Spawn({"/usr/bin/perf", "record", "-g", "-p", std::to_string(cluster.pids[id - 1]), "-o", file},
                           cluster.dir + "/perf.log");
  WaitUntil([&] { return std::filesystem::exists(file); }, 10, 10);
  std::fprintf(stderr, "profiling the leader (replica %d, pid %d) into %s\n", id, cluster.pids[id - 1], file);
  return perf;
}

void StopDrainProfile(pid_t perf) {
  if (perf <= 0) return;
  kill(perf, SIGINT);  // perf writes its file out on SIGINT
  waitpid(perf, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  int real_workers = 0;
  bool drain_only = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--drain-only") {
      drain_only = true;
    } else if (std::string(argv[i]) == "--real-workers" && i + 1 < argc) {
      real_workers = std::atoi(argv[++i]);
      if (real_workers <= 0 || real_workers > 64) {
        std::fprintf(stderr, "--real-workers: 1-64 worker processes\n");
        return 2;
      }
    } else {
      args.push_back(argv[i]);
    }
  }
  const bool real = real_workers > 0;
  // With --real-workers there is no `nodes` argument: the workers are the nodes.
  if (real) args.insert(args.begin(), std::to_string(real_workers));
  const int nodes = args.size() > 0 ? std::atoi(args[0].c_str()) : 1000;
  const double seconds = args.size() > 1 ? std::atof(args[1].c_str()) : 5.0;
  const int samples = args.size() > 2 ? std::atoi(args[2].c_str()) : 200;
  if (nodes <= 0 || nodes > 10000 || seconds <= 0 || samples <= 0) {
    std::fprintf(stderr,
                 "usage: gpool-bench-e2e [nodes=1000 (1-10000)] [seconds=5] [latency_samples=200]\n"
                 "       gpool-bench-e2e --real-workers N [seconds=5] [latency_samples=200]\n");
    return 2;
  }
  const char* mode = real ? "real-workers" : "fleet";
  // 80 % of the cluster's GPUs, in jobs of up to 100 tasks, for the placement run.
  const int gpus_to_fill = nodes * 8 * 8 / 10;
  const int tasks_per_job = std::min(100, gpus_to_fill);
  const int placement_jobs = std::max(1, gpus_to_fill / tasks_per_job);
  const int clients = 64;  // closed-loop clients: enough that commit latency, not their number, limits the rate
  const int drain_jobs = real ? 500 * nodes : 10 * nodes;  // the backlog released at once in the drain phase

  Cluster cluster;
  cluster.dir = (std::filesystem::temp_directory_path() / ("gpool-bench-e2e-" + std::to_string(getpid()))).string();
  cluster.fleet_dir = FleetDir();
  std::filesystem::create_directories(cluster.dir);
  for (int i = 0; i < kReplicas; ++i) {
    cluster.client.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
    cluster.worker.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
    cluster.peer.push_back("tcp://127.0.0.1:" + std::to_string(ReservePort()));
  }
  const std::string spec = std::string(GPOOL_WORKER_EXAMPLES_DIR) + "/node-8gpu.yaml";
  const auto cluster_start = SteadyClock::now();
  cluster.StartReplicas();
  if (real) {
    cluster.StartWorkers(nodes, spec);
  } else {
    cluster.StartFleet(nodes, spec);
  }
  const std::string endpoints = Cluster::Join(cluster.client);
  auto observer = Connect(endpoints);

  uint32_t ready = 0;
  if (!WaitUntil(
          [&] {
            auto status = observer->ClusterStatus();
            ready = status.ok() ? status->nodes_ready : 0;
            return status.ok() && status->role == "leader" && ready == static_cast<uint32_t>(nodes);
          },
          180, 50)) {
    std::fprintf(stderr, "only %u of %d nodes became ready; logs in %s (GPOOL_BENCH_KEEP=1 keeps them)\n", ready,
                 nodes, cluster.dir.c_str());
    return 1;
  }
  const double registration_s = Ms(SteadyClock::now() - cluster_start) / 1000.0;
  std::printf("{\"metric\": \"fleet_ready_s\", \"value\": %.2f, \"unit\": \"s\", \"params\": {\"nodes\": %d, \"mode\": \"%s\", "
              "\"gpus_per_node\": 8, \"replicas\": %d, \"worker_processes\": %d, \"heartbeat_ms\": 1000, "
              "\"fleet_data_dir\": \"%s\", \"coordinator_data_dir\": \"%s\"}}\n",
              registration_s, nodes, mode, kReplicas, real ? nodes : 1, std::filesystem::path(cluster.fleet_dir).parent_path().c_str(),
              std::filesystem::path(cluster.dir).parent_path().c_str());
  std::fflush(stdout);

  // Baseline.
  const std::vector<double> rtt = ZmqRoundTripUs(1.0);
  const double rtt_p50_us = Percentile(rtt, 0.5);
  std::printf("{\"metric\": \"zmq_round_trip_p50\", \"value\": %.1f, \"unit\": \"us\", \"params\": {\"p99_us\": %.1f}}\n",
              rtt_p50_us, Percentile(rtt, 0.99));
  std::fflush(stdout);

  // Submit-to-running on an idle cluster, one job at a time.
  if (!drain_only) {
    std::vector<double> latency_ms;
    uint64_t latency_errors = 0;
    const uint64_t latency_term = Term(*observer);
    {
      auto client = Connect(endpoints);
      const gpool::JobSpec job = SimpleJob("latency", 1, 1, {"true"});
      for (int i = 0; i < samples; ++i) {
        if (!WaitUntil([&] { return Idle(*observer); }, 30, 2)) {
          ++latency_errors;
          continue;
        }
        const auto start = SteadyClock::now();
        auto submitted = client->Submit(job, "");
        if (!submitted.ok()) {
          ++latency_errors;
          continue;
        }
        bool running = false;
        const auto deadline = start + std::chrono::seconds(30);
        while (!running && SteadyClock::now() < deadline) {
          auto got = client->GetJob(gpool::JobId(submitted->job_id));
          running = got.ok() && !got->tasks.empty() &&
                    (got->tasks[0].state == "Running" || got->tasks[0].state == "Succeeded");
        }
        if (!running) {
          ++latency_errors;
          continue;
        }
        latency_ms.push_back(Ms(SteadyClock::now() - start));
      }
    }
    const double p50 = Percentile(latency_ms, 0.5);
    const double p99 = Percentile(latency_ms, 0.99);
    const uint64_t latency_term_changes = Term(*observer) - latency_term;
    std::printf("{\"metric\": \"submit_to_running_p50\", \"value\": %.2f, \"unit\": \"ms\", \"params\": {\"nodes\": %d, \"mode\": \"%s\", "
                "\"replicas\": %d, \"samples\": %zu, \"errors\": %llu, \"signal\": \"GetJob polled back to back\", "
                "\"zmq_round_trip_p50_us\": %.1f, \"ratio_to_zmq_round_trip\": %.1f}}\n",
                p50, nodes, mode, kReplicas, latency_ms.size(), static_cast<unsigned long long>(latency_errors), rtt_p50_us,
                p50 * 1000.0 / std::max(1.0, rtt_p50_us));
    std::printf("{\"metric\": \"submit_to_running_p99\", \"value\": %.2f, \"unit\": \"ms\", \"params\": {\"nodes\": %d, \"mode\": \"%s\", "
                "\"replicas\": %d, \"samples\": %zu, \"max_ms\": %.2f, \"target_ms\": 50, \"job\": \"1 task, 1 GPU\", "
                "\"term_changes\": %llu}}\n",
                p99, nodes, mode, kReplicas, latency_ms.size(),
                latency_ms.empty() ? 0.0 : *std::max_element(latency_ms.begin(), latency_ms.end()),
                static_cast<unsigned long long>(latency_term_changes));
    std::fflush(stdout);

    // Submissions per second, many clients, small jobs.
    {
      const uint64_t term = Term(*observer);
      std::atomic<uint64_t> accepted{0}, errors{0};
      std::vector<std::thread> threads;
      const auto start = SteadyClock::now();
      const auto end = start + std::chrono::duration<double>(seconds);
      for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&] {
          auto client = Connect(endpoints);
          const gpool::JobSpec job = SimpleJob("small", 1, 0, {"true"});
          while (SteadyClock::now() < end) {
            auto reply = client->Submit(job, "");
            reply.ok() ? ++accepted : ++errors;
          }
        });
      }
      for (auto& t : threads) t.join();
      const double elapsed_s = Ms(SteadyClock::now() - start) / 1000.0;
      std::printf("{\"metric\": \"submissions_per_s\", \"value\": %.0f, \"unit\": \"submissions/s\", \"params\": "
                  "{\"clients\": %d, \"accepted\": %llu, \"errors\": %llu, \"seconds\": %.1f, \"nodes\": %d, \"mode\": \"%s\", "
                  "\"replicas\": %d, \"job\": \"1 task, 0 GPUs, true\", \"term_changes\": %llu}}\n",
                  static_cast<double>(accepted.load()) / elapsed_s, clients,
                  static_cast<unsigned long long>(accepted.load()), static_cast<unsigned long long>(errors.load()),
                  elapsed_s, nodes, mode, kReplicas, static_cast<unsigned long long>(Term(*observer) - term));
      std::fflush(stdout);
    }
  }  // !drain_only
  const auto drain_start = SteadyClock::now();
  uint32_t fewest_ready_after_submit = static_cast<uint32_t>(nodes);
  if (!WaitUntil([&] { return Idle(*observer, &fewest_ready_after_submit); }, 300, 20)) {
    std::fprintf(stderr, "the small jobs did not drain in 300 s; logs in %s\n", cluster.dir.c_str());
    return 1;
  }
  const double small_drain_s = Ms(SteadyClock::now() - drain_start) / 1000.0;
  std::fprintf(stderr, "small jobs drained in %.1f s\n", small_drain_s);

  // Drain: a backlog of small jobs that piled up in a queue held at a
  // capability of 1 millicore, released at once by one queue update: jobs
  // run to completion per second, from the update until the cluster is idle.
  {
    const uint64_t term = Term(*observer);
    gpool::UpdateQueue hold;
    hold.op = gpool::QueueOp::kCreate;
    hold.spec.name = "backlog";
    hold.spec.capability = {{"cpu", 1}};
    if (auto held = observer->UpdateQueue(hold); !held.ok()) {
      std::fprintf(stderr, "cannot create the backlog queue: %s\n", held.status().ToString().c_str());
      return 1;
    }
    // The leader's CPU while the backlog is queued (held: every submission
    // makes a scheduling cycle over all the jobs held so far).
    const int backlog_leader = LeaderReplica(*observer, cluster);
    const double backlog_cpu_before = backlog_leader > 0 ? CpuSeconds(cluster.pids[backlog_leader - 1]) : 0;
    std::atomic<uint64_t> accepted{0}, errors{0};
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&] {
        auto client = Connect(endpoints);
        gpool::JobSpec job = SimpleJob("backlog", 1, 0, {"true"});
        job.queue = "backlog";
        while (next++ < drain_jobs) client->Submit(job, "").ok() ? ++accepted : ++errors;
      });
    }
    for (auto& t : threads) t.join();
    const double backlog_leader_cpu_s =
        backlog_leader > 0 ? CpuSeconds(cluster.pids[backlog_leader - 1]) - backlog_cpu_before : 0;
    gpool::UpdateQueue release = hold;
    release.op = gpool::QueueOp::kUpdate;
    release.spec.capability = {{"cpu", uint64_t{1} << 40}};
    const pid_t perf = StartDrainProfile(*observer, cluster);
    const int leader = LeaderReplica(*observer, cluster);
    std::vector<double> cpu_before;
    for (pid_t pid : cluster.pids) cpu_before.push_back(CpuSeconds(pid));
    const auto start = SteadyClock::now();
    const bool released = observer->UpdateQueue(release).ok();
    const double release_ms = Ms(SteadyClock::now() - start);
    uint32_t fewest_ready = static_cast<uint32_t>(nodes);
    const bool drained = released && WaitUntil([&] { return Idle(*observer, &fewest_ready); }, 300, 5);
    const double drain_ms = Ms(SteadyClock::now() - start);
    StopDrainProfile(perf);
    // CPU the processes used over the drain: the leader's, the followers'
    // together, and the fleet's (real workers: all of them together).
    double leader_cpu_s = 0, followers_cpu_s = 0, workers_cpu_s = 0;
    for (size_t i = 0; i < cluster.pids.size(); ++i) {
      const double used = CpuSeconds(cluster.pids[i]) - cpu_before[i];
      if (static_cast<int>(i) + 1 == leader) {
        leader_cpu_s = used;
      } else if (i < static_cast<size_t>(kReplicas)) {
        followers_cpu_s += used;
      } else {
        workers_cpu_s += used;
      }
    }
    std::printf("{\"metric\": \"drain_jobs_per_s\", \"value\": %.0f, \"unit\": \"jobs/s\", \"params\": "
                "{\"jobs\": %llu, \"submit_errors\": %llu, \"drain_ms\": %.0f, \"release_ms\": %.0f, "
                "\"drained\": %s, \"nodes_left_ready\": %u, \"nodes\": %d, \"mode\": \"%s\", \"replicas\": %d, \"job\": \"1 task, 0 GPUs, true\", "
                "\"target\": 5000, \"small_jobs_drain_after_submit_s\": %.2f, \"nodes_left_ready_after_submit\": %u, \"term_changes\": %llu, "
                "\"leader_cpu_s\": %.2f, \"leader_cpu_ms_per_1000_jobs\": %.1f, \"followers_cpu_s\": %.2f, \"workers_cpu_s\": %.2f, "
                "\"backlog_submit_leader_cpu_s\": %.2f}}\n",
                drained ? static_cast<double>(accepted.load()) / (drain_ms / 1000.0) : 0.0,
                static_cast<unsigned long long>(accepted.load()), static_cast<unsigned long long>(errors.load()),
                drain_ms, release_ms, drained ? "true" : "false", static_cast<uint32_t>(nodes) - fewest_ready, nodes, mode, kReplicas, small_drain_s,
                static_cast<uint32_t>(nodes) - fewest_ready_after_submit,
                static_cast<unsigned long long>(Term(*observer) - term), leader_cpu_s,
                leader_cpu_s * 1e6 / static_cast<double>(std::max<uint64_t>(1, accepted.load())), followers_cpu_s,
                workers_cpu_s, backlog_leader_cpu_s);
    std::fflush(stdout);
    if (!drained) {
      std::fprintf(stderr, "the backlog did not drain in 300 s; logs in %s\n", cluster.dir.c_str());
      return 1;
    }
  }

  // Placements per second: many tasks at once on an idle cluster.
  {
    const uint32_t total = static_cast<uint32_t>(placement_jobs * tasks_per_job);
    const uint64_t term = Term(*observer);
    std::atomic<uint64_t> errors{0};
    std::vector<std::thread> threads;
    const auto start = SteadyClock::now();
    for (int j = 0; j < placement_jobs; ++j) {
      threads.emplace_back([&, j] {
        auto client = Connect(endpoints);
        auto reply = client->Submit(SimpleJob("wide-" + std::to_string(j), tasks_per_job, 1, {"sleep", "3600"}), "");
        if (!reply.ok()) ++errors;
      });
    }
    double submitted_ms = 0, bound_ms = 0, running_ms = 0;
    uint32_t bound = 0, running = 0;
    const bool all_bound = WaitUntil(
        [&] {
          auto status = observer->ClusterStatus();
          bound = status.ok() ? status->gpus_used : bound;
          return bound >= total;
        },
        120, 2);
    bound_ms = Ms(SteadyClock::now() - start);
    for (auto& t : threads) t.join();
    submitted_ms = Ms(SteadyClock::now() - start);
    const bool all_running = all_bound && WaitUntil(
                                              [&] {
                                                auto jobs = observer->ListJobs(false, 0);
                                                if (!jobs.ok()) return false;
                                                running = 0;
                                                for (const auto& job : jobs->jobs) running += job.tasks_running;
                                                return running >= total;
                                              },
                                              120, 2);
    running_ms = Ms(SteadyClock::now() - start);
    const unsigned long long term_changes = Term(*observer) - term;
    std::printf("{\"metric\": \"placements_bound_per_s\", \"value\": %.0f, \"unit\": \"tasks/s\", \"params\": "
                "{\"tasks\": %u, \"bound\": %u, \"jobs\": %d, \"tasks_per_job\": %d, \"gpus_per_task\": 1, "
                "\"gpu_fill_pct\": 80, \"bound_ms\": %.0f, \"submit_calls_done_ms\": %.0f, \"submit_errors\": %llu, "
                "\"nodes\": %d, \"mode\": \"%s\", \"replicas\": %d, \"target\": 10000, \"term_changes\": %llu}}\n",
                all_bound ? total / (bound_ms / 1000.0) : 0.0, total, bound, placement_jobs, tasks_per_job, bound_ms,
                submitted_ms, static_cast<unsigned long long>(errors.load()), nodes, mode, kReplicas, term_changes);
    std::printf("{\"metric\": \"placements_running_per_s\", \"value\": %.0f, \"unit\": \"tasks/s\", \"params\": "
                "{\"tasks\": %u, \"running\": %u, \"running_ms\": %.0f, \"nodes\": %d, \"mode\": \"%s\", \"replicas\": %d, "
                "\"term_changes\": %llu}}\n",
                all_running ? total / (running_ms / 1000.0) : 0.0, total, running, running_ms, nodes, mode, kReplicas,
                term_changes);
    std::fflush(stdout);
  }
  if (real) {
    // Real `sleep` processes: stopped before the workers are, so none
    // outlives the bench (a worker's tasks survive the worker by design).
    if (auto jobs = observer->ListJobs(false, 0); jobs.ok()) {
      for (const auto& job : jobs->jobs) (void)observer->CancelJob(gpool::JobId(job.job_id), 0);
    }
    if (!WaitUntil([&] { return Idle(*observer); }, 60, 20)) {
      std::fprintf(stderr, "the placement jobs did not stop in 60 s; logs in %s\n", cluster.dir.c_str());
      return 1;
    }
  }
  return 0;
}
