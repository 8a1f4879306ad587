// Test helpers: build ClusterViews for scheduler scenarios in a few lines.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "control/scheduler/scheduler.h"

namespace gpool::scheduler::testing {

inline constexpr auto kHigh = topology::PriorityClass::kHigh;
inline constexpr auto kLow = topology::PriorityClass::kLow;
inline SchedulerConfig Default() { return SchedulerConfig{}; }
inline SchedulerConfig WithStrategy(Strategy strategy) {
  SchedulerConfig config;
  config.node_order.strategy = strategy;
  return config;
}

inline topology::NodeView MakeNode(std::string name, uint32_t gpus, std::string pool = "public",
                                   std::string model = "A100", uint64_t cpu = 64'000, uint64_t memory = 512 * 1024) {
  topology::NodeView node;
  node.name = std::move(name);
  node.pool = std::move(pool);
  node.cpu_milli_total = node.cpu_milli_free = cpu;
  node.memory_mib_total = node.memory_mib_free = memory;
  for (uint32_t i = 0; i < gpus; ++i) node.gpus.push_back({i, model, 81920, true, false});
  return node;
}

inline topology::QueueView MakeQueue(std::string name, std::string parent, Quota capability = {}, Quota deserved = {},
                                     Quota guarantee = {}) {
  return topology::QueueView{std::move(name), std::move(parent), std::move(capability), std::move(deserved),
                             std::move(guarantee)};
}

// A pending job: `tasks` tasks of `gpus` GPUs each, all required unless
// `min` says otherwise (then the rest are elastic).
struct JobBuilder {
  topology::PendingJob job;
  JobBuilder(uint64_t id, std::string queue, uint32_t tasks, uint32_t gpus) {
    job.id = JobId(id);
    job.arrival = id;
    job.queue = std::move(queue);
    for (uint32_t i = 0; i < tasks; ++i) job.tasks.push_back({i, 0, Resources{gpus, 1000, 1024, ""}});
    job.groups = {topology::GroupRule{tasks, 0}};
  }
  JobBuilder& Class(topology::PriorityClass cls) {
    job.priority_class = cls;
    return *this;
  }
  JobBuilder& Min(uint32_t min) {
    job.groups[0].min = min;
    return *this;
  }
  JobBuilder& Pool(std::string pool) {
    job.pool = std::move(pool);
    return *this;
  }
  JobBuilder& User(std::string user) {
    job.user = std::move(user);
    return *this;
  }
  JobBuilder& Cpu(uint64_t cpu_milli, uint64_t memory_mib) {
    for (auto& task : job.tasks) {
      task.resources.cpu_milli = cpu_milli;
      task.resources.memory_mib = memory_mib;
    }
    return *this;
  }
  JobBuilder& Model(std::string model) {
    for (auto& task : job.tasks) task.resources.gpu_model = model;
    return *this;
  }
  // Each task takes a share of its GPUs instead of whole devices.
  JobBuilder& Share(uint64_t memory_mib, uint32_t compute_pct = 0, std::string qos = "", uint32_t memory_pct = 0) {
    for (auto& task : job.tasks) {
      task.resources.gpu_memory_mib = memory_mib;
      task.resources.gpu_memory_pct = memory_pct;
      task.resources.gpu_compute_pct = compute_pct;
      task.resources.sharing_qos = qos;
    }
    return *this;
  }
  JobBuilder& Mig(std::string profile, uint64_t memory_mib = 0) {
    for (auto& task : job.tasks) {
      task.resources.mig_profile = profile;
      task.resources.gpu_memory_mib = memory_mib;
    }
    return *this;
  }
  JobBuilder& Numa(topology::NumaPolicy policy) {
    job.numa_policy = policy;
    return *this;
  }
  JobBuilder& MaxRuntime(int64_t ms) {
    job.max_runtime_ms = ms;
    return *this;
  }
  JobBuilder& Waited(int64_t ms) {
    job.waiting_ms = ms;
    return *this;
  }
  operator topology::PendingJob() const { return job; }  // NOLINT: builder
};

// Marks `gpus` GPUs of `node` used by a running task and returns the task.
inline topology::RunningTask Occupy(topology::ClusterView& view, uint64_t job, uint32_t task_index,
                                    const std::string& node_name, uint32_t gpus, std::string queue,
                                    topology::PriorityClass cls = topology::PriorityClass::kMedium,
                                    int64_t bind_order = 0) {
  topology::RunningTask task;
  task.job = JobId(job);
  task.task_index = task_index;
  task.queue = std::move(queue);
  task.priority_class = cls;
  task.node = node_name;
  task.gpus = gpus;
  task.cpu_milli = 1000;
  task.memory_mib = 1024;
  task.bind_order = bind_order;
  for (auto& node : view.nodes) {
    if (node.name != node_name) continue;
    task.gpu_model = node.gpus.empty() ? "" : node.gpus.front().model;
    uint32_t taken = 0;
    for (auto& gpu : node.gpus) {
      if (taken == gpus) break;
      if (!gpu.allocated && gpu.healthy) {
        gpu.allocated = true;
        ++taken;
      }
    }
    node.cpu_milli_free -= task.cpu_milli;
    node.memory_mib_free -= task.memory_mib;
  }
  return task;
}

inline size_t BindsOf(const Plan& plan, uint64_t job) {
  return static_cast<size_t>(
      std::count_if(plan.binds.begin(), plan.binds.end(), [job](const Placement& p) { return p.job.value() == job; }));
}

inline std::vector<std::pair<uint64_t, uint32_t>> Evicted(const Plan& plan) {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  for (const auto& e : plan.evictions) out.emplace_back(e.job.value(), e.task_index);
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<std::string> ReasonsOf(const Plan& plan, uint64_t job) {
  for (const auto& pending : plan.pending) {
    if (pending.job.value() == job) return topology::RenderPendingReasons(pending.reasons);
  }
  return {};
}

inline bool AnyReasonContains(const Plan& plan, uint64_t job, const std::string& text) {
  for (const auto& reason : ReasonsOf(plan, job)) {
    if (reason.find(text) != std::string::npos) return true;
  }
  return false;
}

// Two queues "a" and "b" deserving `deserved_each` GPUs each, on `nodes` nodes.
inline topology::ClusterView TwoTeams(uint32_t nodes, uint32_t gpus_each, uint64_t deserved_each) {
  topology::ClusterView view;
  for (uint32_t n = 0; n < nodes; ++n) view.nodes.push_back(MakeNode("n" + std::to_string(n), gpus_each));
  view.queues = {MakeQueue("a", "root", {}, {{"gpu", deserved_each}}),
                 MakeQueue("b", "root", {}, {{"gpu", deserved_each}})};
  return view;
}

}  // namespace gpool::scheduler::testing
