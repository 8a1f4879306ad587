// gpool-bench-health: how fast the cluster heals, on loopback.
//
//   health_detect_ms      from an injected fatal XID (the fake NVML's fault
//                         file) to the committed cordon, as a client sees it
//                         (value: p50; params: p99_ms, trials).
//   node_loss_requeue_ms  from a worker's kill -9 to its task running again
//                         elsewhere as the next attempt (value: p50; params:
//                         p99_ms, double_runs = trials where the old task's
//                         process was still alive when the new one ran, the
//                         lease and grace it ran under).
// Baseline in the same run: heartbeat_rtt_ms, a client round trip to the same
// coordinator (ClusterStatus), so the ratios survive a noisy machine.
//
// Prints JSON lines {"metric", "value", "unit", "params"}.
// Usage: gpool-bench-health [xid_trials=20] [loss_trials=5]
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_process.h"
#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"

namespace {

using gpool::bench::Kill;
using gpool::bench::Ms;
using gpool::bench::Percentile;
using gpool::bench::ReservePort;
using gpool::bench::Spawn;
using gpool::bench::SteadyClock;

constexpr int kWorkers = 3;
constexpr int64_t kLeaseMs = 2000;
constexpr int64_t kLostMs = 7000;

bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

struct Cluster {
  std::string dir;
  std::string client = "tcp://127.0.0.1:" + std::to_string(ReservePort());
  std::string worker = "tcp://127.0.0.1:" + std::to_string(ReservePort());
  pid_t coordinator = -1;
  pid_t workers[kWorkers] = {-1, -1, -1};

  Cluster() {
    char tmpl[] = "/tmp/gpool-bench-health-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~Cluster() {
    for (pid_t w : workers) Kill(w, SIGTERM);
    Kill(coordinator, SIGTERM);
  }
  std::string Faults(int i) const { return dir + "/faults-" + std::to_string(i); }
  std::string Node(int i) const { return "node-" + std::to_string(i); }

  void StartCoordinator() {
    coordinator = Spawn({GPOOL_COORDINATOR_BIN, "--insecure", "--data-dir", dir + "/c", "--client-addr", client, "--worker-addr",
                         worker, "--heartbeat-ms", "200", "--node-timeout-ms", "1000", "--node-lease-ms",
                         std::to_string(kLeaseMs), "--node-lost-ms", std::to_string(kLostMs)},
                        dir + "/c.log");
  }
  void StartWorker(int i) {
    const std::string spec = dir + "/" + Node(i) + ".yaml";
    std::ofstream(spec) << "name: " << Node(i) << "\ncpus: 64\nmemory: 512Gi\ngpus:\n  count: 4\n  model: A100\n"
                        << "  memory: 80Gi\n";
    std::ofstream(Faults(i), std::ios::app);
    // env(1) gives the worker its fault file and execs it: same pid.
    workers[i] = Spawn({"/usr/bin/env", "FAKE_NVML_HEALTH_FILE=" + Faults(i), GPOOL_WORKER_BIN, "--insecure", "--coordinator",
                        worker, "--spec", spec, "--data-dir", dir + "/w" + std::to_string(i), "--nvml-library",
                        GPOOL_FAKE_NVML_LIB, "--health-xid-hold-ms", "200"},
                       dir + "/" + Node(i) + ".log");
  }
};

std::unique_ptr<gpool::Client> Connect(const std::string& endpoint) {
  gpool::ClientOptions options;
  options.endpoints = endpoint;
  options.timeout_ms = 2000;
  options.retries = 20;
  auto client = gpool::Client::Connect(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(client).value();
}

template <typename F>
bool Until(F&& condition, int64_t timeout_ms) {
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  while (SteadyClock::now() < deadline) {
    if (condition()) return true;
    usleep(2000);
  }
  return false;
}

std::optional<gpool::NodeSummary> NodeOf(gpool::Client& client, const std::string& name) {
  auto nodes = client.ListNodes();
  if (!nodes.ok()) return std::nullopt;
  for (auto& n : nodes->nodes) {
    if (n.name == name) return n;
  }
  return std::nullopt;
}

void Report(const char* metric, const std::vector<double>& v, const std::string& extra) {
  std::printf("{\"metric\": \"%s\", \"value\": %.1f, \"unit\": \"ms\", \"params\": {\"p99_ms\": %.1f, \"trials\": %zu%s}}\n",
              metric, Percentile(v, 0.5), Percentile(v, 0.99), v.size(), extra.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int xid_trials = argc > 1 ? std::atoi(argv[1]) : 20;
  const int loss_trials = argc > 2 ? std::atoi(argv[2]) : 5;
  if (xid_trials < 1 || loss_trials < 0) {
    std::fprintf(stderr, "usage: gpool-bench-health [xid_trials=20] [loss_trials=5]\n");
    return 2;
  }
  Cluster cluster;
  cluster.StartCoordinator();
  for (int i = 0; i < kWorkers; ++i) cluster.StartWorker(i);
  auto client = Connect(cluster.client);
  if (!Until([&] {
        for (int i = 0; i < kWorkers; ++i) {
          auto n = NodeOf(*client, cluster.Node(i));
          if (!n || n->state != "Ready") return false;
        }
        return true;
      },
      30'000)) {
    std::fprintf(stderr, "cluster did not come up; logs in %s\n", cluster.dir.c_str());
    return 1;
  }

  // Baseline: a client round trip to the same coordinator.
  std::vector<double> rtt;
  for (int i = 0; i < 50; ++i) {
    const auto start = SteadyClock::now();
    if (client->ClusterStatus().ok()) rtt.push_back(Ms(SteadyClock::now() - start));
  }
  Report("client_rtt_ms", rtt, "");

  // Detection: inject, wait for the cordon, wait for the automatic uncordon.
  std::vector<double> detect;
  for (int t = 0; t < xid_trials; ++t) {
    const int node = t % kWorkers;
    const auto start = SteadyClock::now();
    std::ofstream(cluster.Faults(node), std::ios::app) << "xid " << (t % 4) << " 79\n";
    if (!Until([&] { auto n = NodeOf(*client, cluster.Node(node)); return n && n->cordoned; }, 20'000)) {
      std::fprintf(stderr, "trial %d: node %d never cordoned; logs in %s\n", t, node, cluster.dir.c_str());
      return 1;
    }
    detect.push_back(Ms(SteadyClock::now() - start));
    if (!Until([&] { auto n = NodeOf(*client, cluster.Node(node)); return n && !n->cordoned; }, 60'000)) {
      std::fprintf(stderr, "trial %d: node %d never uncordoned\n", t, node);
      return 1;
    }
  }
  Report("health_detect_ms", detect, "");

  // Node loss: a one-task job; kill -9 its worker; time until attempt+1 runs
  // elsewhere. The killed worker is restarted for the next trial.
  std::vector<double> requeue;
  int double_runs = 0;
  for (int t = 0; t < loss_trials; ++t) {
    gpool::JobSpec spec;
    spec.name = "loss-" + std::to_string(t);
    gpool::TaskGroupSpec group;
    group.command = {"sleep", "1000"};
    group.resources.gpus = 4;
    spec.tasks.push_back(group);
    auto job = client->Submit(spec, "");
    if (!job.ok()) return 1;
    const gpool::JobId id(job->job_id);
    gpool::TaskInfo first;
    if (!Until([&] {
          auto d = client->GetJob(id);
          if (!d.ok() || d->tasks[0].state != "Running") return false;
          first = d->tasks[0];
          return true;
        },
        30'000)) {
      return 1;
    }
    int victim = -1;
    for (int i = 0; i < kWorkers; ++i) victim = cluster.Node(i) == first.node ? i : victim;
    const auto start = SteadyClock::now();
    Kill(cluster.workers[victim], SIGKILL);
    gpool::TaskInfo next;
    if (!Until([&] {
          auto d = client->GetJob(id);
          if (!d.ok() || d->tasks[0].attempt != first.attempt + 1 || d->tasks[0].state != "Running") return false;
          next = d->tasks[0];
          return true;
        },
        kLostMs + 60'000)) {
      std::fprintf(stderr, "trial %d: never requeued; logs in %s\n", t, cluster.dir.c_str());
      return 1;
    }
    requeue.push_back(Ms(SteadyClock::now() - start));
    if (Alive(static_cast<pid_t>(first.pid))) ++double_runs;
    (void)client->CancelJob(id, 0);
    cluster.StartWorker(victim);
    Until([&] { auto n = NodeOf(*client, cluster.Node(victim)); return n && n->state == "Ready"; }, 30'000);
  }
  if (loss_trials > 0) {
    Report("node_loss_requeue_ms", requeue,
           ", \"double_runs\": " + std::to_string(double_runs) + ", \"lease_ms\": " + std::to_string(kLeaseMs) +
               ", \"node_lost_ms\": " + std::to_string(kLostMs));
  }
  return 0;
}
