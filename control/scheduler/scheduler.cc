#include "control/scheduler/scheduler.h"

#include <algorithm>

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
  // Listed in the order jobs are offered within a queue.
  std::vector<WorkJob*> waiting;
  for (auto& job : session.jobs()) {
    if ((job.gang.empty() && !job.blocked) || (job.done && !job.has_claim)) continue;
    waiting.push_back(&job);
  }
  std::stable_sort(waiting.begin(), waiting.end(), [](const WorkJob* a, const WorkJob* b) {
    const auto& x = *a->view;
    const auto& y = *b->view;
    if (x.priority_class != y.priority_class) return x.priority_class > y.priority_class;
    if (x.priority != y.priority) return x.priority > y.priority;
    return x.arrival < y.arrival;
  });
  plan.pending.reserve(waiting.size());
  for (WorkJob* job : waiting) {
    if (job->reasons.empty()) job->reasons.push_back(topology::PendingReason::Of(topology::PendingCode::kNotConsidered));
    plan.pending.push_back(PendingReasons{job->view->id, std::move(job->reasons)});
  }
  return std::move(plan);
}

}  // namespace gpool::scheduler
