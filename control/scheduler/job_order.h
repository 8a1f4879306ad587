// JobOrder: the order a cycle offers jobs to an action.
//
// Across queues, dominant resource fairness: the next job comes from the
// leaf whose path from the root has the lowest dominant shares (used over
// deserved, compared level by level), so a queue's share is weighed against
// its siblings' at every level. Inside a queue: priority class first (high,
// medium, low), then the user with the lowest dominant share, then that
// user's jobs by priority and arrival. Shares are read live from the queue
// tree, so every placement moves the next pick.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "control/scheduler/session.h"

namespace gpool::scheduler {

class JobOrder {
 public:
  // Offers the jobs for which `include` is true.
  JobOrder(Session& session, const std::function<bool(const WorkJob&)>& include);

  // The next job's index in session.jobs(), or -1 when none is left.
  int Next();
  // A job's placement moves its user's share inside the queue.
  void Charged(const WorkJob& job, const Amounts& demand);

 private:
  // A user's jobs in order, and what the user holds in the queue (their
  // entry in user_used_, so a pick compares users without looking them up).
  struct UserJobs {
    std::deque<size_t> jobs;
    const Amounts* used = nullptr;
  };
  struct QueueJobs {
    // by class (index = PriorityClass), then user -> jobs in order
    std::array<std::map<std::string, UserJobs>, kPriorityClassCount> by_class;
    size_t remaining = 0;
  };
  uint64_t UserShare(int queue, const Amounts& user_used) const;

  Session& session_;
  std::map<int, QueueJobs> queues_;
  size_t system_remaining_ = 0;  // system-class jobs not yet offered: they go first
  // Keyed by the user names in the view, which outlives the order, so a
  // lookup (one per user at every pick) copies no name.
  std::map<std::pair<int, std::string_view>, Amounts> user_used_;
  // Share keys of the queues, valid while the tree's usage is unchanged:
  // most picks follow a failed placement, which changes nothing. Per queue
  // (by index), the key and the tree version it was read at: a placement
  // changes one path, so the other queues' keys are kept unless
  // QueueTree::ShareKeyChanged says otherwise.
  struct Key {
    std::vector<uint64_t> shares;
    uint64_t read_at = 0;
    bool read = false;
  };
  std::vector<Key> keys_;
  uint64_t keys_version_ = UINT64_MAX;
};

}  // namespace gpool::scheduler
