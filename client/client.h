// Client: the C++ API for the coordinator's client port (the `gpool` CLI is
// built on it). One method per request in the client API; every method
// returns the reply struct from protocol/messages.h or a Status.
//
// Client is an interface so callers (the CLI, tests) can swap in a fake
// (client/testing/fake_client.h). Client::Connect builds the real one, which talks
// ZeroMQ:
//   - a DEALER socket, one msgpack envelope per frame, ZMQ_LINGER 0;
//   - each request carries a fresh request_id; a reply with another id (a
//     late answer to an earlier request) is dropped;
//   - lazy pirate: when no reply arrives within timeout_ms the socket is
//     closed and recreated, the next endpoint is tried, and the request is
//     sent again, at most `retries` more times; then Status::Unavailable
//     "coordinator at X did not answer within N ms";
//   - ErrorReply NotLeader moves to the leader the reply names (or to the next
//     endpoint when it names none) and resends, within the same retry budget;
//   - any other ErrorReply becomes its Status (ErrorReply::ToStatus);
//   - a reply that does not decode, or has the wrong type, is
//     Status::Malformed; nothing the coordinator sends can crash the client;
//   - a request over kMinReadableFrameBytes (protocol/envelope.h) is not sent:
//     Status::ResourceExhausted at once (a coordinator might drop it
//     unanswered); one within it but over the coordinator's --max-frame-bytes
//     gets the coordinator's ResourceExhausted, as fast.
// Because requests are re-sent, Submit always carries an idempotency key
// (a random one when the caller gives none), so a retry can never create a
// second job. ChangeReplicas is re-sent the same way: it cannot apply twice
// (the coordinator refuses a second add of a voter with AlreadyExists and a
// second remove with NotFound), but a resend after a lost reply may report
// that error although the first attempt took effect (or FailedPrecondition
// while the first is still being committed). UpdateNode is re-sent too; it
// is idempotent (cordon, uncordon, label, pool and taint each set a state).
// UpdateQueue is re-sent like ChangeReplicas: an update sets the quotas and
// is idempotent, but a resend of a create or delete whose first attempt took
// effect reports AlreadyExists or NotFound. ListQueues and ExplainJob are
// reads.
//
// Connect does not contact the coordinator (ZeroMQ connects lazily); the
// first request does.
//
// Thread-safety: a Client is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/ids.h"
#include "protocol/base/status.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_enrolment.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_snapshot.h"
#include "protocol/messages_tokens.h"
#include "protocol/messages_usage.h"
#include "protocol/messages_users.h"
#include "protocol/messages_watch.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"
#include "protocol/security/keys.h"

namespace gpool {

struct ClientOptions {
  // Coordinator client-API endpoints, comma-separated:
  // "tcp://c1:7400,tcp://c2:7400". "host:port" means "tcp://host:port".
  // Requests go to the first; a timeout moves on to the next (round robin).
  std::string endpoints = "tcp://127.0.0.1:7400";
  // Sent in every request header; must match the coordinator's --token-file
  // when it has one. Empty: none.
  std::string token;
  // How long one attempt waits for its reply.
  int timeout_ms = 5000;
  // How long an attempt waits for a TCP connection before giving up on that
  // endpoint, so a coordinator that is down is reported in about a second
  // rather than after the whole reply timeout.
  int connect_timeout_ms = 1000;
  // How many times a request is re-sent after a timeout or a NotLeader
  // redirect; at most 1 + retries attempts in all.
  int retries = 3;
  // header.sender, for the coordinator's logs. Empty: "gpool-cli-<pid>".
  std::string sender;
  // CurveZMQ (docs/protocol.md "Handshake"): the user's key pair, and the
  // coordinator's public key (Z85): one for every endpoint, or one per
  // endpoint in the order of `endpoints`. An empty secret key: plaintext,
  // for a coordinator started with --insecure.
  security::KeyPair curve_keys;
  std::vector<std::string> server_keys;
};

class Client {
 public:
  // Builds the ZeroMQ client. Fails (InvalidArgument) only on a bad endpoint
  // list or option; an unreachable coordinator shows up on the first call.
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);

  // A random 128-bit key in hex, for SubmitJob.idempotency_key.
  static std::string NewIdempotencyKey();

  virtual ~Client() = default;

  // Submits a job. An empty `idempotency_key` is replaced by a random one;
  // the same key sent again returns the first job's id with duplicate=true.
  virtual Result<SubmitJobReply> Submit(const JobSpec& spec, std::string idempotency_key) = 0;
  // Newest first; finished jobs only when `include_finished`.
  virtual Result<ListJobsReply> ListJobs(bool include_finished, uint32_t limit) = 0;
  // NotFound for an unknown job.
  virtual Result<GetJobReply> GetJob(JobId job) = 0;
  // SIGTERM to the job's tasks, SIGKILL after grace_ms. FailedPrecondition
  // when the job already finished.
  virtual Result<CancelJobReply> CancelJob(JobId job, uint32_t grace_ms) = 0;
  // `devices`: also each node's devices and NUMA nodes (a larger reply).
  virtual Result<ListNodesReply> ListNodes(bool devices = false) = 0;
  // The last `max_bytes` of task `task_index`'s log (stdout and stderr).
  virtual Result<GetTaskLogReply> GetTaskLog(JobId job, uint32_t task_index, uint32_t max_bytes) = 0;
  virtual Result<ClusterStatusReply> ClusterStatus() = 0;
  // Adds or removes one coordinator replica (Raft voter); answered once the
  // new configuration is committed. The request goes out as given: its
  // fields are not checked here. AlreadyExists when adding a current voter,
  // NotFound when removing one that is not.
  virtual Result<ChangeReplicasReply> ChangeReplicas(const gpool::ChangeReplicas& request) = 0;
  // Cordons, uncordons, relabels, re-pools or (un)taints one node; answered
  // with the node as it is once the change is committed. The request goes out
  // as given. NotFound for an unknown node, InvalidArgument for a bad op,
  // label, taint or pool. Re-sending is harmless: every op sets state rather than toggling.
  virtual Result<UpdateNodeReply> UpdateNode(const gpool::UpdateNode& request) = 0;
  // Creates, updates (replaces the quotas of) or deletes one queue; answered
  // with the queue once the change is committed (for a delete, as it was).
  // The request goes out as given. InvalidArgument for a bad name, resource
  // or quota order; AlreadyExists when creating a queue that exists;
  // NotFound for an unknown queue or parent; FailedPrecondition when
  // deleting a queue with children or unfinished jobs, or root or default.
  virtual Result<UpdateQueueReply> UpdateQueue(const gpool::UpdateQueue& request) = 0;
  // Every queue with its quotas, usage and job counts; parents before their
  // children, siblings by name.
  virtual Result<ListQueuesReply> ListQueues() = 0;
  // Why a job is where it is: the scheduler's reasons, its queue and every
  // ancestor, and how many jobs of its queue are ahead of it. NotFound for
  // an unknown job.
  virtual Result<ExplainJobReply> ExplainJob(JobId job) = 0;
  // Renews an rGPU session's lease (a session is a job; open it with
  // Submit, close it with CancelJob). NotFound for a job that is no
  // session, FailedPrecondition for one that has ended.
  virtual Result<RenewSessionReply> RenewSession(JobId session) = 0;
  // ListJobs of rGPU sessions only (newest first; `limit` 0: all).
  virtual Result<ListJobsReply> ListSessions(bool include_finished, uint32_t limit) = 0;
  // The committed event stream after request.after_seq (ListEvents).
  virtual Result<ListEventsReply> ListEvents(const gpool::ListEvents& request) = 0;
  // Commits a probe's results: slow conditions raised and cleared (ReportProbe).
  virtual Result<ReportProbeReply> ReportProbe(const gpool::ReportProbe& request) = 0;
  // `gpool exec` (messages_exec.h): start a command in a running task, poll
  // its output and exit, signal it.
  virtual Result<ExecStartReply> ExecStart(const gpool::ExecStart& request) = 0;
  virtual Result<ExecPollReply> ExecPoll(const gpool::ExecPoll& request) = 0;
  virtual Status ExecSignal(const gpool::ExecSignal& request) = 0;
  // Users, roles and audit (messages_users.h): admins manage users and read
  // the audit stream; Bootstrap makes the caller's key the first admin;
  // WhoAmI says who the caller is authenticated as.
  virtual Result<UpdateUserReply> UpdateUser(const gpool::UpdateUser& request) = 0;
  virtual Result<ListUsersReply> ListUsers() = 0;
  virtual Result<UpdateUserReply> Bootstrap(const gpool::Bootstrap& request) = 0;
  virtual Result<WhoAmIReply> WhoAmI() = 0;
  virtual Result<ListAuditReply> ListAudit(const gpool::ListAudit& request) = 0;
  // Usage accounting (messages_usage.h): a report of committed usage and
  // running work over [from_ms, to_ms), summed by request.by, of what the
  // caller may see; and the committed price table (op "show"), or setting it
  // (op "set", admins). Not pure, so other clients need not implement them.
  virtual Result<GetUsageReply> GetUsage(const gpool::GetUsage& request);
  virtual Result<UpdatePricesReply> UpdatePrices(const gpool::UpdatePrices& request);
  // Credit accounts (issue 50): show them, or add credit (admins). An add
  // carries an idempotency key, so a re-send adds once. Not pure, as above.
  virtual Result<CreditReply> Credit(const gpool::Credit& request);
  // API tokens for the HTTP port (messages_tokens.h): make one for the
  // caller (its text is in the reply only), list, revoke. Not pure, as above.
  virtual Result<CreateTokenReply> CreateToken(const gpool::CreateToken& request);
  virtual Result<ListTokensReply> ListTokens(const gpool::ListTokens& request);
  virtual Result<RevokeTokenReply> RevokeToken(const gpool::RevokeToken& request);
  // The watch API (messages_watch.h; client/watcher.h follows a watch across
  // leader changes). A watch lives on this client's connection: Watch opens
  // it, NextPush waits up to timeout_ms for a WatchUpdate pushed on it
  // (nullopt: none came), WatchRenew keeps it, Unwatch closes it. A request
  // that times out or is redirected reconnects, and the watches of the old
  // connection are gone: WatchRenew then reports them unknown. Clients
  // without them answer UnknownType (callers fall back to polling).
  virtual Result<WatchReply> Watch(const gpool::Watch& request);
  virtual Result<WatchRenewReply> WatchRenew(const gpool::WatchRenew& request);
  virtual Status Unwatch(uint64_t watch_id);
  virtual Result<std::optional<WatchUpdate>> NextPush(int timeout_ms);
  // Snapshot export (messages_snapshot.h), admins only: export_id 0 takes an
  // image of the leader's state and returns its first chunk; later calls read
  // on by offset. A resend of a start (after a timeout) starts another export.
  virtual Result<ExportSnapshotReply> ExportSnapshot(const gpool::ExportSnapshot& request);
  // Node enrolment (messages_enrolment.h), admins only: pending enrolments,
  // approvals and join tokens. Approve, reject and token-create are not
  // idempotent: a resend after a lost reply may find nothing pending (NotFound)
  // or mint a second token.
  virtual Result<EnrolmentReply> Enrol(const gpool::Enrolment& request);
};

// Splits and normalizes an endpoint list ("a:1, tcp://b:2" ->
// {"tcp://a:1", "tcp://b:2"}). InvalidArgument when it is empty or an entry
// has no port.
Result<std::vector<std::string>> ParseEndpoints(const std::string& endpoints);

}  // namespace gpool
