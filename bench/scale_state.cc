#include "bench/bench_jobs.h"
#include "bench/scale_state.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "control/state/cluster_state.h"
#include "control/state/commands.h"
#include "protocol/base/sha256.h"
#include "protocol/snapshot_file.h"
#include "topology/fleet_nodes.h"
#include "topology/node_spec_file.h"

using gpool::bench::TrainingJob;

namespace gpool::bench {
namespace {

constexpr int64_t kScaleDayMs = int64_t{24} * 3600 * 1000;

[[noreturn]] void ScaleStateFail(const std::string& what, const Status& status) {
  std::fprintf(stderr, "building the scale state: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

uint64_t ScaleSelfKib(const char* field) {
  std::ifstream status("/proc/self/status");
  const size_t n = std::strlen(field);
  for (std::string line; std::getline(status, line);) {
    if (line.compare(0, n, field) == 0) return std::strtoull(line.c_str() + n, nullptr, 10);
  }
  return 0;
}

double ScaleSecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class ScaleApplier {
 public:
  state::ApplyResult Apply(int64_t time_ms, state::CommandBody body, const char* what) {
    state::ApplyResult result = state_.Apply(++index_, state::Command{time_ms, std::move(body)});
    if (!result.status.ok()) ScaleStateFail(what, result.status);
    return result;
  }
  state::ClusterState& state() { return state_; }
  uint64_t index() const { return index_; }

 private:
  state::ClusterState state_;
  uint64_t index_ = 0;
};

}  // namespace

std::string ScaleFleetBase(uint32_t fleet) { return std::string("fleet-") + static_cast<char>('a' + fleet); }

ScaleStateReport BuildScaleSnapshot(const ScaleStateOptions& options, const std::string& path) {
  ScaleStateReport report;
  const auto build_start = std::chrono::steady_clock::now();
  auto spec = topology::LoadNodeSpecFile(options.spec_path);
  if (!spec.ok()) ScaleStateFail("reading " + options.spec_path, spec.status());
  ScaleApplier applier;
  // The fleet's nodes, as its workers will register them (the same names
  // and spec), so the usage below is of GPUs the live cluster has.
  std::vector<std::string> names;
  for (uint32_t fleet = 0, left = options.nodes; left > 0; ++fleet) {
    const uint32_t count = std::min(left, options.nodes_per_fleet);
    auto nodes = topology::MakeFleetNodes(*spec, ScaleFleetBase(fleet), count);
    if (!nodes.ok()) ScaleStateFail("deriving the fleet's nodes", nodes.status());
    for (NodeSpec& node : *nodes) {
      names.push_back(node.name);
      applier.Apply(options.now_ms - options.usage_days * kScaleDayMs, state::RegisterNodeCmd{std::move(node), {}, {}},
                    "registering a node");
    }
    left -= count;
  }
  const uint32_t gpus_per_node = spec->gpus.empty() ? 1 : static_cast<uint32_t>(spec->gpus.size());
  const uint32_t slots = std::min<uint64_t>(options.usage_gpus, uint64_t{options.nodes} * gpus_per_node);
  // Every usage GPU runs jobs back to back over the period: round r runs
  // jobs r*slots .. (r+1)*slots-1, one per GPU, each ending a minute before
  // the next round starts. Commands go in time order: a round's exits, then
  // its submits, binds and starts.
  const uint64_t rounds = slots == 0 ? 0 : (options.jobs + slots - 1) / slots;
  const int64_t period_ms = options.usage_days * kScaleDayMs;
  const int64_t round_ms = rounds == 0 ? 0 : period_ms / static_cast<int64_t>(rounds);
  const int64_t start_ms = options.now_ms - period_ms;
  auto task_event = [&](uint64_t job, const std::string& node, TaskEventKind kind, int64_t at) {
    TaskEvent event;
    event.node = node;
    event.task = TaskId{JobId(job), 0, 0};
    event.kind = kind;
    event.pid = 1000;
    event.time_ms = at;
    applier.Apply(at, state::TaskEventCmd{event}, "a task event");
  };
  uint64_t next_job = 0;
  std::vector<uint64_t> running(slots, 0);  // the job id each GPU runs, 0: none
  for (uint64_t round = 0; round < rounds; ++round) {
    const int64_t at = start_ms + static_cast<int64_t>(round) * round_ms;
    for (uint32_t slot = 0; slot < slots; ++slot) {
      if (running[slot] != 0) task_event(running[slot], names[slot / gpus_per_node], TaskEventKind::kExited, at - 60'000);
      running[slot] = 0;
    }
    for (uint32_t slot = 0; slot < slots && next_job < options.jobs; ++slot, ++next_job) {
      const std::string& node = names[slot / gpus_per_node];
      const uint64_t id =
          applier.Apply(at, state::SubmitJobCmd{TrainingJob(next_job), "scale-" + std::to_string(next_job)},
                        "submitting a job")
              .job_id;
      state::ApplyPlanCmd plan;
      plan.binds.push_back(state::PlanBind{JobId(id), 0, node, {slot % gpus_per_node}, 4'000, 32'768});
      if (applier.Apply(at, std::move(plan), "binding a job").binds_applied != 1) {
        ScaleStateFail("binding job " + std::to_string(id), Status::Internal("the bind was not applied"));
      }
      task_event(id, node, TaskEventKind::kStarted, at);
      running[slot] = id;
    }
  }
  for (uint32_t slot = 0; slot < slots; ++slot) {
    if (running[slot] != 0) task_event(running[slot], names[slot / gpus_per_node], TaskEventKind::kExited, options.now_ms - 60'000);
  }
  report.build_s = ScaleSecondsSince(build_start);
  report.index = applier.index();
  report.jobs = applier.state().jobs().size();
  report.nodes = applier.state().nodes().size();
  report.usage_records = applier.state().usage_ledger().records().size();
  report.rss_bytes = ScaleSelfKib("VmRSS:") * 1024;

  const auto encode_start = std::chrono::steady_clock::now();
  const std::string image = applier.state().Snapshot();
  report.encode_s = ScaleSecondsSince(encode_start);
  report.state_bytes = image.size();
  report.peak_rss_bytes = ScaleSelfKib("VmHWM:") * 1024;
  SnapshotFileHeader header;
  header.index = applier.index();
  header.term = 1;
  header.taken_ms = options.now_ms;
  header.state_bytes = image.size();
  header.sha256 = Sha256::Of(image);
  header.source = "gpool-bench-scale (built offline)";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::string file = EncodeSnapshotFile(header, image);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    if (!out.flush()) ScaleStateFail("writing " + path, Status::Internal("write failed"));
  }
  return report;
}

}  // namespace gpool::bench
