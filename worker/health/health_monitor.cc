#include "worker/health/health_monitor.h"

#include <algorithm>
#include <set>

#include "protocol/base/text.h"
#include "protocol/health.h"
#include "worker/log.h"

namespace gpool::worker {

HealthMonitor::HealthMonitor(const Clock* clock, std::shared_ptr<spdlog::logger> logger)
    : clock_(clock), log_(OrDefault(std::move(logger))) {}

void HealthMonitor::Add(std::unique_ptr<HealthCheck> check) {
  log_->info("health check enabled check={} interval_ms={}", check->name(), check->interval_ms());
  checks_.push_back(Entry{std::move(check)});
}

bool HealthMonitor::Poll() {
  const int64_t now = clock_->MonoMs();
  bool changed = false;
  for (Entry& entry : checks_) {
    if (now < entry.next_ms) continue;
    entry.next_ms = now + std::max<int64_t>(1, entry.check->interval_ms());
    if (Merge(*entry.check, entry.check->Run(clock_->WallMs()), clock_->WallMs())) {
      changed = true;
      // At once, not at the end of the poll: a later check of the same poll
      // may act on what an earlier one found (the GPU repair, gpu_repair.h).
      list_.clear();
      for (const auto& [key, condition] : by_key_) list_.push_back(condition);
    }
    entry.ran_this_round = true;
  }
  if (!checks_.empty() &&
      std::all_of(checks_.begin(), checks_.end(), [](const Entry& e) { return e.ran_this_round; })) {
    ++rounds_;
    for (Entry& entry : checks_) entry.ran_this_round = false;
  }
  if (changed) ++version_;
  return changed;
}

bool HealthMonitor::Merge(const HealthCheck& check, const std::vector<HealthFinding>& findings, int64_t wall_ms) {
  bool changed = false;
  std::set<std::string> found;
  for (const HealthFinding& f : findings) {
    HealthCondition next;
    next.kind = std::string(ToString(f.kind));
    next.device = f.device;
    next.severity = std::string(ToString(f.severity));
    next.message = f.message.substr(0, 1024);
    next.xid = f.xid;
    const std::string key = next.Key();
    found.insert(key);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
      next.first_seen_ms = next.last_seen_ms = wall_ms;
      next.count = std::max<uint64_t>(1, f.new_events);
      log_->warn("health condition raised check={} kind={} device={} severity={} message={}", check.name(),
                 next.kind, Q(next.device), next.severity, Q(next.message));
      by_key_.emplace(key, std::move(next));
      changed = true;
      continue;
    }
    HealthCondition& held = it->second;
    held.last_seen_ms = wall_ms;
    if (held.severity != next.severity || held.message != next.message || held.xid != next.xid || f.new_events > 0) {
      held.severity = next.severity;
      held.message = next.message;
      held.xid = next.xid;
      held.count += f.new_events;
      changed = true;
    }
  }
  const auto owned = check.kinds();
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    const auto kind = HealthKindFromString(it->second.kind);
    const bool mine = kind && std::find(owned.begin(), owned.end(), *kind) != owned.end();
    if (mine && !found.count(it->first)) {
      log_->info("health condition cleared check={} kind={} device={} count={}", check.name(), it->second.kind,
                 Q(it->second.device), it->second.count);
      it = by_key_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  // The whole list is refreshed (last seen) whether or not it changed.
  if (!changed) {
    for (auto& c : list_) {
      if (auto it = by_key_.find(c.Key()); it != by_key_.end()) c.last_seen_ms = it->second.last_seen_ms;
    }
  }
  return changed;
}

}  // namespace gpool::worker
