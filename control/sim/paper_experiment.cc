#include "control/sim/paper_experiment.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "control/scheduler/fragmentation.h"
#include "control/scheduler/scheduler.h"
#include "control/sim/arrivals.h"
#include "control/sim/share_packing.h"
#include "control/sim/sim_cluster.h"
#include "control/sim/workload.h"

namespace gpool::sim {

namespace {

void RecordLeftover(const SimCluster& cluster, const std::vector<topology::WorkloadShape>& workload, double capacity,
                    SeedResult& result) {
  for (const auto& node : cluster.view().nodes) {
    for (const auto& gpu : node.gpus) {
      const auto load = topology::DeviceLoad::Of(gpu);
      if (gpu.allocated || load.tenants == 0) continue;
      result.share_devices += 1;
      result.share_free_pct += 100.0 * scheduler::FreeMilli(gpu, load, false) / capacity;
    }
    const scheduler::NodeFree free = scheduler::FreeOf(node);
    const bool cpu_fits = std::any_of(workload.begin(), workload.end(), [&](const topology::WorkloadShape& shape) {
      return shape.gpus > 0 && shape.cpu_milli <= free.cpu_milli && GpuModelAllowed(shape.gpu_model, free.model);
    });
    for (uint32_t milli : free.gpu_milli) {
      double& bucket = !cpu_fits ? result.left_cpu_bound_pct
                       : milli >= 1000 ? result.left_idle_gpus_pct
                                       : result.left_partial_gpus_pct;
      bucket += 100.0 * milli / capacity;
    }
  }
}

SeedResult RunSeed(const std::vector<TraceNode>& nodes, const std::vector<SimJob>& jobs,
                   const std::vector<topology::WorkloadShape>& workload, const scheduler::SchedulerConfig& config,
                   uint64_t seed, uint32_t arrival_pct) {
  SeedResult result;
  result.seed = seed;
  std::vector<TraceNode> ordered;
  ordered.reserve(nodes.size());
  for (size_t i : NodeOrder(nodes.size(), seed)) ordered.push_back(nodes[i]);
  SimCluster cluster = SimCluster::FromTrace(ordered);
  cluster.view().workload = workload;
  const auto fgd_target = scheduler::CommonestShapes(workload, scheduler::kFgdCoverage);  // what the paper reports
  const double capacity = static_cast<double>(cluster.gpu_capacity_milli());
  const double target = capacity * arrival_pct / 100.0;
  ArrivalStream arrivals(jobs.size(), seed);
  double arrived = 0;
  uint32_t next_pct = 0;
  auto record = [&] {
    while (next_pct <= arrival_pct && arrived >= capacity * next_pct / 100.0) {
      result.alloc_pct.push_back(100.0 * static_cast<double>(cluster.allocated_gpu_milli()) / capacity);
      if (next_pct == 100) {
        const double frag = cluster.Fragmentation(fgd_target);
        const double idle = static_cast<double>(cluster.free_gpu_milli());
        result.frag_pct_at_100 = 100.0 * frag / capacity;
        result.frag_idle_pct_at_100 = idle > 0 ? 100.0 * frag / idle : 0;
      }
      ++next_pct;
    }
  };
  record();
  std::vector<uint32_t> shares_placed;  // thousandths of a GPU, one per placed share
  bool has_gpu_demand = false;
  for (const auto& job : jobs) has_gpu_demand = has_gpu_demand || job.gpu_milli > 0;
  while (has_gpu_demand && arrived < target) {
    const SimJob& drawn = jobs[arrivals.Next()];
    topology::PendingJob job = drawn.job;
    job.id = JobId(++result.pods);
    job.arrival = result.pods;
    cluster.view().pending.assign(1, job);
    const scheduler::Plan plan = scheduler::Schedule(cluster.view(), config);
    bool placed = false;
    for (const auto& bind : plan.binds) {
      placed = cluster.Bind(bind, cluster.view().pending.front(), static_cast<int64_t>(result.pods)) || placed;
    }
    const auto& asked = drawn.job.tasks.front().resources;
    if (placed) {
      ++result.placed;
      if (asked.Shared() && asked.gpus == 1) shares_placed.push_back(static_cast<uint32_t>(drawn.gpu_milli));
    } else if (drawn.gpu_milli > 0) {
      result.failed_pct_by_gpus[asked.Whole() ? asked.gpus : 0] += 100.0 * static_cast<double>(drawn.gpu_milli) / capacity;
    }
    arrived += static_cast<double>(drawn.gpu_milli);
    record();
  }
  cluster.view().pending.clear();
  RecordLeftover(cluster, workload, capacity, result);
  const SharePacking offline = FirstFitDecreasing(std::move(shares_placed));
  result.ffd_share_devices = static_cast<double>(offline.devices);
  result.ffd_share_free_pct = 100.0 * static_cast<double>(offline.free_milli) / capacity;
  return result;
}

}  // namespace

double PolicyResult::MeanAllocAt(uint32_t pct) const {
  if (seeds.empty()) return 0;
  double sum = 0;
  for (const auto& seed : seeds) sum += pct < seed.alloc_pct.size() ? seed.alloc_pct[pct] : seed.alloc_pct.back();
  return sum / static_cast<double>(seeds.size());
}

double PolicyResult::Mean(double SeedResult::*field) const {
  if (seeds.empty()) return 0;
  double sum = 0;
  for (const auto& seed : seeds) sum += seed.*field;
  return sum / static_cast<double>(seeds.size());
}

double PolicyResult::MeanFragAt100() const {
  return Mean(&SeedResult::frag_pct_at_100);
}

double PolicyResult::MeanFragIdleAt100() const {
  return Mean(&SeedResult::frag_idle_pct_at_100);
}

PolicyResult RunPaperExperiment(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                const std::string& policy, const scheduler::SchedulerConfig& config,
                                const PaperOptions& options) {
  PolicyResult result;
  result.policy = policy;
  result.seeds.resize(options.seeds);
  if (pods.empty() || options.seeds == 0) return result;
  const std::vector<SimJob> jobs = JobsFromTrace(pods);
  const auto workload = TraceWorkload(pods);
  const uint32_t threads = std::max<uint32_t>(
      1, std::min<uint32_t>(options.seeds, options.threads ? options.threads : std::thread::hardware_concurrency()));
  std::atomic<uint32_t> next{0};
  auto worker = [&] {
    for (uint32_t i = next++; i < options.seeds; i = next++) {
      result.seeds[i] = RunSeed(nodes, jobs, workload, config, options.first_seed + i, options.arrival_pct);
    }
  };
  std::vector<std::thread> pool;
  for (uint32_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& thread : pool) thread.join();
  return result;
}

double EmptyClusterFragPct(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods) {
  SimCluster cluster = SimCluster::FromTrace(nodes);
  const double capacity = static_cast<double>(cluster.gpu_capacity_milli());
  const auto fgd_target = scheduler::CommonestShapes(TraceWorkload(pods), scheduler::kFgdCoverage);
  return capacity > 0 ? 100.0 * cluster.Fragmentation(fgd_target) / capacity : 0;
}

}  // namespace gpool::sim
