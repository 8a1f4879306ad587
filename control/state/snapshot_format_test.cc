// The snapshot's byte format, written record by record by Snapshot().
#include <gtest/gtest.h>

#include "control/state/cluster_state_fixture.h"
#include "control/state/test_specs.h"
#include "protocol/event.h"
#include "protocol/messages_client.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

using testing::MakeNode;

// The snapshot format: one map whose lists hold every record (and, since
// the event stream, the events and sink cursors after them, and since
// retention what is left of forgotten jobs, all optional so older snapshots
// still restore). Snapshot() packs record by record and must
// write these exact bytes.
struct SnapshotImageV2 {
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
  std::vector<ForgottenJob> forgotten;  // retention (retention.h)
  uint64_t forgotten_count = 0;
  std::vector<UsageTotal> usage;
  std::vector<UserSpec> users;  // users and the audit stream (issue 31)
  std::vector<AuditEntry> audit;
  uint64_t next_audit_seq = 1;
  std::map<std::string, std::string> enrolled_nodes;  // node keys enrolled before registering (issue 31)
  std::vector<AlertCmd> alerts;                       // firing alerts (issue 34)
  UsageLedger::Image usage_ledger;                    // usage records and rollups (issue 34)
  std::vector<PendingEnrolment> pending_enrolments;   // keys awaiting admission (issue 48)
  std::vector<JoinTokenInfo> join_tokens;             // join tokens, by hash (issue 48)
  std::vector<ApiTokenInfo> api_tokens;               // HTTP API tokens, as hashes (issue 48)
  std::vector<ReplicaKeyRecord> replica_keys;         // rotated replica keys (issue 48)
  BillingLedger::Image billing;                       // credit accounts and monthly bills (issue 50)
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

TEST_F(ClusterStateTest, SnapshotBytesMatchTheImageFormat) {
  Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
  Do(RegisterNodeCmd{MakeNode("n2", 8), {}});
  uint64_t a = Submit("a", 2, 1, "k");
  Submit("b", 1, 9);
  Do(ApplyPlanCmd{{Bind(a, 0, "n1", {0}), Bind(a, 1, "n2", {3})}, {}});
  Event(a, 0, "n1", "started");

  SnapshotImageV2 image;
  image.applied_index = state_.applied_index();
  image.next_job_id = 3;
  image.events.assign(state_.events().begin(), state_.events().end());
  image.next_event_seq = state_.last_event_seq() + 1;
  for (const auto& [name, node] : state_.nodes()) image.nodes.push_back(node);
  for (const auto& [id, job] : state_.jobs()) image.jobs.push_back(job);
  for (const auto& [name, queue] : state_.queues()) image.queues.push_back(queue);
  Do(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"alice", {}, 1000, 1000, {{Role::kViewer, ""}}}}});
  Do(AuditCmd{{AuditEntry{0, 0, "alice", "CancelJob", "job 1", false, "cancel-job"}}});
  image.applied_index = state_.applied_index();
  image.users = {*state_.FindUser("alice")};
  image.audit.assign(state_.audit().begin(), state_.audit().end());
  image.next_audit_seq = 2;
  Do(UpdateNodeCmd{UpdateNode{.node = "n9", .op = NodeUpdateOp::kWorkerKey, .key = std::string(40, 'k')}});
  image.applied_index = state_.applied_index();
  image.enrolled_nodes = {{"n9", std::string(40, 'k')}};
  EnrolmentCmd pending;
  pending.pending.node = "stranger";
  pending.pending.key = std::string(40, 's');
  Do(pending);
  image.applied_index = state_.applied_index();
  image.pending_enrolments = {state_.pending_enrolments().begin()->second};
  ApiTokenInfo token{"tok-1", "alice", TokenScope::kMetrics, 1'000, 0, 0, "hash-1", false};
  Do(TokenCmd{TokenOp::kCreate, token});
  image.applied_index = state_.applied_index();
  image.api_tokens = {token};
  Do(ReplicaKeyCmd{3, std::string(40, 'n'), std::string(40, 'o'), 60'000});
  image.applied_index = state_.applied_index();
  image.replica_keys = {state_.replica_keys().at(3)};
  // Issue 50: a class grant rides on its queue record; a credit account in billing.
  UpdateQueue grant{QueueOp::kGrantClass, QueueSpec{}, "high"};
  grant.spec.name = "default";
  Do(UpdateQueueCmd{grant});
  Do(CreditCmd{"default", 5'000, "key-1"});
  image.applied_index = state_.applied_index();
  image.queues.clear();
  for (const auto& [name, queue] : state_.queues()) image.queues.push_back(queue);
  ASSERT_EQ(state_.FindQueue("default")->granted_classes, std::vector<std::string>{"high"});
  image.billing.accounts = {CreditAccount{"default", 5'000, 0}};
  image.billing.credit_keys = {"key-1"};
  EXPECT_EQ(state_.Snapshot(), wire::PackToString(image));
}

}  // namespace
}  // namespace gpool::state
