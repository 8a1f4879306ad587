#include "control/scheduler/lender_room.h"

#include <algorithm>
#include <map>

namespace gpool::scheduler {

std::vector<Amounts> LenderRoom::StoppingByQueue(Session& session) {
  const QueueTree& tree = session.queues();
  std::vector<Amounts> stopping(tree.size());
  for (const WorkTask& task : session.running()) {
    // evicted before this cycle began: the view says it is stopping.
    if (!task.view->stopping) continue;
    for (int at = task.queue; at >= 0; at = tree.queue(at).parent) {
      Amounts& held = stopping[static_cast<size_t>(at)];
      if (held.empty()) held.assign(tree.resource_count(), 0);
      for (size_t r = 0; r < held.size() && r < task.charge.size(); ++r) held[r] += task.charge[r];
    }
  }
  return stopping;
}

LenderRoom::LenderRoom(const QueueTree& tree, const std::vector<Amounts>& stopping, const WorkJob& job,
                       const Amounts& demand)
    : tree_(tree), stopping_(stopping), reclaimer_(job.queue), demand_(demand) {
  weighed_.assign(demand.size(), false);
  for (size_t r = 0; r < demand.size(); ++r) {
    // A GPU job's CPU and everyone's host memory come with the GPUs: the
    // share weighed is the GPUs' (and device memory of shares, models).
    weighed_[r] = demand[r] != 0 && r != kMemory && !(r == kCpu && job.min_gpus > 0);
  }
  room_.resize(tree.size());
  taken_.resize(tree.size());
}

size_t LenderRoom::MeetDepth(int queue) const {
  const auto& mine = tree_.Path(reclaimer_);
  const auto& theirs = tree_.Path(queue);
  size_t k = 0;
  while (k < mine.size() && k < theirs.size() && mine[k] == theirs[k]) ++k;
  return k;
}

std::vector<int> LenderRoom::LendersOf(int leaf) const {
  const auto& mine = tree_.Path(reclaimer_);
  const auto& theirs = tree_.Path(leaf);
  const size_t k = MeetDepth(leaf);
  // One is the other's ancestor: nothing lies between them to lend.
  if (k >= mine.size() || k >= theirs.size()) return {};
  return std::vector<int>(theirs.begin() + static_cast<std::ptrdiff_t>(k), theirs.end());
}

const Amounts& LenderRoom::RoomOf(int queue) {
  Amounts& room = room_[static_cast<size_t>(queue)];
  if (!room.empty()) return room;
  // The reclaimer's side is the reclaimer's ancestor just below the point
  // where the two paths meet, at the lender side's depth of divergence.
  const auto& mine = tree_.Path(reclaimer_);
  const QueueNode& q = tree_.queue(mine[std::min(MeetDepth(queue), mine.size() - 1)]);
  const QueueNode& v = tree_.queue(queue);
  const Amounts& gone = stopping_[static_cast<size_t>(queue)];
  room.assign(tree_.resource_count(), kUnlimited);
  for (size_t r = 0; r < room.size(); ++r) {
    const uint64_t claim = r < demand_.size() ? demand_[r] : 0;
    const bool within_guarantee = q.used[r] + q.claimed[r] + claim <= q.guarantee[r];
    const uint64_t floor = v.deserved[r] != kUnlimited ? v.deserved[r] : within_guarantee ? v.guarantee[r] : kUnlimited;
    if (floor == kUnlimited) continue;  // no share of it: nothing to hold it at
    const uint64_t held = v.used[r] - std::min(v.used[r], gone.empty() ? 0 : gone[r]);
    if (held > floor) {
      room[r] = held - floor;
    } else if (r < weighed_.size() && weighed_[r]) {
      room[r] = 0;  // it lends none of what the reclaimer is weighed on
    }
  }
  return room;
}

bool LenderRoom::Lends(int queue) {
  if (queue == reclaimer_ || !tree_.queue(queue).policy.low_reclaimable) return false;
  const auto& mine_path = tree_.Path(reclaimer_);
  const auto& theirs_path = tree_.Path(queue);
  const size_t k = MeetDepth(queue);
  if (k >= mine_path.size() || k >= theirs_path.size()) return false;  // one is the other's ancestor
  const QueueNode& q = tree_.queue(mine_path[k]);
  const int theirs = theirs_path[k];
  bool weighed = false;
  bool lent = false;
  for (size_t r = 0; r < demand_.size(); ++r) {
    if (!weighed_[r]) continue;
    if (q.guarantee[r] == 0 && q.deserved[r] == kUnlimited) continue;  // no share of it to claim
    const uint64_t after = q.used[r] + q.claimed[r] + demand_[r];
    const bool within_guarantee = after <= q.guarantee[r];
    const bool within_deserved = q.deserved[r] != kUnlimited && after <= q.deserved[r];
    if (!within_guarantee && !within_deserved) return false;
    weighed = true;
    // Only what the other side holds beyond its floor is lent out.
    lent = lent || (RoomOf(theirs)[r] != kUnlimited && RoomOf(theirs)[r] > 0);
  }
  return weighed && lent;
}

bool LenderRoom::Allows(const std::vector<const WorkTask*>& more) {
  std::map<int, Amounts> extra;
  for (const WorkTask* task : more) {
    for (int lender : LendersOf(task->queue)) {
      Amounts& sum = extra[lender];
      if (sum.empty()) sum.assign(tree_.resource_count(), 0);
      for (size_t r = 0; r < sum.size() && r < task->charge.size(); ++r) sum[r] += task->charge[r];
    }
  }
  for (const auto& [lender, sum] : extra) {
    const Amounts& room = RoomOf(lender);
    const Amounts& before = taken_[static_cast<size_t>(lender)];
    for (size_t r = 0; r < sum.size(); ++r) {
      if (room[r] == kUnlimited) continue;
      if ((before.empty() ? 0 : before[r]) + sum[r] > room[r]) return false;
    }
  }
  return true;
}

void LenderRoom::Take(const WorkTask& task) {
  for (int lender : LendersOf(task.queue)) {
    Amounts& sum = taken_[static_cast<size_t>(lender)];
    if (sum.empty()) sum.assign(tree_.resource_count(), 0);
    for (size_t r = 0; r < sum.size() && r < task.charge.size(); ++r) sum[r] += task.charge[r];
  }
}

}  // namespace gpool::scheduler
