// Gateway: the client API. Decodes requests, checks the token, answers reads
// from the applied state and turns writes into proposed commands, replying
// only once the command is committed (a job id is never handed out before
// the job is durable).
//
// Only the serving leader answers (Proposer::leading()); any other replica
// answers every request with ErrorReply NotLeader naming the leader's client
// endpoint, and a write whose commit was lost to a leader change is answered
// NotLeader too, so the client retries it at the new leader with the same
// idempotency key. The one exception: ClusterStatus on a replica that knows
// no leader is answered from that replica, so an operator can see an
// election (or a lost quorum) rather than a timeout.
//
// Reads of the state (jobs, nodes, task logs) wait for Proposer::ReadBarrier,
// so a leader that was deposed without noticing cannot answer from a stale
// state; ClusterStatus, a report on this replica, does not wait.
//
// The Gateway itself only routes: it decodes the envelope, resolves who the
// caller is, answers NotLeader off the leader, and hands the request to the
// endpoint that serves its message type (control/gateway/*_endpoint.h: jobs,
// sessions, nodes, queues, users, exec, cluster, usage, watches, snapshots),
// which share one RequestContext for permission, audit, the read barrier and
// replies.
//
// Worker facts (last seen, GPU memory used) come from the WorkerTable, task
// logs and exec through the WorkerRelay, and replication facts from
// Proposer::Replication; the endpoints call no other manager.
//
// Issue 48: a request of a key that has --max-inflight-per-key requests
// unanswered already is answered ResourceExhausted at once (admins are not
// held); each reply the endpoints send answers its request (InflightRequests).
//
// Thread-safety: none; the coordinator's loop thread owns it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "control/gateway/cluster_endpoint.h"
#include "control/gateway/endpoint.h"
#include "control/gateway/exec_endpoint.h"
#include "control/gateway/jobs_endpoint.h"
#include "control/gateway/request_context.h"
#include "control/gateway/snapshot_endpoint.h"
#include "control/gateway/watch_endpoint.h"
#include "control/gateway/inflight_requests.h"
#include "control/principal.h"
#include "control/watch/watch_hub.h"

namespace gpool::control {

class Gateway {
 public:
  Gateway(const GatewayOptions& options, const state::ClusterState& state, const WorkerTable& workers,
          WorkerRelay& relay, Outbox& outbox, Proposer& proposer);

  // `principal`: who the transport authenticated the connection as.
  void OnFrame(const std::string& peer, std::string_view bytes, int64_t now_ms, const Principal& principal = {});
  // Where Watch requests go; without one they are answered Unavailable.
  void set_watch_hub(WatchHub* hub) { watch_->set_hub(hub); }
  // The endpoints' timers (snapshot exports idle too long, or all of them
  // once this replica no longer leads). From the loop, every turn.
  void Tick(int64_t now_ms);
  size_t snapshot_exports_held() const { return snapshot_->exports_held(); }
  // `peer`'s connection closed: its unanswered requests no longer count.
  void PeerClosed(const std::string& peer) { inflight_.PeerGone(peer); }
  // Whether the limits per key and per user (issue 48) hold `actor` (admins: not).
  bool HeldToLimits(const Actor& actor) const;
  // The principal's actor is an admin (ResolveActor, no frame needed).
  bool IsAdminPrincipal(const Principal& principal) const;
  const InflightRequests& inflight() const { return inflight_; }
  size_t exec_streams_open() const;

 private:
  // The endpoints' outbox: each reply frees the request it answers.
  class AnsweringOutbox final : public Outbox {
   public:
    AnsweringOutbox(Outbox& out, InflightRequests& inflight) : out_(out), inflight_(inflight) {}
    void ToClient(const std::string& peer, std::string frame) override;
    void ToWorker(const std::string& peer, std::string frame) override { out_.ToWorker(peer, std::move(frame)); }

   private:
    Outbox& out_;
    InflightRequests& inflight_;
  };
  void Route(Endpoint* endpoint);

  InflightRequests inflight_;
  AnsweringOutbox answering_;
  RequestContext ctx_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  // By message type: the endpoint that serves it (null: not a client request).
  std::array<Endpoint*, 256> routes_{};
  ClusterEndpoint* cluster_ = nullptr;
  WatchEndpoint* watch_ = nullptr;
  SnapshotEndpoint* snapshot_ = nullptr;
  ExecEndpoint* exec_ = nullptr;
};

}  // namespace gpool::control
