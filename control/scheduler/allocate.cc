// enqueue, allocate and backfill: placing work on free capacity.
#include <algorithm>
#include <map>

#include "control/scheduler/actions.h"
#include "control/scheduler/class_rules.h"
#include "control/scheduler/job_order.h"
#include "control/scheduler/network.h"

namespace gpool::scheduler {
namespace {

using topology::PendingCode;
using topology::PendingReason;
using topology::PendingTask;

// Splits a job's waiting tasks into its gang (what each group still needs to
// reach its minimum, lowest indices first) and the elastic rest. False when
// the waiting tasks cannot make up the minimum.
bool SplitTasks(WorkJob& job) {
  std::vector<uint32_t> wanted(job.active.size(), 0);
  for (uint32_t g = 0; g < job.active.size(); ++g) {
    const uint32_t min = job.GroupMin(g);
    wanted[g] = job.active[g] < min ? min - job.active[g] : 0;
  }
  job.gang.clear();
  job.extra.clear();
  job.min_gpus = 0;
  for (const auto& task : job.view->tasks) {
    const uint32_t group = job.view->groups.empty() ? 0 : task.group;
    if (group < wanted.size() && wanted[group] > 0) {
      --wanted[group];
      job.gang.push_back(&task);
      job.min_gpus += task.resources.gpus;
    } else {
      job.extra.push_back(&task);
    }
  }
  return std::all_of(wanted.begin(), wanted.end(), [](uint32_t left) { return left == 0; });
}

// The nodes (of `candidates`, most free GPUs first) that would hold the
// job's gang once their work finishes, just enough of them; empty when the
// gang could not fit on all of them even empty.
std::vector<size_t> NodesToHold(Session& session, const WorkJob& job, std::vector<size_t> candidates) {
  auto& nodes = session.nodes();
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return nodes[a].free_gpus > nodes[b].free_gpus; });
  std::vector<const PendingTask*> tasks = job.gang;
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const PendingTask* a, const PendingTask* b) { return a->resources.gpus > b->resources.gpus; });
  std::vector<size_t> chosen;
  std::vector<uint32_t> room;
  for (const PendingTask* task : tasks) {
    bool placed = false;
    for (size_t c = 0; c < chosen.size() && !placed; ++c) {
      if (room[c] >= task->resources.gpus) {
        room[c] -= task->resources.gpus;
        placed = true;
      }
    }
    while (!placed && !candidates.empty()) {
      const size_t node = candidates.front();
      candidates.erase(candidates.begin());
      if (session.CheckStatic(job, *task, nodes[node])) continue;
      chosen.push_back(node);
      room.push_back(nodes[node].usable_gpus - task->resources.gpus);
      placed = true;
    }
    if (!placed) return {};
  }
  return chosen;
}

// Holds nodes for a large job that did not fit, so capacity freed by
// finishing work gathers for it instead of being taken by smaller jobs. The
// nodes closest to free enough (most free GPUs) are held, just enough of
// them for its gang; nothing is held if its gang could not fit even on an
// empty pool. A single-switch job gets nodes under one switch of its tier
// (the domain with the most free GPUs that can hold it), or none: held
// nodes it could not use together would idle for nothing.
void ReserveFor(Session& session, const WorkJob& job) {
  auto& nodes = session.nodes();
  const bool switch_bound = job.view->network_mode == topology::NetworkMode::kSingleSwitch;
  const std::string label = topology::TierLabel(std::max<uint32_t>(1, job.view->network_tier));
  std::map<std::string, std::vector<size_t>> domains;  // switch -> candidates under it ("" when not bound)
  std::map<std::string, uint64_t> domain_free;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const WorkNode& node = nodes[i];
    if (node.reserved_for != 0 || node.claimed_for != 0) continue;
    if (session.CheckStatic(job, *job.gang.front(), node)) continue;
    std::string domain;
    if (switch_bound) {
      auto it = node.view->labels.find(label);
      if (it == node.view->labels.end()) continue;  // under no known switch of its tier
      domain = it->second;
    }
    domains[domain].push_back(i);
    domain_free[domain] += node.free_gpus;
  }
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [domain, free] : domain_free) order.emplace_back(free, domain);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [free, domain] : order) {
    const std::vector<size_t> chosen = NodesToHold(session, job, domains[domain]);
    if (chosen.empty()) continue;
    for (size_t node : chosen) session.Reserve(node, job);
    return;
  }
}

}  // namespace

const Amounts& GangDemand(const QueueTree& tree, WorkJob& job) {
  if (job.gang_demand.size() == tree.resource_count()) return job.gang_demand;
  Amounts demand(tree.resource_count(), 0);
  for (const PendingTask* task : job.gang) {
    // A share's device memory is known before placement when given in MiB
    // (a percentage is resolved per device, and whole GPUs hold their
    // device's memory: the node checks charge those).
    const Resources& need = task->resources;
    const uint64_t share_memory = need.Whole() ? 0 : uint64_t{need.gpus} * need.gpu_memory_mib;
    tree.AddDemand(demand, need.gpus, need.cpu_milli, need.memory_mib, need.gpu_model, share_memory);
  }
  job.gang_demand = std::move(demand);
  return job.gang_demand;
}

void Enqueue(Session& session) {
  QueueTree& tree = session.queues();
  for (auto& job : session.jobs()) {
    if (!SplitTasks(job)) {
      // Some of its own tasks are still stopping (evicted): the gang can
      // only restart whole, once they are back.
      job.gang.clear();
      job.extra.clear();
      job.gang_demand.clear();
      job.reasons.push_back(PendingReason::Of(PendingCode::kOwnTasksStopping));
      job.blocked = true;
      continue;
    }
    if (job.gang.empty()) {
      job.admitted = true;  // running already; only its elastic rest waits
      continue;
    }
    job.within_deserved = !GangMayBorrow(job.view->priority_class, tree.queue(job.queue).policy);
    const Amounts& demand = GangDemand(tree, job);
    if (auto overrun = tree.CheckCapability(job.queue, demand, job.within_deserved)) {
      job.reasons.push_back(tree.DescribeOverrun(*overrun, demand));
      job.capped = true;
      continue;
    }
    job.admitted = true;
    if (job.has_claim) tree.Claim(job.queue, demand);
  }
}

void Allocate(Session& session) {
  auto& jobs = session.jobs();
  QueueTree& tree = session.queues();
  const auto& reservation = session.config().reservation;
  uint32_t reserved_in_pool[kNodePoolCount] = {0, 0, 0};

  auto try_job = [&](WorkJob& job) {
    const Amounts& demand = GangDemand(tree, job);
    if (auto overrun = tree.CheckCapability(job.queue, demand, job.within_deserved)) {
      job.reasons = {tree.DescribeOverrun(*overrun, demand)};
      return false;
    }
    const bool placed = job.view->network_mode == topology::NetworkMode::kNone
                            ? session.PlaceAll(job, job.gang, session.MayIgnoreReservations(job))
                            : PlaceWithNetwork(session, job, session.MayIgnoreReservations(job));
    if (placed) {
      job.done = true;
      return true;
    }
    return false;
  };

  // A job holding a claim goes first: the capacity its victims free is its own.
  for (auto& job : jobs) {
    if (!job.admitted || job.done || !job.has_claim || job.gang.empty()) continue;
    if (try_job(job)) continue;
    if (job.victims_draining) {
      job.done = true;  // it neither evicts again nor lets others in
      job.reasons.insert(job.reasons.begin(), PendingReason::Of(PendingCode::kVictimsStopping));
    } else {
      // Its victims are gone and it still does not fit (a node failed, say):
      // it competes again and may evict others (never the same tasks twice).
      job.has_claim = false;
    }
  }

  // A low job that found no room in its pool may borrow idle exclusive
  // nodes another queue owns; the owner takes them back by reclaim.
  auto try_borrow = [&](WorkJob& job) {
    if (!session.lendable_exclusive() || !GangMayBorrow(job.view->priority_class, tree.queue(job.queue).policy) ||
        job.pool == NodePool::kExclusive || job.view->network_mode != topology::NetworkMode::kNone ||
        tree.CheckCapability(job.queue, GangDemand(tree, job), job.within_deserved)) {
      return false;
    }
    std::vector<PendingReason> own_reasons = std::move(job.reasons);
    const NodePool own_pool = job.pool;
    job.pool = NodePool::kExclusive;
    job.borrowing = true;
    job.reasons.clear();
    const bool placed = session.PlaceAll(job, job.gang, session.MayIgnoreReservations(job));
    job.pool = own_pool;
    job.borrowing = false;
    if (placed) {
      job.done = true;  // PlaceAll cleared its reasons
    } else {
      job.reasons = std::move(own_reasons);  // why it waits is its own pool's story
    }
    return placed;
  };

  JobOrder order(session, [](const WorkJob& job) { return job.admitted && !job.done && !job.gang.empty(); });
  for (int next = order.Next(); next >= 0; next = order.Next()) {
    WorkJob& job = jobs[static_cast<size_t>(next)];
    if (try_job(job) || try_borrow(job)) {
      order.Charged(job, GangDemand(tree, job));
      continue;
    }
    const bool never_fits = std::any_of(job.reasons.begin(), job.reasons.end(), topology::NeverFits);
    const size_t pool = static_cast<size_t>(job.pool);
    // Starving: large, waited past starve_after_ms, and able to fit the
    // cluster at all (held nodes would otherwise idle for nothing).
    const bool starving = job.min_gpus >= reservation.min_gpus && job.view->waiting_ms >= reservation.starve_after_ms;
    if (reservation.enabled && starving && !never_fits && reserved_in_pool[pool] < reservation.max_per_pool &&
        (job.reasons.empty() || (job.reasons.front().code != PendingCode::kQueueAtCapability &&
                                 job.reasons.front().code != PendingCode::kQueueAtDeserved))) {
      // Low work is held for only within its queue's deserved share: beyond
      // it, what it would run on is lent and may be reclaimed at once, so
      // holding capacity idle for it would keep it from whoever it is owed to.
      if (job.view->priority_class == topology::PriorityClass::kLow) {
        if (auto overrun = tree.CheckCapability(job.queue, GangDemand(tree, job), /*within_deserved=*/true)) {
          const QueueNode& queue = tree.queue(overrun->queue);
          job.reasons.push_back(PendingReason{.code = PendingCode::kNoHoldBeyondDeserved,
                                              .queue = queue.name,
                                              .resource = tree.resource_name(overrun->resource)});
          continue;
        }
      }
      ReserveFor(session, job);
      if (session.HoldsReservation(job)) {
        ++reserved_in_pool[pool];
        job.reasons.push_back(PendingReason::Of(PendingCode::kNodesHeld));
      }
    }
  }
}

void Backfill(Session& session) {
  QueueTree& tree = session.queues();
  auto& jobs = session.jobs();
  JobOrder order(session, [](const WorkJob& job) {
    return job.admitted && !job.extra.empty() && (job.done || job.gang.empty()) && !job.has_claim;
  });
  for (int next = order.Next(); next >= 0; next = order.Next()) {
    WorkJob& job = jobs[static_cast<size_t>(next)];
    if (!job.MinimumMet()) continue;
    std::vector<PendingReason> ignored;
    job.within_deserved = !SpareMayBorrow(job.view->priority_class, tree.queue(job.queue).policy);
    for (const PendingTask* task : job.extra) {
      const Amounts demand =
          tree.Demand(task->resources.gpus, task->resources.cpu_milli, task->resources.memory_mib, task->resources.gpu_model);
      if (tree.CheckCapability(job.queue, demand, job.within_deserved)) break;
      auto node = session.FindNode(job, *task, session.MayIgnoreReservations(job), ignored);
      if (!node) break;
      session.plan().binds.push_back(session.Place(job, *task, *node));
      order.Charged(job, demand);
    }
    job.done = true;
  }
}

}  // namespace gpool::scheduler
