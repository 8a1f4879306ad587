// The state image's layout: the one map ClusterState::Snapshot() writes
// record by record and Restore (cluster_state_restore.cc) reads back. Every
// field after the first four is optional, so images from before any of them
// still restore. Internal to the cluster_state*.cc files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/state/cluster_state.h"

namespace gpool::state::internal {

struct SnapshotImage {
  uint64_t applied_index = 0;
  uint64_t next_job_id = 1;
  std::vector<NodeRecord> nodes;
  std::vector<JobRecord> jobs;
  std::vector<QueueRecord> queues;
  std::vector<ClusterEvent> events;
  uint64_t next_event_seq = 1;
  std::map<std::string, uint64_t> sink_cursors;
  bool breaker_open = false;
  int64_t breaker_opened_ms = 0;
  std::vector<ForgottenJob> forgotten;
  uint64_t forgotten_count = 0;
  std::vector<UsageTotal> usage;
  std::vector<UserSpec> users;
  std::vector<AuditEntry> audit;
  uint64_t next_audit_seq = 1;
  std::map<std::string, std::string> enrolled_nodes;
  std::vector<AlertCmd> alerts;  // firing
  UsageLedger::Image usage_ledger;  // absent from snapshots before issue 34: empty
  std::vector<PendingEnrolment> pending_enrolments;  // absent before issue 48: none
  std::vector<JoinTokenInfo> join_tokens;
  std::vector<ApiTokenInfo> api_tokens;  // absent before issue 48: none
  BillingLedger::Image billing;  // issue 50: credit accounts and monthly bills; absent before: none
  std::vector<ReplicaKeyRecord> replica_keys;  // absent before replica key rotation: none
  template <typename V>
  void Fields(V& v) {
    v.Required("applied", applied_index);
    v.Required("next_job_id", next_job_id);
    v.Required("nodes", nodes);
    v.Required("jobs", jobs);
    v.Optional("queues", queues);
    v.Optional("events", events);
    v.Optional("next_event_seq", next_event_seq);
    v.Optional("sink_cursors", sink_cursors);
    v.Optional("breaker_open", breaker_open);
    v.Optional("breaker_opened_ms", breaker_opened_ms);
    v.Optional("forgotten", forgotten);
    v.Optional("forgotten_count", forgotten_count);
    v.Optional("usage", usage);
    v.Optional("users", users);
    v.Optional("audit", audit);
    v.Optional("next_audit_seq", next_audit_seq);
    v.Optional("enrolled_nodes", enrolled_nodes);
    v.Optional("alerts", alerts);
    v.Optional("usage_ledger", usage_ledger);
    v.Optional("pending_enrolments", pending_enrolments);
    v.Optional("join_tokens", join_tokens);
    v.Optional("api_tokens", api_tokens);
    v.Optional("replica_keys", replica_keys);
    v.Optional("billing", billing);
  }
};

}  // namespace gpool::state::internal
