#include "control/scheduler/scheduler.h"

#include <algorithm>
#include <map>

#include "control/scheduler/actions.h"
#include "control/scheduler/session.h"

namespace gpool::scheduler {

Plan Schedule(const topology::ClusterView& view, const SchedulerConfig& config) {
  Session session(view, config);
  for (Action action : config.actions) {
    switch (action) {
      case Action::kEnqueue: Enqueue(session); break;
      case Action::kAllocate: Allocate(session); break;
      case Action::kBackfill: Backfill(session); break;
      case Action::kPreempt: Preempt(session); break;
      case Action::kReclaim: Reclaim(session); break;
    }
  }
  Plan& plan = session.plan();
  std::map<uint64_t, const topology::PendingJob*> by_id;
  for (const auto& job : view.pending) by_id[job.id.value()] = &job;
  for (const auto& job : session.jobs()) {
    if ((job.gang.empty() && !job.blocked) || (job.done && !job.has_claim)) continue;
    std::vector<std::string> reasons = job.reasons;
    if (reasons.empty()) reasons.push_back("not considered this cycle (the configured actions skip it)");
    plan.pending.push_back(PendingReasons{job.view->id, std::move(reasons)});
  }
  // Listed in the order jobs are offered within a queue.
  std::stable_sort(plan.pending.begin(), plan.pending.end(), [&](const PendingReasons& a, const PendingReasons& b) {
    const auto& x = *by_id.at(a.job.value());
    const auto& y = *by_id.at(b.job.value());
    if (x.priority_class != y.priority_class) return x.priority_class > y.priority_class;
    if (x.priority != y.priority) return x.priority > y.priority;
    return x.arrival < y.arrival;
  });
  return std::move(plan);
}

}  // namespace gpool::scheduler
