// gpool-bench-restart-rss (issue 49): the memory a real gpool-coordinator
// process needs to restart with many retained finished jobs, against what it
// holds at rest.
//
// 1. Fill, offline and honestly: a child process drives a ClusterState with
//    the commands a coordinator commits for `--jobs` one-task, one-GPU jobs
//    on a 10,000-GPU cluster (1,250 nodes of 8 GPUs), each submitted, bound,
//    started and exited (the job spec of bench/retention_bench.cc), finished
//    over the last `--days` days, and writes the state as a snapshot file
//    (protocol/snapshot_file.h). Submitting a million jobs through a client
//    would take many minutes on 2 cores and they would never finish without
//    workers; the state is the same either way.
// 2. `gpool-coordinator --restore-snapshot FILE --data-dir DIR` makes the
//    data dir, as `gpool admin snapshot restore` does.
// 3. A single-replica coordinator (--insecure, loopback ports) starts on it,
//    keeping every finished job (--retain-finished-jobs above --jobs,
//    --retain-finished-ms over --days), and `--snapshot-every` small jobs are
//    submitted (--snapshot-log-ratio 0) so it takes a snapshot of its own: the image file
//    (snapshot-<index>.img) that a restart reads. Once the log says
//    "snapshot saved" and its VmRSS has settled, that is the steady RSS.
// 4. SIGKILL, then the same command again: restart_ms is spawn to the first
//    answered client call (ClusterStatus), restart_peak_rss its VmHWM then,
//    restart_rss its VmRSS once settled again.
//
// Prints JSON lines {"metric", "value", "unit", "params"}: steady_rss,
// restart_peak_rss, ratio (peak over steady), restart_ms, restart_rss,
// snapshot_bytes, fill_seconds.
//
//   gpool-bench-restart-rss [--jobs 1000000] [--days 30] [--snapshot-every 200]
//   GPOOL_COORDINATOR_BIN=/path/to/baseline/gpool-coordinator gpool-bench-restart-rss ...
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_client.h"
#include "bench/bench_process.h"
#include "control/state/cluster_state.h"
#include "control/state/commands.h"
#include "control/usage_driver.h"
#include "protocol/base/sha256.h"
#include "protocol/snapshot_file.h"

namespace {

using namespace gpool::bench;  // NOLINT: the shared bench helpers
namespace state = gpool::state;
namespace fs = std::filesystem;

constexpr uint32_t kRestartNodes = 1'250;
constexpr uint32_t kRestartGpusPerNode = 8;

struct RestartRssOptions {
  uint64_t jobs = 1'000'000;
  int64_t days = 30;
  uint64_t snapshot_every = 200;
};

// GPOOL_COORDINATOR_BIN in the environment runs another build's coordinator
// (a baseline) for steps 3 and 4.
std::string CoordinatorBin() {
  const char* bin = std::getenv("GPOOL_COORDINATOR_BIN");
  return bin != nullptr && *bin != '\0' ? bin : GPOOL_COORDINATOR_BIN;
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The job of bench/retention_bench.cc, so the two benches' records compare.
gpool::JobSpec RestartJobSpec(uint64_t i) {
  gpool::JobSpec spec;
  spec.name = "train-" + std::to_string(i);
  spec.user = "user-" + std::to_string(i % 50);
  gpool::TaskGroupSpec group;
  group.command = {"python3", "train.py", "--seed", std::to_string(i)};
  group.env = {{"EPOCHS", "3"}, {"DATASET", "imagenet"}};
  group.resources = gpool::Resources{1, 4'000, 32'768};
  spec.tasks.push_back(group);
  return spec;
}

// Step 1, in a child (its memory goes back when it exits): the state and its
// snapshot file. Returns the exit code.
int BuildSnapshotFile(const RestartRssOptions& options, const std::string& path) {
  state::ClusterState cluster;
  uint64_t index = 0;
  auto apply = [&](int64_t time_ms, state::CommandBody body) {
    cluster.Apply(++index, state::Command{time_ms, std::move(body)});
  };
  const int64_t now = WallMs();
  const int64_t start = now - options.days * 24 * 3600 * 1000;
  for (uint32_t n = 0; n < kRestartNodes; ++n) {
    gpool::NodeSpec node;
    node.name = "node-" + std::to_string(n);
    node.cpu_milli = 128'000;
    node.memory_mib = 1'024 * 1'024;
    for (uint32_t g = 0; g < kRestartGpusPerNode; ++g) {
      node.gpus.push_back(gpool::GpuInfo{.index = g, .uuid = node.name + "-gpu-" + std::to_string(g), .model = "H100"});
    }
    apply(start, state::RegisterNodeCmd{node, {}, {}});
  }
  const int64_t gap_ms = std::max<int64_t>(1, (now - start) / static_cast<int64_t>(std::max<uint64_t>(options.jobs, 1)));
  for (uint64_t i = 0; i < options.jobs; ++i) {
    const int64_t at = start + static_cast<int64_t>(i) * gap_ms;
    const uint64_t id = cluster.next_job_id();
    apply(at, state::SubmitJobCmd{RestartJobSpec(i), "key-" + std::to_string(i)});
    const uint32_t slot = static_cast<uint32_t>(i % (kRestartNodes * kRestartGpusPerNode));
    const std::string node = "node-" + std::to_string(slot / kRestartGpusPerNode);
    state::ApplyPlanCmd plan;
    plan.binds.push_back(state::PlanBind{gpool::JobId(id), 0, node, {slot % kRestartGpusPerNode}, 4'000, 32'768});
    apply(at, std::move(plan));
    gpool::TaskEvent event;
    event.node = node;
    event.task = gpool::TaskId{gpool::JobId(id), 0, 0};
    event.pid = 1000;
    event.kind = gpool::TaskEventKind::kStarted;
    apply(at, state::TaskEventCmd{event});
    event.kind = gpool::TaskEventKind::kExited;
    apply(at + gap_ms / 2, state::TaskEventCmd{event});
  }
  // What a coordinator with the default usage retention keeps of the usage
  // records (its UsageDriver trims them within a minute of starting).
  const gpool::control::UsageOptions usage;
  apply(now, state::UsageCheckpointCmd{.keep_records = usage.keep_records,
                                       .records_before_ms = now - usage.keep_records_ms,
                                       .hourly_before_ms = now - usage.keep_hourly_ms,
                                       .daily_before_ms = now - usage.keep_daily_ms});
  if (cluster.jobs().size() != options.jobs) {
    std::fprintf(stderr, "built %zu jobs, wanted %llu\n", cluster.jobs().size(),
                 static_cast<unsigned long long>(options.jobs));
    return 1;
  }
  const std::string image = cluster.Snapshot();
  gpool::SnapshotFileHeader header;
  header.index = cluster.applied_index();
  header.term = 1;
  header.taken_ms = now;
  header.state_bytes = image.size();
  header.sha256 = gpool::Sha256::Of(image);
  header.source = "gpool-bench-restart-rss";
  const std::string prefix = gpool::EncodeSnapshotFilePrefix(header);
  gpool::Sha256 digest;
  digest.Update(prefix);
  digest.Update(image);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << prefix << image << digest.HexDigest();
  return out.good() ? 0 : 1;
}

size_t ProcStatusKib(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  const size_t n = std::strlen(field);
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, n, field) == 0) return std::strtoull(line.c_str() + n, nullptr, 10);
  }
  return 0;
}

// VmRSS once it stops moving: two readings 500 ms apart within 1% (or 20 s).
size_t SettledRssBytes(pid_t pid) {
  size_t last = ProcStatusKib(pid, "VmRSS:");
  const auto deadline = SteadyClock::now() + std::chrono::seconds(20);
  while (SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const size_t now = ProcStatusKib(pid, "VmRSS:");
    const size_t diff = now > last ? now - last : last - now;
    last = now;
    if (diff * 100 <= now) break;
  }
  return last * 1024;
}

size_t LogLinesWith(const std::string& path, const std::string& text) {
  std::ifstream log(path);
  size_t count = 0;
  for (std::string line; std::getline(log, line);) count += line.find(text) != std::string::npos;
  return count;
}

class RestartRssCoordinator {
 public:
  RestartRssCoordinator(const std::string& dir, const RestartRssOptions& options) : dir_(dir) {
    client_ = "tcp://127.0.0.1:" + std::to_string(ReservePort());
    const std::string worker = "tcp://127.0.0.1:" + std::to_string(ReservePort());
    const int64_t keep_ms = (options.days + 365) * 24 * 3600 * 1000;
    argv_ = {CoordinatorBin(), "--insecure", "--data-dir", dir_ + "/data", "--client-addr", client_,
             "--worker-addr", worker, "--http-address", "none", "--snapshot-every",
             std::to_string(options.snapshot_every), "--snapshot-log-ratio", "0", "--retain-finished-jobs", std::to_string(options.jobs * 2 + 1000),
             "--retain-finished-ms", std::to_string(keep_ms)};
  }
  ~RestartRssCoordinator() { Kill(pid_, SIGKILL); }
  void Start() { pid_ = Spawn(argv_, log()); }
  void Crash() {
    Kill(pid_, SIGKILL);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }
  const std::string& endpoint() const { return client_; }
  std::string log() const { return dir_ + "/coordinator.log"; }

 private:
  std::string dir_;
  std::string client_;
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
};

// Until a client call answers; false after `timeout`.
bool WaitServing(const std::string& endpoint, std::chrono::seconds timeout) {
  auto client = ConnectOrExit(endpoint, 2'000);
  const auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (client->ClusterStatus().ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string g_restart_params;

void RestartPrint(const char* metric, double value, const char* unit) {
  std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"params\": {%s}}\n", metric, value, unit,
              g_restart_params.c_str());
  std::fflush(stdout);
}

int Fail(const std::string& what, const std::string& dir) {
  std::fprintf(stderr, "%s (kept %s)\n", what.c_str(), dir.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  RestartRssOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const uint64_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--jobs") options.jobs = value;
    else if (flag == "--days") options.days = static_cast<int64_t>(value);
    else if (flag == "--snapshot-every") options.snapshot_every = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const std::string dir = (fs::temp_directory_path() / ("gpool-bench-restart-rss-" + std::to_string(getpid()))).string();
  fs::create_directories(dir);
  const std::string file = dir + "/state.snap";

  const auto fill_start = SteadyClock::now();
  std::fflush(stdout);
  const pid_t builder = fork();
  if (builder == 0) _exit(BuildSnapshotFile(options, file));
  int status = 0;
  waitpid(builder, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return Fail("building the state failed", dir);
  const double fill_seconds = Ms(SteadyClock::now() - fill_start) / 1000;
  // This build's restore makes the data dir whichever coordinator is measured
  // (the format is the same): a baseline's restore of a large image would
  // need several times the memory, and is not what is measured.
  const pid_t restore = Spawn({GPOOL_COORDINATOR_BIN, "--restore-snapshot", file, "--data-dir", dir + "/data"},
                              dir + "/restore.log");
  waitpid(restore, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return Fail("--restore-snapshot failed", dir);
  fs::remove(file);

  RestartRssCoordinator coordinator(dir, options);
  coordinator.Start();
  if (!WaitServing(coordinator.endpoint(), std::chrono::seconds(600))) return Fail("the coordinator never answered", dir);
  {
    // Entries enough for a snapshot of its own, kept as an image file.
    auto client = ConnectOrExit(coordinator.endpoint(), 10'000);
    for (uint64_t i = 0; i < options.snapshot_every + 10; ++i) {
      gpool::JobSpec spec = RestartJobSpec(options.jobs + i);
      (void)client->Submit(spec, "fill-" + std::to_string(i));
    }
  }
  const auto saved_deadline = SteadyClock::now() + std::chrono::seconds(300);
  while (LogLinesWith(coordinator.log(), "kept_as_file=true") == 0) {
    if (SteadyClock::now() > saved_deadline) return Fail("no snapshot saved as a file", dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const size_t steady_rss = SettledRssBytes(coordinator.pid());
  const size_t first_hwm = ProcStatusKib(coordinator.pid(), "VmHWM:") * 1024;
  uint64_t snapshot_bytes = 0;
  for (const auto& entry : fs::directory_iterator(dir + "/data")) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("snapshot-") && name.ends_with(".img")) snapshot_bytes = entry.file_size();
  }

  coordinator.Crash();
  const auto restart_start = SteadyClock::now();
  coordinator.Start();
  if (!WaitServing(coordinator.endpoint(), std::chrono::seconds(600))) return Fail("no answer after the restart", dir);
  const double restart_ms = Ms(SteadyClock::now() - restart_start);
  const size_t peak = ProcStatusKib(coordinator.pid(), "VmHWM:") * 1024;
  const size_t restart_rss = SettledRssBytes(coordinator.pid());
  coordinator.Crash();

  char params[1024];
  std::snprintf(params, sizeof(params),
                "\"coordinator\": \"%s\", \"jobs\": %llu, \"days\": %lld, \"gpus\": %u, \"snapshot_every\": %llu, \"first_start_peak_rss\": %zu, "
                "\"what\": \"a single-replica gpool-coordinator process, --insecure, no workers; SIGKILL and restart\"",
                CoordinatorBin().c_str(), static_cast<unsigned long long>(options.jobs), static_cast<long long>(options.days),
                kRestartNodes * kRestartGpusPerNode, static_cast<unsigned long long>(options.snapshot_every),
                first_hwm);
  g_restart_params = params;
  RestartPrint("fill_seconds", fill_seconds, "s");
  RestartPrint("snapshot_bytes", static_cast<double>(snapshot_bytes), "bytes");
  RestartPrint("steady_rss", static_cast<double>(steady_rss), "bytes");
  RestartPrint("restart_peak_rss", static_cast<double>(peak), "bytes");
  RestartPrint("ratio", steady_rss == 0 ? 0 : static_cast<double>(peak) / static_cast<double>(steady_rss), "x");
  RestartPrint("restart_ms", restart_ms, "ms");
  RestartPrint("restart_rss", static_cast<double>(restart_rss), "bytes");
  if (std::getenv("GPOOL_BENCH_KEEP") == nullptr) fs::remove_all(dir);
  return 0;
}
