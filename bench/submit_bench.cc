// End-to-end submission throughput and latency through a real coordinator
// process (one replica, fsync on every group commit), with the two costs a
// submission cannot avoid measured in the same run as baselines: a raw
// fdatasync on the same disk and a raw ZeroMQ round trip on loopback. The
// series runs twice, plaintext (--insecure) and with CurveZMQ (issue 31).
// Prints JSON lines {"metric", "value", "unit", "params"}.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bench/bench_process.h"
#include "bench/zmq_baseline.h"
#include "client/client.h"
#include "protocol/security/keys.h"

namespace {

using SteadyClock = std::chrono::steady_clock;

struct Latencies {
  std::vector<double> us;
  double Percentile(double p) {
    if (us.empty()) return 0;
    std::sort(us.begin(), us.end());
    size_t i = std::min(us.size() - 1, static_cast<size_t>(p * static_cast<double>(us.size())));
    return us[i];
  }
};

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

Latencies FsyncBaseline(const std::string& dir, double seconds) {
  Latencies lat;
  const std::string path = dir + "/fsync-probe";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return lat;
  char block[128] = {};
  auto end = SteadyClock::now() + std::chrono::duration<double>(seconds);
  while (SteadyClock::now() < end) {
    auto start = SteadyClock::now();
    if (write(fd, block, sizeof(block)) < 0 || fdatasync(fd) != 0) break;
    lat.us.push_back(Seconds(SteadyClock::now() - start) * 1e6);
  }
  close(fd);
  std::filesystem::remove(path);
  return lat;
}

Latencies ZmqRoundTripBaseline(double seconds) { return Latencies{gpool::bench::ZmqRoundTripUs(seconds)}; }

pid_t StartCoordinator(const std::string& bin, const std::string& data_dir, const std::vector<std::string>& security) {
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int log = open((data_dir + ".log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(log, 1);
    dup2(log, 2);
    std::vector<std::string> args = {bin, "--data-dir", data_dir, "--client-addr", "tcp://127.0.0.1:0",
                                     "--worker-addr", "tcp://127.0.0.1:0", "--log-level", "warn"};
    args.insert(args.end(), security.begin(), security.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

gpool::JobSpec SmallJob() {
  gpool::JobSpec spec;
  spec.name = "bench";
  gpool::TaskGroupSpec group;
  group.command = {"true"};
  spec.tasks.push_back(group);
  return spec;
}

}  // namespace

// One coordinator, plaintext or CurveZMQ, at 1, 16 and 64 clients.
int RunSubmissions(const std::string& bin, const std::string& dir, bool curve, double seconds, double fsync_p50,
                   double rtt_p50, double* p50_one_client, double* rate_64) {
  const std::string data_dir = dir + (curve ? "/coordinator-curve" : "/coordinator");
  // CurveZMQ: the coordinator's key pair and the bench user's, admitted as
  // the bootstrap admin; plaintext: --insecure.
  std::vector<std::string> security = {"--insecure"};
  gpool::security::KeyPair user_keys;
  std::string server_key;
  if (curve) {
    auto server = gpool::security::GenerateKeyPair();
    auto user = gpool::security::GenerateKeyPair();
    if (!server.ok() || !user.ok() || !gpool::security::WriteSecretKeyFile(data_dir + ".key", *server).ok() ||
        !gpool::security::WritePublicKeyFile(data_dir + "-user.pub", user->public_key).ok()) {
      std::fprintf(stderr, "cannot make keys in %s\n", dir.c_str());
      return 1;
    }
    user_keys = *user;
    server_key = server->public_key;
    security = {"--key-file", data_dir + ".key", "--admin-key", data_dir + "-user.pub"};
  }
  pid_t coordinator = StartCoordinator(bin, data_dir, security);
  const std::string endpoint = gpool::bench::ClientEndpointOf(data_dir);
  if (endpoint.empty()) {
    std::fprintf(stderr, "coordinator did not start; see %s.log\n", data_dir.c_str());
    kill(coordinator, SIGKILL);
    return 1;
  }

  for (int clients : {1, 16, 64}) {
    std::vector<Latencies> per_thread(clients);
    std::atomic<uint64_t> errors{0};
    std::vector<std::thread> threads;
    const auto end = SteadyClock::now() + std::chrono::duration<double>(seconds);
    const auto start = SteadyClock::now();
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        gpool::ClientOptions options;
        options.endpoints = endpoint;
        if (curve) {
          options.curve_keys = user_keys;
          options.server_keys = {server_key};
        }
        auto client = gpool::Client::Connect(options);
        if (!client.ok()) {
          ++errors;
          return;
        }
        const gpool::JobSpec spec = SmallJob();
        while (SteadyClock::now() < end) {
          auto t0 = SteadyClock::now();
          auto reply = (*client)->Submit(spec, "");
          if (!reply.ok()) {
            ++errors;
            continue;
          }
          per_thread[c].us.push_back(Seconds(SteadyClock::now() - t0) * 1e6);
        }
      });
    }
    for (auto& t : threads) t.join();
    const double elapsed = Seconds(SteadyClock::now() - start);
    Latencies all;
    for (auto& l : per_thread) all.us.insert(all.us.end(), l.us.begin(), l.us.end());
    const double rate = static_cast<double>(all.us.size()) / elapsed;
    const double p50 = all.Percentile(0.5);
    const double p99 = all.Percentile(0.99);
    std::printf(
        "{\"metric\": \"submissions_per_s\", \"value\": %.0f, \"unit\": \"submissions/s\", \"params\": {\"clients\": %d, "
        "\"replicas\": 1, \"fsync\": true, \"curve\": %s, \"p50_us\": %.0f, \"p99_us\": %.0f, \"errors\": %llu, "
        "\"p50_vs_fsync_plus_rtt\": %.2f, \"rate_vs_fsync_rate\": %.2f}}\n",
        rate, clients, curve ? "true" : "false", p50, p99, static_cast<unsigned long long>(errors.load()), p50 / (fsync_p50 + rtt_p50),
        rate / (1e6 / std::max(1.0, fsync_p50)));
    std::fflush(stdout);
    if (clients == 1) *p50_one_client = p50;
    if (clients == 64) *rate_64 = rate;
  }
  kill(coordinator, SIGTERM);
  waitpid(coordinator, nullptr, 0);
  return 0;
}

int main(int argc, char** argv) {
  const std::string bin = argc > 1 ? argv[1] : GPOOL_COORDINATOR_BIN;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  const std::string dir = (std::filesystem::temp_directory_path() / ("gpool-bench-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);

  Latencies fsync = FsyncBaseline(dir, 1.0);
  Latencies rtt = ZmqRoundTripBaseline(1.0);
  const double fsync_p50 = fsync.Percentile(0.5);
  const double rtt_p50 = rtt.Percentile(0.5);
  std::printf("{\"metric\": \"fsync_latency_p50\", \"value\": %.1f, \"unit\": \"us\", \"params\": {\"p99_us\": %.1f, "
              "\"ops\": %zu}}\n",
              fsync_p50, fsync.Percentile(0.99), fsync.us.size());
  std::printf("{\"metric\": \"zmq_round_trip_p50\", \"value\": %.1f, \"unit\": \"us\", \"params\": {\"p99_us\": %.1f}}\n",
              rtt_p50, rtt.Percentile(0.99));

  // Plaintext, then CurveZMQ, against the same disk in one run.
  double plain_p50 = 0, curve_p50 = 0, plain_rate = 0, curve_rate = 0;
  if (int rc = RunSubmissions(bin, dir, false, seconds, fsync_p50, rtt_p50, &plain_p50, &plain_rate); rc != 0) return rc;
  if (int rc = RunSubmissions(bin, dir, true, seconds, fsync_p50, rtt_p50, &curve_p50, &curve_rate); rc != 0) return rc;
  std::printf("{\"metric\": \"submit_curve_p50_cost\", \"value\": %.0f, \"unit\": \"us\", \"params\": {\"clients\": 1, "
              "\"plain_p50_us\": %.0f, \"curve_p50_us\": %.0f, \"plain_per_s_64\": %.0f, \"curve_per_s_64\": %.0f}}\n",
              curve_p50 - plain_p50, plain_p50, curve_p50, plain_rate, curve_rate);
  std::filesystem::remove_all(dir);
  return 0;
}
