#include "control/scheduler/network.h"

#include <algorithm>
#include <map>

namespace gpool::scheduler {
namespace {

using topology::NetworkMode;
using topology::PendingCode;
using topology::PendingReason;
using topology::PendingTask;

struct Domain {
  std::string name;
  std::vector<size_t> nodes;
  uint64_t free_gpus = 0;
};

// The switches of `tier` over the job's usable nodes, restricted to `within`
// (nullptr: all nodes).
std::vector<Domain> Domains(Session& session, const WorkJob& job, uint32_t tier, const std::vector<bool>* within) {
  const std::string label = topology::TierLabel(tier);
  std::map<std::string, Domain> by_name;
  auto& nodes = session.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (within != nullptr && !(*within)[n]) continue;
    const WorkNode& node = nodes[n];
    if (node.pool != job.pool || !node.ready || node.cordoned) continue;
    auto it = node.view->labels.find(label);
    if (it == node.view->labels.end()) continue;
    Domain& domain = by_name[it->second];
    domain.name = it->second;
    domain.nodes.push_back(n);
    domain.free_gpus += node.free_gpus;
  }
  std::vector<Domain> domains;
  for (auto& [name, domain] : by_name) domains.push_back(std::move(domain));
  return domains;
}

// Fullest first among those that could hold `gpus`; the rest are dropped.
void OrderForPacking(std::vector<Domain>& domains, uint64_t gpus) {
  domains.erase(std::remove_if(domains.begin(), domains.end(), [gpus](const Domain& d) { return d.free_gpus < gpus; }),
                domains.end());
  std::stable_sort(domains.begin(), domains.end(),
                   [](const Domain& a, const Domain& b) { return a.free_gpus < b.free_gpus; });
}

std::vector<bool> Mask(size_t size, const std::vector<size_t>& nodes) {
  std::vector<bool> mask(size, false);
  for (size_t n : nodes) mask[n] = true;
  return mask;
}

class Placer {
 public:
  Placer(Session& session, WorkJob& job, bool ignore_reservations)
      : session_(session), job_(job), ignore_(ignore_reservations) {}

  // The whole gang inside `domain` (nullptr: anywhere), each group with its
  // own tier in one switch of that tier inside the domain.
  bool TryIn(const std::vector<bool>* domain) {
    std::map<uint32_t, std::vector<const PendingTask*>> by_group;
    std::vector<const PendingTask*> free_tasks;
    for (const PendingTask* task : job_.gang) {
      const uint32_t group = job_.view->groups.empty() ? 0 : task->group;
      const uint32_t tier = group < job_.view->groups.size() ? job_.view->groups[group].network_tier : 0;
      if (tier > 0 && domain != nullptr) {
        by_group[group].push_back(task);
      } else {
        free_tasks.push_back(task);
      }
    }
    for (const auto& [group, tasks] : by_group) {
      if (!PlaceGroup(job_.view->groups[group].network_tier, tasks, domain)) return Fail();
    }
    if (!PlaceTasks(free_tasks, domain)) return Fail();
    for (auto& tentative : placed_) session_.Commit(std::move(tentative.placement));
    placed_.clear();
    return true;
  }

 private:
  struct Tentative {
    const PendingTask* task;
    size_t node;
    Placement placement;
  };

  bool PlaceTasks(const std::vector<const PendingTask*>& tasks, const std::vector<bool>* mask) {
    std::vector<PendingReason> ignored;
    for (const PendingTask* task : tasks) {
      auto node = session_.FindNode(job_, *task, ignore_, ignored, mask);
      if (!node) return false;
      placed_.push_back(Tentative{task, *node, session_.Place(job_, *task, *node)});
    }
    return true;
  }

  bool PlaceGroup(uint32_t tier, const std::vector<const PendingTask*>& tasks, const std::vector<bool>* within) {
    uint64_t gpus = 0;
    for (const PendingTask* task : tasks) gpus += task->resources.gpus;
    auto domains = Domains(session_, job_, tier, within);
    OrderForPacking(domains, gpus);
    for (const Domain& domain : domains) {
      const size_t before = placed_.size();
      const auto mask = Mask(session_.nodes().size(), domain.nodes);
      if (PlaceTasks(tasks, &mask)) return true;
      Undo(before);
    }
    return false;
  }

  void Undo(size_t keep) {
    while (placed_.size() > keep) {
      auto& last = placed_.back();
      session_.Unplace(job_, *last.task, last.node, last.placement);
      placed_.pop_back();
    }
  }

  bool Fail() {
    Undo(0);
    return false;
  }

  Session& session_;
  WorkJob& job_;
  bool ignore_;
  std::vector<Tentative> placed_;
};

uint64_t GangGpus(const WorkJob& job) {
  uint64_t gpus = 0;
  for (const PendingTask* task : job.gang) gpus += task->resources.gpus;
  return gpus;
}

// Nodes where the job's tasks already run (a started job replacing a task
// lost with its node, or an evicted one).
std::vector<size_t> RunningNodes(Session& session, const WorkJob& job) {
  std::vector<size_t> nodes;
  for (const auto& task : session.running()) {
    if (task.view->job == job.view->id && !task.evicted && task.node >= 0) nodes.push_back(static_cast<size_t>(task.node));
  }
  return nodes;
}

// Whether every one of `anchors` hangs under switch `name` of `tier`.
bool HoldsAll(Session& session, uint32_t tier, const std::string& name, const std::vector<size_t>& anchors) {
  const std::string label = topology::TierLabel(tier);
  for (size_t n : anchors) {
    const auto& labels = session.nodes()[n].view->labels;
    auto it = labels.find(label);
    if (it == labels.end() || it->second != name) return false;
  }
  return true;
}

// Tries the domains of each tier from `lowest` to `highest`; true on success.
// With `anchors` (the nodes its running tasks hold), only domains that hold
// them all: a replacement goes into the lowest common domain that still
// satisfies the job, so a lost node does not scatter a placed job.
bool TryTiers(Session& session, WorkJob& job, bool ignore, uint32_t lowest, uint32_t highest,
              topology::PendingReason& why,
              const std::vector<size_t>& anchors = {}) {
  const uint64_t gpus = GangGpus(job);
  Placer placer(session, job, ignore);
  for (uint32_t tier = lowest; tier <= highest; ++tier) {
    auto domains = Domains(session, job, tier, nullptr);
    if (!anchors.empty()) {
      domains.erase(std::remove_if(domains.begin(), domains.end(),
                                   [&](const Domain& d) { return !HoldsAll(session, tier, d.name, anchors); }),
                    domains.end());
      if (domains.empty()) {
        why = PendingReason{.code = PendingCode::kSwitchMissesRunningTasks, .tier = tier};
        continue;
      }
    }
    if (domains.empty()) {
      why = PendingReason{.code = PendingCode::kTierNotLabelled, .tier = tier};
      continue;
    }
    uint64_t most = 0;
    for (const auto& d : domains) most = std::max(most, d.free_gpus);
    OrderForPacking(domains, gpus);
    for (const Domain& domain : domains) {
      const auto mask = Mask(session.nodes().size(), domain.nodes);
      if (placer.TryIn(&mask)) return true;
    }
    why = domains.empty() ? PendingReason{.code = PendingCode::kSwitchTooSmall, .tier = tier, .need = gpus, .have = most}
                          : PendingReason{.code = PendingCode::kSwitchTasksDoNotFit, .tier = tier};
  }
  return false;
}

}  // namespace

bool PlaceWithNetwork(Session& session, WorkJob& job, bool ignore_reservations) {
  const auto& view = *job.view;
  topology::PendingReason why;
  const auto anchors = RunningNodes(session, job);
  if (view.network_mode == NetworkMode::kSingleSwitch) {
    if (TryTiers(session, job, ignore_reservations, 1, view.network_tier, why, anchors)) {
      job.reasons.clear();
      return true;
    }
    job.reasons = {why};
    return false;
  }
  // best-effort: the tightest domain that holds it, else anywhere.
  const uint32_t highest = std::max<uint32_t>(view.network_tier, 8);
  if (TryTiers(session, job, ignore_reservations, 1, highest, why, anchors)) {
    job.reasons.clear();
    return true;
  }
  return session.PlaceAll(job, job.gang, ignore_reservations);
}

}  // namespace gpool::scheduler
