#include "control/scheduler/job_order.h"

#include <algorithm>

namespace gpool::scheduler {

JobOrder::JobOrder(Session& session, const std::function<bool(const WorkJob&)>& include) : session_(session) {
  auto& jobs = session.jobs();
  user_used_ = session.RunningUserUsage();
  // Filtering the session's one stable sort of every job gives what
  // sorting the chosen ones would, without a sort per action.
  for (size_t i : session.JobsByPriorityAndArrival()) {
    if (!include(jobs[i])) continue;
    const WorkJob& job = jobs[i];
    auto& queue = queues_[job.queue];
    UserJobs& user = queue.by_class[static_cast<size_t>(job.view->priority_class)][job.view->user];
    if (user.used == nullptr) {
      // A user holding nothing yet shares 0 either way (absent, or all zero).
      Amounts& used = user_used_[{job.queue, job.view->user}];
      used.resize(3, 0);
      user.used = &used;
    }
    user.jobs.push_back(i);
    ++queue.remaining;
    if (job.view->priority_class == PriorityClass::kSystem) ++system_remaining_;
  }
  keys_.resize(session.queues().size());
}

void JobOrder::Charged(const WorkJob& job, const Amounts& demand) {
  auto& used = user_used_[{job.queue, job.view->user}];
  used.resize(3, 0);
  for (size_t r = 0; r < 3 && r < demand.size(); ++r) used[r] += demand[r];
}

uint64_t JobOrder::UserShare(int queue, const Amounts& user_used) const {
  const auto& used = session_.queues().queue(queue).used;
  uint64_t share = 0;
  for (size_t r = 0; r < 3; ++r) {
    // Relative to what the whole queue holds: users split their queue.
    const uint64_t total = std::max<uint64_t>(used[r], 1);
    share = std::max(share, user_used[r] * 1'000'000 / total);
  }
  return share;
}

int JobOrder::Next() {
  const bool drf = session_.config().fairness.drf;
  QueueTree& tree = session_.queues();
  if (drf && keys_version_ != tree.version()) {
    for (const auto& [queue, jobs] : queues_) {
      if (jobs.remaining == 0) continue;
      Key& key = keys_[static_cast<size_t>(queue)];
      if (key.read && !tree.ShareKeyChanged(queue, key.read_at)) continue;
      tree.ShareKey(queue, key.shares);
      key.read_at = tree.version();
      key.read = true;
    }
    keys_version_ = tree.version();
  }
  int best_queue = -1;
  const std::vector<uint64_t>* best_key = nullptr;
  // System work goes first, whatever the queues' shares.
  const bool system_first = system_remaining_ > 0;
  for (const auto& [queue, jobs] : queues_) {
    if (jobs.remaining == 0) continue;
    if (system_first && jobs.by_class[static_cast<size_t>(PriorityClass::kSystem)].empty()) continue;
    if (!drf) {
      if (best_queue < 0 || tree.queue(queue).name < tree.queue(best_queue).name) best_queue = queue;
      continue;
    }
    const auto& key = keys_[static_cast<size_t>(queue)].shares;
    if (best_queue < 0 || key < *best_key ||
        (key == *best_key && tree.queue(queue).name < tree.queue(best_queue).name)) {
      best_queue = queue;
      best_key = &key;
    }
  }
  if (best_queue < 0) return -1;
  QueueJobs& queue = queues_[best_queue];
  for (size_t cls = queue.by_class.size(); cls-- > 0;) {
    auto& users = queue.by_class[cls];
    if (users.empty()) continue;
    auto pick = users.begin();
    if (drf) {
      uint64_t pick_share = UserShare(best_queue, *pick->second.used);
      for (auto it = std::next(users.begin()); it != users.end(); ++it) {
        const uint64_t share = UserShare(best_queue, *it->second.used);
        if (share < pick_share) {
          pick = it;
          pick_share = share;
        }
      }
    }
    const size_t job = pick->second.jobs.front();
    pick->second.jobs.pop_front();
    if (pick->second.jobs.empty()) users.erase(pick);
    --queue.remaining;
    if (cls == static_cast<size_t>(PriorityClass::kSystem)) --system_remaining_;
    return static_cast<int>(job);
  }
  return -1;
}

}  // namespace gpool::scheduler
