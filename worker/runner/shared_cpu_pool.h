// SharedCpuPool: keeps a node's ordinary tasks off the cores others hold
// exclusively (issue 50; HBox's static CPU manager calls it the shared
// pool). A task with exclusive whole cores runs in a cpuset of its own
// (task_cgroup.h); every other task on the node runs in a cpuset that is the
// worker's allowed CPUs (CgroupTree::AllowedCpus) minus every core a
// starting or running task holds exclusively, rewritten for all of them
// whenever an exclusive task starts or ends.
//
//   Hold(task, cores)  before an exclusive task's launch: its cores leave
//                      the pool, every shared task is narrowed at once, so
//                      none runs on them when it starts.
//   Join(task, gen, within)
//                      a shared task's launch answered: it is kept in step
//                      from now on; if the pool changed since its launch
//                      began (gen), its cpuset is rewritten now, since it
//                      was made from the older pool (possibly in a
//                      supervisor process, out of this one's reach).
//   Forget(task)       its end (or a launch that failed): an exclusive
//                      task's cores return to the pool, every shared task
//                      is widened; a shared one is no longer kept.
//
// A shared task pinned to a NUMA node's CPUs (LaunchRequest::numa) gets
// the pool's CPUs among those (`within`), not the whole pool: kernels
// before 6.2 reset every thread's affinity to the whole new cpuset when it
// is rewritten (newer ones restore the task's own request), so the cpuset
// itself carries the pinning. When the exclusive tasks
// hold all of them, it gets the whole pool (off their cores, unpinned).
//
// Only tasks this pool was told about are written: a cgroup it does not
// know (another exclusive task a restarted worker has yet to adopt) is
// never mistaken for a shared one.
//
// When the held cores would leave the pool empty, the exclusive task still
// starts (the scheduler granted it), but shared tasks keep all allowed CPUs,
// with a warning: an empty cpuset is refused by the kernel (v1) or would
// leave their threads nowhere to run. The pool is then shared with the
// exclusive tasks until a core frees.
//
// Owned by the launcher (posix_process_launcher.h), only where the tree can
// make cpusets; without them (--exclusive-cores-fallback=affinity on a node
// without cpusets) there is no pool and shared tasks run on every CPU.
//
// Thread-safety: none; one thread (the runner's).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "worker/runner/task_cgroup.h"

namespace gpool::worker {

class SharedCpuPool {
 public:
  // `tree`: not owned, outlives the pool. `logger`: nullptr for spdlog's default.
  SharedCpuPool(CgroupTree* tree, std::shared_ptr<spdlog::logger> logger);

  // The CPUs a shared task gets now; empty when the allowed CPUs cannot be
  // read (shared tasks then get no cpuset, as without a pool).
  const std::vector<uint32_t>& Cpus() const { return pool_; }
  // Those of them among `within` (a NUMA pinning), or all of them when
  // `within` is empty or holds none of them.
  std::vector<uint32_t> CpusWithin(const std::vector<uint32_t>& within) const;
  // Changes whenever Cpus() may have changed.
  uint64_t generation() const { return generation_; }

  void Hold(const std::string& cgroup, const std::vector<uint32_t>& cores);
  void Join(const std::string& cgroup, uint64_t generation_at_launch, std::vector<uint32_t> within = {});
  void Forget(const std::string& cgroup);

  // What is known, for tests and logs.
  bool Holds(const std::string& cgroup) const { return held_.count(cgroup) > 0; }
  bool Keeps(const std::string& cgroup) const { return shared_.count(cgroup) > 0; }

 private:
  // Recomputes the pool from the allowed CPUs and the held cores; when it
  // changed, rewrites every shared task's cpuset.
  void Update();
  void Write(const std::string& cgroup);

  CgroupTree* tree_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<std::string, std::vector<uint32_t>> held_;  // exclusive tasks' cores, by cgroup name
  std::map<std::string, std::vector<uint32_t>> shared_;  // shared tasks kept in step, with their `within`
  std::vector<uint32_t> pool_;
  bool starved_ = false;  // held cores cover every allowed CPU (warned once per episode)
  uint64_t generation_ = 0;
};

}  // namespace gpool::worker
