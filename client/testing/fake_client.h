// FakeClient: an in-memory stand-in for Client, for tests of code built on the
// client API (the CLI, scripts' drivers). It behaves like a tiny coordinator:
// Submit validates the spec, honours idempotency keys and adds a Pending job;
// GetJob/CancelJob answer NotFound for unknown jobs; CancelJob of a finished
// job is FailedPrecondition. ChangeReplicas edits `voters` and `learners` and
// answers like the coordinator: an added replica is a learner (its promotion
// happens later, in the coordinator; a test edits the lists for it),
// AlreadyExists / NotFound for a duplicate add / remove.
// UpdateNode validates the request (ValidateUpdateNode), then edits the node
// in `nodes` (cordoned and the ",Cordoned" state suffix, labels, pool,
// taints) and answers with it; NotFound for a node that is not in `nodes`.
// UpdateQueue validates the request (ValidateUpdateQueue), then edits
// `queues` as the coordinator would, with its messages: AlreadyExists for a
// second create, NotFound for an unknown queue or parent, FailedPrecondition
// when deleting a queue that has children or unfinished jobs, when creating
// under a queue with unfinished jobs, and for a capability above the
// parent's (or below a child's); the coordinator's other tree rules
// (guarantees adding up, depth, count) are not modelled. ListQueues lists
// `queues` depth first from root, siblings by name. ExplainJob answers from
// `jobs` and `queues`: the job's `reasons`, its queue chain up to root, and,
// for a pending job, the pending jobs of its queue ordered before it (class,
// then priority, then id).
// Nothing ever runs: a test moves jobs along by editing the state (directly,
// or from `on_get_job` between polls).
//
// The state lives in a FakeCluster that the test keeps a shared_ptr to, since
// the code under test usually owns the Client itself.
//
// Thread-safety: none; tests drive it from one thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/client.h"
#include "protocol/event.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_snapshot.h"
#include "protocol/messages_usage.h"
#include "protocol/messages_users.h"
#include "protocol/model/node_update.h"
#include "protocol/model/prices.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"

namespace gpool {

struct FakeCluster {
  // Answers. Submit adds to `jobs`; tests may add or edit entries freely.
  std::map<uint64_t, GetJobReply> jobs;
  std::map<std::pair<uint64_t, uint32_t>, std::string> logs;  // (job, task index) -> log
  ListNodesReply nodes;  // UpdateNode edits these in place
  // Labels from nodes' own specs, by node name. As on the coordinator,
  // UpdateNode's removals only take off operator labels: removing a key that
  // the spec sets brings back the spec's value rather than deleting it.
  std::map<std::string, std::map<std::string, std::string>> spec_labels;
  ClusterStatusReply status;
  std::vector<ClusterEvent> events;  // the event stream, oldest first; tests append
  std::vector<gpool::ReportProbe> probe_reports;
  // The Raft voters that ChangeReplicas edits (kept sorted). Each change is
  // committed at a new index: status.commit_index + 1. `status.replicas` is
  // left alone; a test sets it for `status` and `admin replica list`.
  std::vector<uint64_t> voters = {1, 2, 3};
  std::vector<uint64_t> learners;
  // Users by name, as UpdateUser and Bootstrap leave them (no permission
  // rules: those are the coordinator's); the audit stream tests append to.
  std::map<std::string, UserSpec> users;
  std::vector<gpool::UpdateUser> user_updates;  // every UpdateUser request, as sent
  std::vector<AuditEntry> audit;
  WhoAmIReply whoami{"insecure", {}};
  // The queue hierarchy, by name; starts as root and default (under root),
  // as on a new coordinator. `allocated` and the job counts are not kept up
  // to date: a test sets them where it needs them.
  std::map<std::string, QueueSummary> queues = DefaultQueues();
  uint64_t next_job_id = 1;
  int64_t now_ms = 1'700'000'000'000;  // submit_ms of new jobs

  // When set, the next call of any kind fails with it (and it is cleared).
  std::optional<Status> fail_next;
  // Runs at the start of each GetJob (e.g. to finish a job after N polls).
  std::function<void(FakeCluster&, uint64_t job_id)> on_get_job;

  // What was asked, in order.
  std::vector<SubmitJob> submits;
  std::vector<gpool::ListJobs> list_jobs_requests;
  std::vector<gpool::CancelJob> cancels;
  std::vector<gpool::GetTaskLog> log_requests;
  std::vector<gpool::ChangeReplicas> replica_changes;
  std::vector<gpool::UpdateNode> node_updates;
  std::vector<gpool::Enrolment> enrolments;  // Enrol's requests; each answered with enrolment_reply
  EnrolmentReply enrolment_reply;
  std::vector<gpool::UpdateQueue> queue_updates;
  int list_queues_calls = 0;
  std::vector<uint64_t> explain_requests;
  std::map<uint64_t, int> renewals;  // RenewSession calls by session
  int get_job_calls = 0;
  std::map<std::string, uint64_t> idempotency_keys;
  // Usage (messages_usage.h): GetUsage answers `usage` (its range and `by`
  // set from the request) and records the request; UpdatePrices "set"
  // stores the table in `prices`, "show" answers it.
  GetUsageReply usage;
  std::vector<gpool::GetUsage> usage_requests;
  std::optional<PriceTable> prices;
  // Credit (issue 50): accounts by queue; every request recorded; an add
  // with a key seen before is not added again.
  std::map<std::string, CreditAccount> credit_accounts;
  std::vector<gpool::Credit> credit_requests;
  // Snapshot export: a start hands out `snapshot_image` (index 42, term 3)
  // under a new export id; `snapshot_forget_reads` chunk reads fail NotFound
  // first (a leader change lost the export); `snapshot_bad_sha` replies
  // with a checksum that does not match.
  std::string snapshot_image;
  int snapshot_starts = 0;
  int snapshot_forget_reads = 0;
  bool snapshot_bad_sha = false;

  // Exec: ExecStart answers exec_reply (or fails with exec_start_error);
  // each ExecPoll answers the next of exec_polls (the last one again once
  // they run out). What was asked is kept.
  ExecStartReply exec_reply{.exec_id = 7, .task = "1.0.0", .node = "n1", .pid = 42};
  std::optional<Status> exec_start_error;
  std::vector<ExecPollReply> exec_polls;
  std::vector<gpool::ExecStart> exec_starts;
  std::vector<gpool::ExecPoll> exec_poll_requests;
  std::vector<gpool::ExecSignal> exec_signals;

  // Sets a job's state (summary and every task), as the coordinator would.
  void SetJobState(uint64_t job_id, JobState state, std::string reason = {});

  // root (no parent) and default (under root), with no quotas.
  static std::map<std::string, QueueSummary> DefaultQueues();
};

class FakeClient : public Client {
 public:
  explicit FakeClient(std::shared_ptr<FakeCluster> cluster) : cluster_(std::move(cluster)) {}

  Result<SubmitJobReply> Submit(const JobSpec& spec, std::string idempotency_key) override;
  Result<ListJobsReply> ListJobs(bool include_finished, uint32_t limit) override;
  Result<GetJobReply> GetJob(JobId job) override;
  Result<CancelJobReply> CancelJob(JobId job, uint32_t grace_ms) override;
  // Without `devices`, the nodes' devices and NUMA lists are left out, as the coordinator does.
  Result<ListNodesReply> ListNodes(bool devices = false) override;
  Result<GetTaskLogReply> GetTaskLog(JobId job, uint32_t task_index, uint32_t max_bytes) override;
  Result<ClusterStatusReply> ClusterStatus() override;
  Result<ChangeReplicasReply> ChangeReplicas(const gpool::ChangeReplicas& request) override;
  Result<UpdateNodeReply> UpdateNode(const gpool::UpdateNode& request) override;
  Result<UpdateQueueReply> UpdateQueue(const gpool::UpdateQueue& request) override;
  Result<ListQueuesReply> ListQueues() override;
  Result<ExplainJobReply> ExplainJob(JobId job) override;
  // Counts the renewal in cluster.renewals; NotFound for a job that is no
  // session (no summary.session.state).
  Result<RenewSessionReply> RenewSession(JobId session) override;
  // ListJobs of the jobs whose summary has a session state.
  Result<ListJobsReply> ListSessions(bool include_finished, uint32_t limit) override;
  // Answers from cluster.events, filtered as the coordinator does.
  Result<ListEventsReply> ListEvents(const gpool::ListEvents& request) override;
  // Records the request in cluster.probe_reports; flagged counts its slow results.
  Result<ReportProbeReply> ReportProbe(const gpool::ReportProbe& request) override;
  Result<ExecStartReply> ExecStart(const gpool::ExecStart& request) override;
  Result<ExecPollReply> ExecPoll(const gpool::ExecPoll& request) override;
  Status ExecSignal(const gpool::ExecSignal& request) override;
  Result<UpdateUserReply> UpdateUser(const gpool::UpdateUser& request) override;
  Result<ListUsersReply> ListUsers() override;
  Result<UpdateUserReply> Bootstrap(const gpool::Bootstrap& request) override;
  Result<WhoAmIReply> WhoAmI() override;
  Result<ListAuditReply> ListAudit(const gpool::ListAudit& request) override;
  Result<GetUsageReply> GetUsage(const gpool::GetUsage& request) override;
  Result<ExportSnapshotReply> ExportSnapshot(const gpool::ExportSnapshot& request) override;
  Result<EnrolmentReply> Enrol(const gpool::Enrolment& request) override;
  Result<UpdatePricesReply> UpdatePrices(const gpool::UpdatePrices& request) override;
  Result<CreditReply> Credit(const gpool::Credit& request) override;

 private:
  std::optional<Status> TakeFailure();
  Result<ListJobsReply> List(bool include_finished, uint32_t limit, bool sessions_only);

  std::shared_ptr<FakeCluster> cluster_;
};

}  // namespace gpool
