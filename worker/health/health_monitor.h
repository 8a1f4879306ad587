// HealthMonitor: runs the worker's health checks (health_check.h), each at its
// own interval, and keeps the node's conditions: one per (kind, device),
// raised with its first-seen time when a check finds it, refreshed (last
// seen; count on new events) while it keeps finding it, and cleared when the
// check that owns its kind runs and no longer does.
//
// version() moves on every change the coordinator must hear about (a raise, a
// clear, a severity, message or XID change, new events) and never on a mere
// refresh, so heartbeats carry the list only when it changed. rounds() counts
// completed rounds: a round ends once every check has run since the last one
// ended (the coordinator counts clear rounds before it lifts a health cordon).
//
// Thread-safety: one thread (the agent's loop).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "protocol/base/clock.h"
#include "protocol/health.h"
#include "worker/health/health_check.h"

namespace gpool::worker {

class HealthMonitor {
 public:
  HealthMonitor(const Clock* clock, std::shared_ptr<spdlog::logger> logger);

  void Add(std::unique_ptr<HealthCheck> check);
  // Runs the checks that are due; true when the conditions changed.
  bool Poll();

  // Up to date after each check's run, also during Poll (a check added
  // after others sees what they found in the same poll).
  const std::vector<HealthCondition>& conditions() const { return list_; }
  uint64_t version() const { return version_; }
  uint64_t rounds() const { return rounds_; }
  size_t checks() const { return checks_.size(); }

 private:
  struct Entry {
    std::unique_ptr<HealthCheck> check;
    int64_t next_ms = 0;  // monotonic
    bool ran_this_round = false;
  };
  // Merges one run's findings; true when anything the coordinator sees changed.
  bool Merge(const HealthCheck& check, const std::vector<HealthFinding>& findings, int64_t wall_ms);

  const Clock* clock_;
  std::shared_ptr<spdlog::logger> log_;
  std::vector<Entry> checks_;
  std::map<std::string, HealthCondition> by_key_;  // HealthCondition::Key()
  std::vector<HealthCondition> list_;              // by_key_'s values, in key order
  uint64_t version_ = 1;
  uint64_t rounds_ = 0;
};

}  // namespace gpool::worker
