// gpool-bench-memory: coordinator resident memory per device and per live task.
//
// Target (issue 6): at 100,000 GPUs (12,500 nodes x 8) and 100,000 live
// (bound or running) tasks, the coordinator holds <= 1 KiB per device plus
// <= 2 KiB per live task.
//
// How (option B of the brief: in process). A real gpool-coordinator would need
// 12,500 worker connections and a full bind/ack/start exchange for 100,000
// tasks driven over ZeroMQ from outside; the worker fleet mode that does this
// is the end-to-end bench's job. Here the coordinator's own components run in
// this process exactly as Coordinator wires them, with only the sockets
// replaced: a LocalLog over a real LevelDB store (group commit per turn,
// snapshot and log compaction every 10,000 entries as snapshot_every does),
// ClusterState applying every committed command, and the real NodeRegistry,
// Dispatcher, Gateway and SchedulerDriver fed with encoded frames:
//   1. 12,500 RegisterNode frames (node specs shaped like
//      worker/examples/node-8gpu.yaml), then one Heartbeat per node;
//   2. 100,000 SubmitJob frames (1-GPU tasks, a 32-character idempotency key
//      as the client library sends), placed by the default scheduler cycles;
//      every BindTask the dispatcher sends is acked and answered by a
//      TaskEvent "started", as a worker does; then one Heartbeat per node
//      carrying its tasks' GPU memory usage (the registry keeps it).
// Resident memory (/proc/self/statm after malloc_trim(0), so freed heap that
// glibc still holds is not counted) is read after opening (baseline), after
// phase 1 (per device = delta / GPUs) and after phase 2 (per task = delta /
// live tasks). The bench's own data (frame queues) is empty at each reading.
// Each reading first waits for LevelDB to come to rest (SettleStore: the
// memtable the last state snapshot went through is flushed, and resident
// memory is steady; the wait is printed): the snapshot is the whole state as
// one value, resident until the background flush ends a moment later, and a
// reading taken inside that window measured LevelDB's timing rather than
// the coordinator's structures.
//
// Counted: everything those components keep, LevelDB's memtables and block
// cache included. Not counted in the per-unit numbers: ZeroMQ's per-connection
// buffers (measured separately below: a ROUTER with 12,500 connected DEALERs
// from a child process, bytes per connection) and the scheduler's view, which
// the driver keeps while jobs wait and drops once none does (so it is gone
// at the readings; printed as its own transient number, with the process's
// peak RSS). The heap in use (mallinfo2) is printed beside RSS: it is what
// the structures themselves take; a breakdown line splits the per-task heap
// into dispatcher, node registry and the rest (the replicated state), by
// emptying the first two at the end.
// memory_target_met checks both per-unit targets; its params also say whether
// the total stays within devices x 1 KiB + tasks x 2 KiB.
//
// Usage: gpool-bench-memory [--nodes N] [--tasks N] [--tasks-per-job N] [--connections N]
//   --nodes N          nodes of 8 GPUs (default 12500)
//   --tasks N          live tasks (default 100000; at most the GPUs)
//   --tasks-per-job N  tasks per job, 1 GPU each (default 1: the worst case,
//                      every task carries a whole job record)
//   --connections N    worker connections for the ZeroMQ measurement (default
//                      = nodes; 0 skips it)
//   --connection-exchanges N  heartbeats and replies on each connection before
//                      its steady reading (default 600; 0 skips that reading)
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "bench/connection_memory.h"
#include "control/dispatcher.h"
#include "control/gateway.h"
#include "control/log/local_log.h"
#include "control/node_registry.h"
#include "control/scheduler_driver.h"
#include "protocol/base/testing/fake_clock.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "storage/leveldb_store.h"
#include "storage/log_store.h"

namespace {

using namespace gpool;  // NOLINT: a bench's single file
using control::ApplyCallback;

constexpr uint32_t kGpusPerNode = 8;
constexpr double kTargetBytesPerDevice = 1024;
constexpr double kTargetBytesPerTask = 2048;
constexpr uint64_t kSnapshotEvery = 10'000;  // CoordinatorOptions::snapshot_every
constexpr size_t kMaxFramesPerTurn = 1000;   // the coordinator drains this many per socket and turn
constexpr int64_t kTurnMs = 5;               // virtual time per loop turn

// Resident bytes after handing freed heap back: what the live structures take.
size_t ResidentBytes() {
  malloc_trim(0);
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr || std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  if (f != nullptr) std::fclose(f);
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

size_t HeapInUse() { return mallinfo2().uordblks; }

// VmHWM: the most this process was ever resident.
size_t PeakResidentBytes() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  size_t kib = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %zu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

struct Reading {
  size_t rss = 0;
  size_t heap = 0;
};
Reading Read() {
  Reading r;
  r.rss = ResidentBytes();
  r.heap = HeapInUse();
  return r;
}

std::string Padded(const char* prefix, uint64_t n, int width) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%s%0*llu", prefix, width, static_cast<unsigned long long>(n));
  return buffer;
}

// An 8x A100 node as discovery reports it (worker/examples/node-8gpu.yaml),
// with the switch-tier labels a topology-aware cluster sets.
NodeSpec MakeNode(uint32_t n) {
  NodeSpec node;
  node.name = Padded("gpu-", n, 5);
  node.hostname = node.name + ".dc1.example.com";
  node.cpu_milli = 128'000;
  node.memory_mib = 1024 * 1024;
  node.numa = {NumaInfo{0, 64'000, 512 * 1024, "0-31,64-95"}, NumaInfo{1, 64'000, 512 * 1024, "32-63,96-127"}};
  for (uint32_t g = 0; g < kGpusPerNode; ++g) {
    GpuInfo gpu;
    gpu.index = g;
    char uuid[48];
    std::snprintf(uuid, sizeof(uuid), "GPU-4f1c0a2e-%04x-4000-8000-%012x", g, n);
    gpu.uuid = uuid;
    gpu.model = "A100-SXM4-80GB";
    gpu.memory_mib = 80 * 1024;
    gpu.numa = static_cast<int32_t>(g / 4);
    for (uint32_t peer = 0; peer < kGpusPerNode; ++peer) {
      if (peer != g) gpu.nvlink_peers.push_back(peer);
    }
    node.gpus.push_back(std::move(gpu));
  }
  const std::string leaf = Padded("leaf-", n / 32, 4);
  node.nics = {NicInfo{"ib0", leaf + "-a", 200}, NicInfo{"ib1", leaf + "-b", 200}};
  node.labels = {{"pool", "public"},
                 {"rack", Padded("r", n / 32, 4)},
                 {"zone", "dc1-a"},
                 {"topology.gpool.io/tier1", leaf},
                 {"topology.gpool.io/tier2", Padded("spine-", n / 1024, 2)}};
  return node;
}

// A training job as the CLI submits it.
SubmitJob MakeSubmit(uint64_t i, uint32_t tasks_per_job) {
  static constexpr const char* kUsers[] = {"alice", "bob", "carol", "dave", "erin", "frank"};
  SubmitJob submit;
  submit.spec.name = Padded("train-", i, 6);
  submit.spec.user = kUsers[i % 6];
  TaskGroupSpec group;
  group.name = "worker";
  group.replicas = tasks_per_job;
  group.command = {"python", "-m", "train", "--config", "configs/llm-7b.yaml"};
  group.env = {{"NCCL_DEBUG", "WARN"}, {"WANDB_PROJECT", "llm"}};
  group.resources.gpus = 1;
  group.resources.cpu_milli = 12'000;
  group.resources.memory_mib = 96 * 1024;
  submit.spec.tasks.push_back(std::move(group));
  char key[40];  // 128 random bits in hex, like client.cc's NewIdempotencyKey
  std::snprintf(key, sizeof(key), "%016llx%016llx", static_cast<unsigned long long>(i * 0x9E3779B97F4A7C15ull),
                static_cast<unsigned long long>(~i * 0xC2B2AE3D27D4EB4Full));
  submit.idempotency_key = key;
  return submit;
}

template <typename T>
std::string Frame(uint64_t request_id, const std::string& sender, const T& body) {
  Header header;
  header.request_id = request_id;
  header.sender = sender;
  return EncodeEnvelope(header, body);
}

// A worker's connection identity; the node name is derived from it, so the
// bench keeps no peer table of its own that would be counted as the
// coordinator's.
std::string PeerOf(const std::string& node) { return "w:" + node; }
std::string NodeOf(const std::string& peer) { return peer.substr(2); }

// The coordinator's loop (Coordinator::Run and CommitAndApply) with its
// sockets replaced by frame queues.
class InProcessCoordinator final : public control::Outbox, public control::Proposer {
 public:
  static Result<std::unique_ptr<InProcessCoordinator>> Open(const std::string& dir, const Clock* clock) {
    std::unique_ptr<InProcessCoordinator> c(new InProcessCoordinator(clock));
    storage::LevelDbOptions db_options;
    db_options.path = dir + "/db";
    GPOOL_ASSIGN_OR_RETURN(c->kv_, storage::LevelDbStore::Open(db_options));
    GPOOL_ASSIGN_OR_RETURN(c->log_store_, storage::LogStore::Open(c->kv_.get()));
    GPOOL_ASSIGN_OR_RETURN(c->log_, log::LocalLog::Open(c->log_store_.get()));
    control::NodeRegistryOptions registry_options;
    registry_options.clock = clock;
    c->registry_ = std::make_unique<control::NodeRegistry>(registry_options, c->state_, c->workers_, *c, *c,
                                                           clock->MonoMs());
    c->dispatcher_ = std::make_unique<control::Dispatcher>(control::DispatcherOptions{}, c->state_, c->workers_,
                                                          c->request_ids_, *c, *c);
    c->relay_ = std::make_unique<control::WorkerRelay>(control::WorkerRelayOptions{}, c->workers_, c->request_ids_, *c, *c);
    c->registry_->Subscribe(c->dispatcher_.get());
    c->registry_->Subscribe(c->relay_.get());
    c->gateway_ =
        std::make_unique<control::Gateway>(control::GatewayOptions{}, c->state_, c->workers_, *c->relay_, *c, *c);
    control::SchedulerDriverOptions scheduler_options;
    scheduler_options.wall_clock = clock;
    c->scheduler_ = std::make_unique<control::SchedulerDriver>(scheduler_options, c->state_, *c);
    return c;
  }

  void ToClient(const std::string&, std::string) override {}
  void ToWorker(const std::string& peer, std::string frame) override {
    to_workers_.emplace_back(peer, std::move(frame));
  }
  void Propose(state::CommandBody body, ApplyCallback done) override {
    auto index = log_->Propose(state::EncodeCommand(state::Command{clock_->WallMs(), std::move(body)}));
    if (!index.ok()) {
      state::ApplyResult failed;
      failed.status = index.status();
      failed.committed = false;
      done(failed);
      return;
    }
    callbacks_.emplace_back(*index, std::move(done));
  }
  uint64_t epoch() const override { return log_->term(); }

  // One turn of the loop with these frames as what the sockets delivered.
  Status Turn(const std::vector<std::pair<std::string, std::string>>& from_clients,
              const std::vector<std::pair<std::string, std::string>>& from_workers) {
    const int64_t now = clock_->MonoMs();
    for (const auto& [peer, frame] : from_clients) gateway_->OnFrame(peer, frame, now);
    for (const auto& [peer, frame] : from_workers) registry_->OnFrame(peer, frame, now);
    registry_->Tick(now);
    GPOOL_RETURN_IF_ERROR(CommitAndApply(now));
    if (scheduler_->Tick(now)) GPOOL_RETURN_IF_ERROR(CommitAndApply(now));
    dispatcher_->Tick(now);
    MaybeSnapshot();
    return Status::Ok();
  }

  // Heap the dispatcher and the registry hold, found by emptying them (as a
  // change of leader does); call only after the last reading.
  std::pair<size_t, size_t> EmptyComponents() {
    const size_t before = HeapInUse();
    dispatcher_->Reset();
    const size_t without_dispatcher = HeapInUse();
    registry_->Reset(clock_->MonoMs());
    return {before - without_dispatcher, without_dispatcher - HeapInUse()};
  }

  std::vector<std::pair<std::string, std::string>> TakeWorkerFrames() { return std::exchange(to_workers_, {}); }
  const state::ClusterState& state() const { return state_; }
  uint64_t snapshots() const { return snapshots_; }
  uint64_t store_memory() const { return kv_->ApproximateMemoryUsage(); }

 private:
  explicit InProcessCoordinator(const Clock* clock) : clock_(clock) {}

  Status CommitAndApply(int64_t now) {
    bool applied_any = false;
    while (log_->HasUnsynced()) {
      GPOOL_ASSIGN_OR_RETURN(log::Committed committed, log_->Sync());
      for (const auto& entry : committed.entries) {
        auto command = state::DecodeCommand(entry.data);
        if (!command.ok()) return command.status();
        state::ApplyResult result = state_.Apply(entry.index, *command);
        applied_any = true;
        // Proposals commit in order, so the oldest callback is this entry's.
        if (!callbacks_.empty() && callbacks_.front().first == entry.index) {
          ApplyCallback done = std::move(callbacks_.front().second);
          callbacks_.erase(callbacks_.begin());
          done(result);
        }
      }
    }
    if (applied_any) {
      scheduler_->MarkDirty();
      dispatcher_->Tick(now);
    }
    return Status::Ok();
  }

  void MaybeSnapshot() {
    const uint64_t applied = state_.applied_index();
    if (applied < last_snapshot_index_ + kSnapshotEvery) return;
    if (log_->SaveSnapshot(applied, state_.Snapshot()).ok()) {
      last_snapshot_index_ = applied;
      ++snapshots_;
    }
  }

  const Clock* clock_;
  std::unique_ptr<storage::LevelDbStore> kv_;
  std::unique_ptr<storage::LogStore> log_store_;
  std::unique_ptr<log::LocalLog> log_;
  state::ClusterState state_;
  std::vector<std::pair<uint64_t, ApplyCallback>> callbacks_;
  uint64_t last_snapshot_index_ = 0;
  uint64_t snapshots_ = 0;
  std::vector<std::pair<std::string, std::string>> to_workers_;
  control::WorkerTable workers_;
  control::RequestIds request_ids_;
  std::unique_ptr<control::NodeRegistry> registry_;
  std::unique_ptr<control::Dispatcher> dispatcher_;
  std::unique_ptr<control::WorkerRelay> relay_;
  std::unique_ptr<control::Gateway> gateway_;
  std::unique_ptr<control::SchedulerDriver> scheduler_;
};

// What the fake workers answer to the coordinator's frames: an Ack for every
// command and, for a bind, the TaskEvent "started" a worker sends once the
// process runs.
void AnswerWorkerFrames(std::vector<std::pair<std::string, std::string>> frames, int64_t wall_ms, uint64_t& seq,
                        std::vector<std::pair<std::string, std::string>>& replies) {
  for (auto& [peer, frame] : frames) {
    auto envelope = DecodeEnvelope(frame);
    if (!envelope.ok()) continue;
    const std::string node = NodeOf(peer);
    if (envelope->type() == MessageType::kBindTask || envelope->type() == MessageType::kPreemptTask) {
      replies.emplace_back(peer, Frame(envelope->header().request_id, node, Ack{}));
    }
    if (envelope->type() != MessageType::kBindTask) continue;
    auto bind = envelope->Body<BindTask>();
    if (!bind.ok()) continue;
    TaskEvent event;
    event.node = node;
    event.seq = ++seq;
    event.task = bind->task;
    event.kind = TaskEventKind::kStarted;
    event.pid = static_cast<int64_t>(10'000 + seq);
    event.time_ms = wall_ms;
    replies.emplace_back(peer, Frame(seq, node, event));
  }
}

struct Args {
  uint32_t nodes = 12'500;
  uint64_t tasks = 100'000;
  uint32_t tasks_per_job = 1;
  int64_t connections = -1;  // -1: as many as nodes
  int64_t connection_exchanges = 600;
};

[[noreturn]] void Usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--nodes N] [--tasks N] [--tasks-per-job N] [--connections N] "
               "[--connection-exchanges N]\n", argv0);
  std::exit(2);
}

Args ParseArgs(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc) Usage(argv[0]);
    const uint64_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--nodes") == 0) {
      args.nodes = static_cast<uint32_t>(value);
    } else if (std::strcmp(argv[i], "--tasks") == 0) {
      args.tasks = value;
    } else if (std::strcmp(argv[i], "--tasks-per-job") == 0) {
      args.tasks_per_job = static_cast<uint32_t>(value);
    } else if (std::strcmp(argv[i], "--connections") == 0) {
      args.connections = static_cast<int64_t>(value);
    } else if (std::strcmp(argv[i], "--connection-exchanges") == 0) {
      args.connection_exchanges = static_cast<int64_t>(value);
    } else {
      Usage(argv[0]);
    }
    ++i;
  }
  if (args.nodes == 0 || args.tasks_per_job == 0 || args.tasks > uint64_t{args.nodes} * kGpusPerNode ||
      args.tasks % args.tasks_per_job != 0) {
    std::fprintf(stderr, "need nodes > 0, tasks <= 8 x nodes, tasks a multiple of tasks-per-job\n");
    std::exit(2);
  }
  if (args.connections < 0) args.connections = args.nodes;
  return args;
}

// Waits for LevelDB to come to rest before a reading: the last state
// snapshot, the whole state as one value, stays resident in the memtable
// until the background flush ends, and a compaction that moves it between
// levels reads it back into memory for a moment; a running coordinator holds
// either only that long. So a reading waits (up to 30 s) until LevelDB is
// back to its fixed buffers (block cache and write buffer) and resident
// memory has stopped moving (three readings 50 ms apart within 1 MB).
// Returns the milliseconds waited.
double SettleStore(const InProcessCoordinator& c) {
  const uint64_t fixed = storage::LevelDbOptions{}.block_cache_bytes + 2 * storage::LevelDbOptions{}.write_buffer_bytes;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(30);
  while (c.store_memory() > fixed && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  size_t last = ResidentBytes();
  for (int steady = 0; steady < 3 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const size_t now = ResidentBytes();
    steady = (now > last ? now - last : last - now) < (size_t{1} << 20) ? steady + 1 : 0;
    last = now;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Runs turns until the queued frames are delivered and the coordinator has
// nothing more to say; fake workers answer what it sends.
Status Drive(InProcessCoordinator& c, FakeClock& clock, std::vector<std::pair<std::string, std::string>> clients,
             std::vector<std::pair<std::string, std::string>> workers, uint64_t& seq, uint64_t live_goal) {
  size_t client_at = 0, worker_at = 0;
  for (int idle = 0; idle < 3;) {
    std::vector<std::pair<std::string, std::string>> client_turn, worker_turn;
    for (; client_at < clients.size() && client_turn.size() < kMaxFramesPerTurn; ++client_at) {
      client_turn.push_back(std::move(clients[client_at]));
    }
    for (; worker_at < workers.size() && worker_turn.size() < kMaxFramesPerTurn; ++worker_at) {
      worker_turn.push_back(std::move(workers[worker_at]));
    }
    clock.Advance(kTurnMs);
    GPOOL_RETURN_IF_ERROR(c.Turn(client_turn, worker_turn));
    const size_t queued = workers.size();
    AnswerWorkerFrames(c.TakeWorkerFrames(), clock.WallMs(), seq, workers);
    const bool quiet = client_turn.empty() && worker_turn.empty() && workers.size() == queued;
    idle = quiet && c.state().active_task_count() >= live_goal ? idle + 1 : 0;
    if (quiet && clock.MonoMs() > 60'000) return Status::Internal("placement stalled");
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> Heartbeats(const InProcessCoordinator& c, uint32_t nodes,
                                                            uint64_t& seq) {
  std::vector<std::pair<std::string, std::string>> frames;
  for (uint32_t n = 0; n < nodes; ++n) {
    Heartbeat heartbeat;
    heartbeat.node = Padded("gpu-", n, 5);
    if (const state::NodeRecord* record = c.state().FindNode(heartbeat.node)) {
      for (const TaskId& task : record->tasks) {
        heartbeat.running.push_back(task);
        heartbeat.usage.push_back(TaskUsage{task, 61'440});
      }
    }
    frames.emplace_back(PeerOf(heartbeat.node), Frame(++seq, heartbeat.node, heartbeat));
  }
  return frames;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  spdlog::set_level(spdlog::level::warn);  // a node-registered line per node would dominate the run
  const uint64_t gpus = uint64_t{args.nodes} * kGpusPerNode;
  const auto started = std::chrono::steady_clock::now();
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gpool-bench-memory-" + std::to_string(getpid()))).string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  FakeClock clock;
  auto opened = InProcessCoordinator::Open(dir, &clock);
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    return 1;
  }
  InProcessCoordinator& c = **opened;
  uint64_t seq = 0;
  SettleStore(c);
  const Reading baseline = Read();

  // Phase 1: the fleet registers and heartbeats.
  std::vector<std::pair<std::string, std::string>> registrations;
  for (uint32_t n = 0; n < args.nodes; ++n) {
    RegisterNode msg;
    msg.node = MakeNode(n);
    msg.worker_version = "0.1.0";
    registrations.emplace_back(PeerOf(msg.node.name), Frame(++seq, msg.node.name, msg));
  }
  Status status = Drive(c, clock, {}, std::move(registrations), seq, 0);
  if (status.ok()) status = Drive(c, clock, {}, Heartbeats(c, args.nodes, seq), seq, 0);
  if (!status.ok() || c.state().nodes().size() != args.nodes) {
    std::fprintf(stderr, "registration: %s nodes=%zu\n", status.ToString().c_str(), c.state().nodes().size());
    return 1;
  }
  SettleStore(c);
  const Reading fleet = Read();

  // Phase 2: jobs arrive, are placed, bound and started; heartbeats report usage.
  std::vector<std::pair<std::string, std::string>> submits;
  for (uint64_t j = 0; j < args.tasks / args.tasks_per_job; ++j) {
    submits.emplace_back("client", Frame(j + 1, "gpool-cli", MakeSubmit(j, args.tasks_per_job)));
  }
  status = Drive(c, clock, std::move(submits), {}, seq, args.tasks);
  if (status.ok()) status = Drive(c, clock, {}, Heartbeats(c, args.nodes, seq), seq, args.tasks);
  size_t running = 0;
  for (const TaskId& id : c.state().ActiveTasks()) {
    const state::TaskRecord* task = c.state().FindTask(id);
    running += task != nullptr && task->state == TaskState::kRunning;
  }
  if (!status.ok() || running != args.tasks) {
    std::fprintf(stderr, "placement: %s running=%zu of %llu\n", status.ToString().c_str(), running,
                 static_cast<unsigned long long>(args.tasks));
    return 1;
  }
  const double loaded_settle_ms = SettleStore(c);
  const Reading loaded = Read();

  // The view the scheduler driver holds while jobs wait.
  int64_t view_bytes = 0;
  SettleStore(c);
  {
    topology::ClusterView view = c.state().BuildView(clock.WallMs());
    view_bytes = static_cast<int64_t>(Read().rss) - static_cast<int64_t>(loaded.rss);
  }
  const size_t peak = PeakResidentBytes();
  const auto [dispatcher_heap, registry_heap] = c.EmptyComponents();
  const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  const double per_device = static_cast<double>(fleet.rss - baseline.rss) / static_cast<double>(gpus);
  const double per_task = static_cast<double>(loaded.rss - fleet.rss) / static_cast<double>(args.tasks);
  const double heap_per_device = static_cast<double>(fleet.heap - baseline.heap) / static_cast<double>(gpus);
  const double heap_per_task = static_cast<double>(loaded.heap - fleet.heap) / static_cast<double>(args.tasks);
  char params[512];
  std::snprintf(params, sizeof(params),
                "\"nodes\": %u, \"gpus\": %llu, \"live_tasks\": %llu, \"tasks_per_job\": %u, \"snapshots\": %llu, "
                "\"applied_index\": %llu, \"setup_s\": %.1f",
                args.nodes, static_cast<unsigned long long>(gpus), static_cast<unsigned long long>(args.tasks),
                args.tasks_per_job, static_cast<unsigned long long>(c.snapshots()),
                static_cast<unsigned long long>(c.state().applied_index()), setup_s);
  std::printf("{\"metric\": \"coordinator_baseline_rss\", \"value\": %zu, \"unit\": \"bytes\", \"params\": {%s}}\n",
              baseline.rss, params);
  std::printf("{\"metric\": \"coordinator_rss\", \"value\": %zu, \"unit\": \"bytes\", \"params\": {%s, "
              "\"fleet_rss\": %zu, \"peak_rss\": %zu}}\n",
              loaded.rss, params, fleet.rss, peak);
  std::printf("{\"metric\": \"bytes_per_device\", \"value\": %.0f, \"unit\": \"bytes\", \"params\": {%s, "
              "\"heap_bytes_per_device\": %.0f, \"target\": %.0f}}\n",
              per_device, params, heap_per_device, kTargetBytesPerDevice);
  std::printf("{\"metric\": \"bytes_per_live_task\", \"value\": %.0f, \"unit\": \"bytes\", \"params\": {%s, "
              "\"heap_bytes_per_task\": %.0f, \"target\": %.0f, \"store_settle_ms\": %.0f}}\n",
              per_task, params, heap_per_task, kTargetBytesPerTask, loaded_settle_ms);
  // Where the per-task bytes go: what is not the dispatcher's or the
  // registry's is the replicated state (plus LevelDB's bounded buffers).
  std::printf("{\"metric\": \"heap_breakdown_per_live_task\", \"value\": %.0f, \"unit\": \"bytes\", "
              "\"params\": {%s, \"dispatcher\": %.0f, \"node_registry\": %.0f, \"state_and_rest\": %.0f, "
              "\"note\": \"node_registry includes its per-node links\"}}\n",
              heap_per_task, params, static_cast<double>(dispatcher_heap) / static_cast<double>(args.tasks),
              static_cast<double>(registry_heap) / static_cast<double>(args.tasks),
              heap_per_task - static_cast<double>(dispatcher_heap + registry_heap) / static_cast<double>(args.tasks));
  std::printf("{\"metric\": \"scheduler_view_bytes\", \"value\": %lld, \"unit\": \"bytes\", \"params\": {%s, "
              "\"note\": \"transient: held while jobs wait, dropped once none does\"}}\n",
              static_cast<long long>(view_bytes), params);
  if (args.connections > 0) {
    SettleStore(c);
    const bench::ConnectionBytes bytes =
        bench::BytesPerConnection(args.connections, args.connection_exchanges, [] { return Read().rss; });
    std::printf("{\"metric\": \"zmq_bytes_per_worker_connection\", \"value\": %.0f, \"unit\": \"bytes\", "
                "\"params\": {\"connections\": %lld, \"note\": \"ROUTER side after one heartbeat, not in "
                "bytes_per_device\"}}\n",
                bytes.first, static_cast<long long>(args.connections));
    if (args.connection_exchanges > 0) {
      std::printf("{\"metric\": \"zmq_bytes_per_worker_connection_steady\", \"value\": %.0f, \"unit\": "
                  "\"bytes\", \"params\": {\"connections\": %lld, \"exchanges\": %lld, \"note\": \"ROUTER side "
                  "after that many heartbeats and replies each: libzmq's pipe chunks, flat from there\"}}\n",
                  bytes.steady, static_cast<long long>(args.connections),
                  static_cast<long long>(args.connection_exchanges));
    }
  }
  // Read as a budget for the whole cluster too: devices x 1 KiB + tasks x 2 KiB.
  const double budget = kTargetBytesPerDevice * static_cast<double>(gpus) +
                        kTargetBytesPerTask * static_cast<double>(args.tasks);
  const double used = static_cast<double>(loaded.rss - baseline.rss);
  const bool met = per_device <= kTargetBytesPerDevice && per_task <= kTargetBytesPerTask;
  std::printf("{\"metric\": \"memory_target_met\", \"value\": %d, \"unit\": \"bool\", \"params\": {%s, "
              "\"bytes_per_device\": %.0f, \"target_bytes_per_device\": %.0f, \"bytes_per_live_task\": %.0f, "
              "\"target_bytes_per_live_task\": %.0f, \"used_bytes\": %.0f, \"budget_bytes\": %.0f, "
              "\"within_total_budget\": %s}}\n",
              met ? 1 : 0, params, per_device, kTargetBytesPerDevice, per_task, kTargetBytesPerTask, used, budget,
              used <= budget ? "true" : "false");
  std::filesystem::remove_all(dir, ec);
  return 0;
}
