// gpool-bench-metrics: what a Prometheus scrape of the coordinator costs at
// the scale, and whether scrapes slow scheduling.
//
// Targets (issue 34): at 12,500 nodes (100,000 GPUs) and 100,000 live tasks
// in the coordinator's state, one /metrics render < 200 ms, and scheduling
// cycle time changed by < 2 % while scrapes run.
//
// How: a ClusterState is built by applying commands as the log would (nodes
// registered, 100,000 one-GPU jobs submitted, bound and started, plus a
// backlog of pending jobs the full cluster cannot place, so cycles have work).
// The render is the coordinator's own (RenderCoordinatorMetrics), per-GPU
// series on and off. Baselines in the same run: encoding the state snapshot
// (the other whole-state walk the coordinator does), and the scheduling cycle
// itself. For the cycle effect, cycles run back to back on one thread (as
// the coordinator's scheduling thread does) for the same number of cycles
// alone and with a second thread rendering the page continuously (a scrape
// every few ms, far more often than any Prometheus' 15-60 s), alternating
// alone/with in rounds so drift in the machine's speed hits both alike.
//
//   gpool-bench-metrics [--nodes 12500] [--tasks 100000] [--pending 2000] [--rounds 3]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "control/metrics/coordinator_metrics.h"
#include "control/scheduler/scheduler.h"
#include "control/state/cluster_state.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void Emit(const char* metric, double value, const char* unit, const std::string& params) {
  std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"params\": {%s}}\n", metric, value, unit,
              params.c_str());
  std::fflush(stdout);
}

class StateBuilder {
 public:
  state::ApplyResult Do(state::CommandBody body) {
    return state_.Apply(++index_, state::Command{static_cast<int64_t>(1'700'000'000'000 + index_), std::move(body)});
  }

  void Build(uint32_t nodes, uint64_t tasks, uint64_t pending) {
    for (uint32_t n = 0; n < nodes; ++n) {
      NodeSpec spec;
      spec.name = "node-" + std::to_string(n);
      spec.hostname = spec.name;
      spec.cpu_milli = 128'000;
      spec.memory_mib = 1 << 20;
      for (uint32_t g = 0; g < 8; ++g) {
        GpuInfo gpu;
        gpu.index = g;
        gpu.uuid = "GPU-" + std::to_string(n) + "-" + std::to_string(g);
        gpu.model = "H100-SXM5-80GB";
        gpu.memory_mib = 81'559;
        spec.gpus.push_back(gpu);
      }
      Do(state::RegisterNodeCmd{spec, {}, {}, ""});
    }
    const uint64_t live = std::min<uint64_t>(tasks, uint64_t{nodes} * 8);
    state::ApplyPlanCmd plan;
    for (uint64_t t = 0; t < live + pending; ++t) {
      JobSpec job;
      job.name = "job-" + std::to_string(t);
      job.queue = "default";
      TaskGroupSpec group;
      group.replicas = 1;
      group.command = {"train"};
      group.resources = Resources{t < live ? 1u : 8u, 1000, 1024};
      job.tasks.push_back(group);
      const state::ApplyResult submitted = Do(state::SubmitJobCmd{std::move(job), ""});
      if (t >= live) continue;
      plan.binds.push_back(state::PlanBind{JobId(submitted.job_id), 0, "node-" + std::to_string(t / 8),
                                           {static_cast<uint32_t>(t % 8)}, 1000, 1024});
      if (plan.binds.size() == 1000) Do(std::exchange(plan, {}));
    }
    if (!plan.binds.empty()) Do(std::exchange(plan, {}));
    for (uint64_t t = 1; t <= live; ++t) {
      TaskEvent event;
      event.node = "node-" + std::to_string((t - 1) / 8);
      event.task = TaskId{JobId(t), 0, 0};
      event.kind = TaskEventKind::kStarted;
      event.pid = static_cast<int64_t>(t + 1000);
      Do(state::TaskEventCmd{event});
    }
  }

  state::ClusterState state_;
  uint64_t index_ = 0;
};

int Run(int argc, char** argv) {
  uint32_t nodes = 12'500;
  uint64_t tasks = 100'000, pending = 2'000;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes")) nodes = static_cast<uint32_t>(std::stoul(argv[i + 1]));
    if (!std::strcmp(argv[i], "--tasks")) tasks = std::stoull(argv[i + 1]);
    if (!std::strcmp(argv[i], "--pending")) pending = std::stoull(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::stoi(argv[i + 1]);
  }
  const std::string params = "\"nodes\": " + std::to_string(nodes) + ", \"gpus\": " + std::to_string(nodes * 8) +
                             ", \"live_tasks\": " + std::to_string(tasks) + ", \"pending_jobs\": " +
                             std::to_string(pending);
  StateBuilder builder;
  const auto built = Clock::now();
  builder.Build(nodes, tasks, pending);
  std::fprintf(stderr, "state built in %.1f s: nodes=%zu jobs=%zu active=%zu\n", Ms(Clock::now() - built) / 1000,
               builder.state_.nodes().size(), builder.state_.jobs().size(), builder.state_.active_task_count());
  const state::ClusterState& state = builder.state_;
  ControlMetrics recorded(state);
  WorkerTable workers;
  CoordinatorMetricsInput input;
  input.state = &state;
  input.recorded = &recorded;
  input.workers = &workers;
  input.replica_id = "bench";
  input.version = "bench";
  input.leading = true;

  for (bool per_gpu : {true, false}) {
    input.per_gpu = per_gpu;
    std::vector<double> times;
    size_t bytes = 0;
    for (int i = 0; i < 5; ++i) {
      const auto start = Clock::now();
      const std::string page = RenderCoordinatorMetrics(input);
      times.push_back(Ms(Clock::now() - start));
      bytes = page.size();
    }
    std::sort(times.begin(), times.end());
    const std::string p = params + ", \"per_gpu\": " + (per_gpu ? "true" : "false");
    Emit("metrics_scrape_render_ms_p50", times[times.size() / 2], "ms", p);
    Emit("metrics_scrape_render_ms_max", times.back(), "ms", p);
    Emit("metrics_scrape_bytes", static_cast<double>(bytes), "bytes", p);
  }
  {
    const auto start = Clock::now();
    const std::string snapshot = state.Snapshot();
    Emit("baseline_state_snapshot_encode_ms", Ms(Clock::now() - start), "ms",
         params + ", \"snapshot_bytes\": " + std::to_string(snapshot.size()));
  }

  // Scheduling cycles alone and beside a continuous scraper.
  topology::ClusterView view = state.BuildView(1'700'000'000'000);
  scheduler::SchedulerConfig policy;
  auto cycles = [&](int n) {
    const auto start = Clock::now();
    for (int i = 0; i < n; ++i) (void)scheduler::Schedule(view, policy);
    return Ms(Clock::now() - start) / n;
  };
  input.per_gpu = true;
  (void)cycles(2);  // warm
  double alone = 0, with = 0;
  uint64_t scrapes = 0;
  for (int round = 0; round < rounds; ++round) {
    alone += cycles(5);
    std::atomic<bool> stop{false};
    std::thread scraper([&] {
      while (!stop.load()) {
        (void)RenderCoordinatorMetrics(input);
        ++scrapes;
        // A scrape every 15 s is Prometheus' default; this is one every
        // render plus 50 ms, hundreds of times more often.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    with += cycles(5);
    stop = true;
    scraper.join();
  }
  alone /= rounds;
  with /= rounds;
  Emit("baseline_scheduling_cycle_ms", alone, "ms", params);
  Emit("scheduling_cycle_ms_with_scrapes", with, "ms", params + ", \"scrapes\": " + std::to_string(scrapes));
  Emit("scheduling_cycle_slowdown_with_scrapes_pct", (with / alone - 1) * 100, "%",
       params + ", \"scrape_interval\": \"render + 50 ms\"");
  return 0;
}

}  // namespace
}  // namespace gpool::control

int main(int argc, char** argv) { return gpool::control::Run(argc, argv); }
