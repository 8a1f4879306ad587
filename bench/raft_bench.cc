// gpool-bench-raft: commit throughput and latency of the replicated log.
//
// Three RaftLogs (control/replication/raft_log.h), each on its own thread
// with its own LevelDB LogStore in a temp dir (every Ready that carries
// entries is fsynced, as in production), talk over real PeerTransports on
// 127.0.0.1. The leader's thread plays N closed-loop clients: it keeps N
// proposals of `payload` bytes in flight and, as each one commits (is
// handed out by Sync() on the leader, i.e. fsynced on a majority), records
// its latency and proposes the next. Proposals made in one loop turn share
// one Ready, so this measures group commit the way the coordinator gets it.
// No state machine runs: this is the log alone.
//
// The whole series runs plaintext and with CurveZMQ on the peer transport
// (issue 31), alternating for `rounds` rounds, and the 256-client
// throughput cost is printed from the medians.
//
// Usage: gpool-bench-raft [seconds-per-level=3] [payload-bytes=128] [rounds=3]
// Prints JSON lines {"metric", "value", "unit", "params"}.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "protocol/security/keys.h"
#include "protocol/security/zap_handler.h"
#include <fcntl.h>
#include <unistd.h>

#include "control/replication/peer_transport.h"
#include "control/replication/raft_log.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"

namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr int kReplicas = 3;
// Compact each replica's log this often, as a coordinator snapshotting would,
// so memory stays bounded over long runs.
constexpr uint64_t kCompactEvery = 50'000;

double Micros(SteadyClock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// fdatasync of a small append on the bench's own disk: the floor under any
// commit latency (a commit waits for at least one, usually two in parallel).
std::vector<double> FsyncBaseline(const std::string& dir, double seconds) {
  std::vector<double> us;
  const std::string path = dir + "/fsync-probe";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return us;
  char block[128] = {};
  const auto end = SteadyClock::now() + std::chrono::duration<double>(seconds);
  while (SteadyClock::now() < end) {
    const auto start = SteadyClock::now();
    if (write(fd, block, sizeof(block)) < 0 || fdatasync(fd) != 0) break;
    us.push_back(Micros(SteadyClock::now() - start));
  }
  close(fd);
  std::filesystem::remove(path);
  return us;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// What the main thread and the replica threads share.
struct Run {
  std::atomic<bool> stop{false};
  std::atomic<int> phase{-1};   // measurement phase; -1 between phases
  std::atomic<int> clients{0};  // proposals to keep in flight
  std::mutex mu;                // guards the two below
  std::vector<double> latencies_us;
  uint64_t errors = 0;
};

struct Replica {
  uint64_t id = 0;
  std::unique_ptr<gpool::storage::LevelDbStore> kv;
  std::unique_ptr<gpool::storage::LogStore> store;
  std::unique_ptr<gpool::replication::PeerTransport> transport;
  std::unique_ptr<gpool::replication::RaftLog> log;
};

void Serve(Replica& r, Run& run, const std::string& payload) {
  struct InFlight {
    int phase;
    uint64_t term;
    SteadyClock::time_point start;
  };
  std::map<uint64_t, InFlight> in_flight;
  std::vector<double> local;  // flushed to `run` once per turn
  uint64_t applied = 0;
  uint64_t compacted = 0;
  while (!run.stop.load(std::memory_order_relaxed)) {
    zmq::pollitem_t item{r.transport->inbound().handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(1));
    for (const auto& frame : r.transport->Drain()) r.log->Receive(frame.bytes, frame.sender);
    r.log->Tick();

    const int phase = run.phase.load();
    if (r.log->IsLeader()) {
      const int want = run.clients.load();
      int current = 0;
      for (const auto& [index, f] : in_flight) current += f.phase == phase ? 1 : 0;
      for (; phase >= 0 && current < want; ++current) {
        auto index = r.log->Propose(payload);
        if (!index.ok()) break;
        in_flight[*index] = InFlight{phase, r.log->term(), SteadyClock::now()};
      }
    } else if (!in_flight.empty()) {
      in_flight.clear();  // lost leadership: these will never report back here
    }
    while (r.log->HasUnsynced()) {
      auto committed = r.log->Sync();
      if (!committed.ok()) {
        std::fprintf(stderr, "replica %llu: %s\n", static_cast<unsigned long long>(r.id),
                     committed.status().ToString().c_str());
        std::lock_guard<std::mutex> lock(run.mu);
        ++run.errors;
        run.stop = true;
        return;
      }
      const auto now = SteadyClock::now();
      for (const auto& entry : committed->entries) {
        applied = entry.index;
        auto it = in_flight.find(entry.index);
        if (it == in_flight.end()) continue;
        if (it->second.term == entry.term && it->second.phase == phase && phase >= 0) {
          local.push_back(Micros(now - it->second.start));
        }
        in_flight.erase(it);
      }
      if (committed->snapshot) applied = std::max(applied, committed->snapshot->index);
    }
    if (!local.empty()) {
      std::lock_guard<std::mutex> lock(run.mu);
      if (run.phase.load() == phase) run.latencies_us.insert(run.latencies_us.end(), local.begin(), local.end());
      local.clear();
    }
    if (applied >= compacted + kCompactEvery) {
      if (r.log->SaveSnapshot(applied, "bench").ok()) compacted = applied;
    }
  }
}

}  // namespace

// One three-replica run at 1, 16 and 256 clients, plaintext or with
// CurveZMQ on the peer transport; the 256-client rate goes to *rate_256.
int RunLevels(const std::string& dir, bool curve, double seconds, size_t payload_bytes, double* rate_256) {
  zmq::context_t context(2);
  // CurveZMQ: a key pair per replica, and the ZAP handler the coordinator
  // runs, admitting the three replicas' keys on the peer port.
  std::array<gpool::security::KeyPair, kReplicas> keys;
  std::unique_ptr<gpool::security::ZapHandler> zap;
  if (curve) {
    for (auto& k : keys) k = std::move(gpool::security::GenerateKeyPair()).value();
    auto started_zap = gpool::security::ZapHandler::Start(
        context, [&keys](std::string_view domain, std::string_view key) -> std::optional<std::string> {
          for (size_t i = 0; i < keys.size(); ++i) {
            if (domain == "peers" && keys[i].public_key == key) return "replica|" + std::to_string(i + 1) + "|" + keys[i].public_key;
          }
          return std::nullopt;
        });
    if (!started_zap.ok()) {
      std::fprintf(stderr, "%s\n", started_zap.status().ToString().c_str());
      return 1;
    }
    zap = std::move(started_zap).value();
  }
  std::array<Replica, kReplicas> replicas;
  std::vector<uint64_t> voters;
  for (int i = 0; i < kReplicas; ++i) {
    Replica& r = replicas[i];
    r.id = static_cast<uint64_t>(i + 1);
    voters.push_back(r.id);
    gpool::storage::LevelDbOptions db;
    db.path = dir + (curve ? "/curve-replica-" : "/replica-") + std::to_string(r.id);
    auto kv = gpool::storage::LevelDbStore::Open(db);
    if (!kv.ok()) {
      std::fprintf(stderr, "%s\n", kv.status().ToString().c_str());
      return 1;
    }
    r.kv = std::move(kv).value();
    r.store = std::move(gpool::storage::LogStore::Open(r.kv.get())).value();
    gpool::replication::PeerTransportOptions transport_options{.listen_endpoint = "tcp://127.0.0.1:0"};
    if (curve) transport_options.curve_keys = keys[i];
    auto transport = gpool::replication::PeerTransport::Open(context, transport_options);
    if (!transport.ok()) {
      std::fprintf(stderr, "%s\n", transport.status().ToString().c_str());
      return 1;
    }
    r.transport = std::move(transport).value();
  }
  for (auto& r : replicas) {
    for (auto& peer : replicas) {
      if (peer.id != r.id) {
        (void)r.transport->AddPeer(peer.id, peer.transport->listen_endpoint(),
                                   curve ? keys[peer.id - 1].public_key : "");
      }
    }
    gpool::replication::RaftLogOptions options;
    options.id = r.id;
    options.voters = voters;
    auto log = gpool::replication::RaftLog::Open(options, r.store.get(), r.transport.get());
    if (!log.ok()) {
      std::fprintf(stderr, "%s\n", log.status().ToString().c_str());
      return 1;
    }
    r.log = std::move(log).value();
    (void)r.log->Recover();
  }

  Run run;
  const std::string payload(payload_bytes, 'p');
  const auto started = SteadyClock::now();
  std::vector<std::thread> threads;
  for (auto& r : replicas) threads.emplace_back([&r, &run, &payload] { Serve(r, run, payload); });

  // The first election and commit, as a sanity figure (cold start, with jitter).
  run.phase = 0;
  run.clients = 1;
  while (SteadyClock::now() - started < std::chrono::seconds(10)) {
    {
      std::lock_guard<std::mutex> lock(run.mu);
      if (!run.latencies_us.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("{\"metric\": \"raft_first_commit_ms\", \"value\": %.0f, \"unit\": \"ms\", \"params\": {\"replicas\": %d, "
              "\"curve\": %s, \"note\": \"cold start: election plus one commit\"}}\n",
              Micros(SteadyClock::now() - started) / 1000, kReplicas, curve ? "true" : "false");
  run.phase = -1;
  run.clients = 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  int phase = 1;
  for (int clients : {1, 16, 256}) {
    {
      std::lock_guard<std::mutex> lock(run.mu);
      run.latencies_us.clear();
    }
    const auto begin = SteadyClock::now();
    run.clients = clients;
    run.phase = phase;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    run.phase = -1;
    run.clients = 0;
    const double elapsed = std::chrono::duration<double>(SteadyClock::now() - begin).count();
    std::vector<double> latencies;
    uint64_t errors = 0;
    {
      std::lock_guard<std::mutex> lock(run.mu);
      latencies.swap(run.latencies_us);
      errors = run.errors;
    }
    const double rate = static_cast<double>(latencies.size()) / elapsed;
    const double p50 = Percentile(latencies, 0.5);
    const double p99 = Percentile(latencies, 0.99);
    std::printf("{\"metric\": \"raft_commits_per_s\", \"value\": %.0f, \"unit\": \"commits/s\", \"params\": "
                "{\"clients\": %d, \"replicas\": %d, \"fsync\": true, \"curve\": %s, \"payload_bytes\": %zu, "
                "\"p50_us\": %.0f, \"p99_us\": %.0f, \"commits\": %zu, \"errors\": %llu}}\n",
                rate, clients, kReplicas, curve ? "true" : "false", payload_bytes, p50, p99, latencies.size(),
                static_cast<unsigned long long>(errors));
    if (clients == 256) *rate_256 = rate;
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the window drain
    ++phase;
  }
  run.stop = true;
  for (auto& t : threads) t.join();
  for (auto& r : replicas) {
    r.log.reset();
    r.transport.reset();
  }
  return 0;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const size_t payload_bytes = argc > 2 ? static_cast<size_t>(std::atol(argv[2])) : 128;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  if (seconds <= 0 || payload_bytes == 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: gpool-bench-raft [seconds-per-level=3] [payload-bytes=128] [rounds=3]\n");
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gpool-bench-raft-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  {
    std::vector<double> fsync = FsyncBaseline(dir, 1.0);
    const double p50 = Percentile(fsync, 0.5);
    std::printf("{\"metric\": \"fsync_latency_p50\", \"value\": %.1f, \"unit\": \"us\", \"params\": {\"p99_us\": %.1f, "
                "\"ops\": %zu}}\n",
                p50, Percentile(fsync, 0.99), fsync.size());
  }

  // Plaintext and CurveZMQ alternate, `rounds` times each, in the same
  // process on the same disk, each round a fresh cluster; the cost is read
  // off the medians, so a machine whose speed drifts during the run (a
  // shared VM) moves both sides alike instead of whichever ran second.
  std::vector<double> plain_256, curve_256;
  for (int round = 0; round < rounds; ++round) {
    const std::string round_dir = dir + "/round-" + std::to_string(round);
    std::filesystem::create_directories(round_dir);
    for (bool curve : {false, true}) {
      double rate = 0;
      if (int rc = RunLevels(round_dir, curve, seconds, payload_bytes, &rate); rc != 0) return rc;
      (curve ? curve_256 : plain_256).push_back(rate);
    }
  }
  const double plain = Percentile(plain_256, 0.5), curve = Percentile(curve_256, 0.5);
  std::printf("{\"metric\": \"raft_curve_throughput_cost\", \"value\": %.1f, \"unit\": \"%%\", \"params\": "
              "{\"clients\": 256, \"plain_commits_per_s\": %.0f, \"curve_commits_per_s\": %.0f, "
              "\"rounds\": %d, \"of\": \"medians\", \"target_max\": 15}}\n",
              plain > 0 ? 100.0 * (plain - curve) / plain : 0.0, plain, curve, rounds);
  std::filesystem::remove_all(dir);
  return 0;
}
