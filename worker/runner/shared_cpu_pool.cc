#include "worker/runner/shared_cpu_pool.h"

#include <algorithm>
#include <set>
#include <utility>

#include "topology/cpulist.h"
#include "worker/log.h"

namespace gpool::worker {

SharedCpuPool::SharedCpuPool(CgroupTree* tree, std::shared_ptr<spdlog::logger> logger)
    : tree_(tree), log_(OrDefault(std::move(logger))) {
  Update();
}

void SharedCpuPool::Hold(const std::string& cgroup, const std::vector<uint32_t>& cores) {
  held_[cgroup] = cores;
  Update();
}

std::vector<uint32_t> SharedCpuPool::CpusWithin(const std::vector<uint32_t>& within) const {
  if (within.empty()) return pool_;
  std::vector<uint32_t> cpus;
  for (uint32_t cpu : pool_) {
    if (std::find(within.begin(), within.end(), cpu) != within.end()) cpus.push_back(cpu);
  }
  return cpus.empty() ? pool_ : cpus;
}

void SharedCpuPool::Join(const std::string& cgroup, uint64_t generation_at_launch, std::vector<uint32_t> within) {
  shared_[cgroup] = std::move(within);
  // Made from an older pool: an exclusive task began between its launch's
  // two halves, and its cores may still be in this one's cpuset.
  if (generation_at_launch != generation_) Write(cgroup);
}

void SharedCpuPool::Forget(const std::string& cgroup) {
  shared_.erase(cgroup);
  if (held_.erase(cgroup) > 0) Update();
}

void SharedCpuPool::Update() {
  auto allowed = tree_->AllowedCpus();
  std::vector<uint32_t> pool;
  std::set<uint32_t> held;
  for (const auto& [name, cores] : held_) held.insert(cores.begin(), cores.end());
  if (allowed.ok()) {
    for (uint32_t cpu : *allowed) {
      if (held.count(cpu) == 0) pool.push_back(cpu);
    }
  } else {
    log_->warn("shared cpu pool unknown: new shared tasks get no cpuset, running ones keep theirs error={}",
               Q(allowed.status().ToString()));
  }
  const bool starved = allowed.ok() && pool.empty();
  if (starved) {
    // An empty cpuset is refused (v1) or leaves threads nowhere to run: the
    // exclusive tasks' cores are shared again rather than stopping the rest.
    pool = *allowed;
    if (!starved_) {
      log_->warn("exclusive cores leave no CPU for shared tasks; they keep all allowed CPUs allowed={} held={} "
                 "shared_tasks={}",
                 topology::FormatCpuList(*allowed), topology::FormatCpuList({held.begin(), held.end()}),
                 shared_.size());
    }
  } else if (starved_) {
    log_->info("shared cpu pool has cores of its own again cpus={}", topology::FormatCpuList(pool));
  }
  starved_ = starved;
  if (pool == pool_) return;
  pool_ = std::move(pool);
  ++generation_;
  log_->info("shared cpu pool changed cpus={} held={} shared_tasks={}",
             pool_.empty() ? "none" : topology::FormatCpuList(pool_),
             held.empty() ? "none" : topology::FormatCpuList({held.begin(), held.end()}), shared_.size());
  if (pool_.empty()) return;  // unknown: the running ones keep what they have
  for (const auto& [cgroup, within] : shared_) Write(cgroup);
}

void SharedCpuPool::Write(const std::string& cgroup) {
  auto it = shared_.find(cgroup);
  if (pool_.empty() || it == shared_.end()) return;
  const std::vector<uint32_t> cpus = CpusWithin(it->second);
  Status set = tree_->SetTaskCpus(cgroup, cpus);
  if (set.code() == StatusCode::kNotFound) {
    // Started without a cpuset (by a worker before the pool, or its cgroup
    // already gone with its end): nothing to keep in step.
    log_->debug("shared task has no cpuset to update cgroup={}", cgroup);
  } else if (!set.ok()) {
    log_->warn("shared task's cpuset not updated cgroup={} cpus={} error={}", cgroup, topology::FormatCpuList(cpus),
               Q(set.ToString()));
  }
}

}  // namespace gpool::worker
