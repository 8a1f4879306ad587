#include "client/client.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "client/connection_watch.h"
#include "protocol/base/endpoint.h"
#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_snapshot.h"
#include "protocol/messages_usage.h"
#include "protocol/messages_users.h"
#include "protocol/messages_watch.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"
#include "protocol/security/curve_socket.h"
#include "protocol/security/server_keys.h"

namespace gpool {
namespace {

// The real client: a DEALER socket per attempt, lazy-pirate retries.
class ZmqClient final : public Client {
 public:
  ZmqClient(const ClientOptions& options, std::vector<std::string> endpoints, security::ServerKeys server_keys)
      : options_(options), endpoints_(std::move(endpoints)), server_keys_(std::move(server_keys)) {
    if (options_.sender.empty()) options_.sender = "gpool-cli-" + std::to_string(::getpid());
  }

  ~ZmqClient() override {
    watch_.reset();   // before the socket it watches
    socket_.reset();  // before the context, which waits for its sockets
  }

  Result<SubmitJobReply> Submit(const JobSpec& spec, std::string idempotency_key) override {
    SubmitJob request;
    request.spec = spec;
    // Every request may be re-sent; an empty key would let a retry create a second job.
    request.idempotency_key = idempotency_key.empty() ? NewIdempotencyKey() : std::move(idempotency_key);
    return Call<SubmitJobReply>(request);
  }

  Result<ListJobsReply> ListJobs(bool include_finished, uint32_t limit) override {
    return CallListJobs(include_finished, limit, false);
  }

  Result<GetJobReply> GetJob(JobId job) override {
    gpool::GetJob request;
    request.job_id = job.value();
    return Call<GetJobReply>(request);
  }

  Result<CancelJobReply> CancelJob(JobId job, uint32_t grace_ms) override {
    gpool::CancelJob request;
    request.job_id = job.value();
    request.grace_ms = grace_ms;
    return Call<CancelJobReply>(request);
  }

  Result<ListNodesReply> ListNodes(bool devices) override { return Call<ListNodesReply>(gpool::ListNodes{devices}); }

  Result<GetTaskLogReply> GetTaskLog(JobId job, uint32_t task_index, uint32_t max_bytes) override {
    gpool::GetTaskLog request;
    request.job_id = job.value();
    request.task_index = task_index;
    request.max_bytes = max_bytes;
    return Call<GetTaskLogReply>(request);
  }

  Result<ClusterStatusReply> ClusterStatus() override { return Call<ClusterStatusReply>(gpool::ClusterStatus{}); }

  Result<ExecStartReply> ExecStart(const gpool::ExecStart& request) override {
    return Call<ExecStartReply>(request);
  }
  Result<ExecPollReply> ExecPoll(const gpool::ExecPoll& request) override { return Call<ExecPollReply>(request); }
  Status ExecSignal(const gpool::ExecSignal& request) override { return Call<Ack>(request).status(); }

  Result<ChangeReplicasReply> ChangeReplicas(const gpool::ChangeReplicas& request) override {
    return Call<ChangeReplicasReply>(request);
  }

  Result<UpdateNodeReply> UpdateNode(const gpool::UpdateNode& request) override {
    return Call<UpdateNodeReply>(request);
  }

  Result<UpdateQueueReply> UpdateQueue(const gpool::UpdateQueue& request) override {
    return Call<UpdateQueueReply>(request);
  }

  Result<ListQueuesReply> ListQueues() override { return Call<ListQueuesReply>(gpool::ListQueues{}); }

  Result<ReportProbeReply> ReportProbe(const gpool::ReportProbe& request) override {
    return Call<ReportProbeReply>(request);
  }
  Result<ListEventsReply> ListEvents(const gpool::ListEvents& request) override {
    return Call<ListEventsReply>(request);
  }
  Result<UpdateUserReply> UpdateUser(const gpool::UpdateUser& request) override {
    return Call<UpdateUserReply>(request);
  }
  Result<ListUsersReply> ListUsers() override { return Call<ListUsersReply>(gpool::ListUsers{}); }
  Result<UpdateUserReply> Bootstrap(const gpool::Bootstrap& request) override {
    return Call<UpdateUserReply>(request);
  }
  Result<WhoAmIReply> WhoAmI() override { return Call<WhoAmIReply>(gpool::WhoAmI{}); }
  Result<ListAuditReply> ListAudit(const gpool::ListAudit& request) override { return Call<ListAuditReply>(request); }
  Result<GetUsageReply> GetUsage(const gpool::GetUsage& request) override { return Call<GetUsageReply>(request); }
  Result<WatchReply> Watch(const gpool::Watch& request) override { return Call<WatchReply>(request); }
  Result<WatchRenewReply> WatchRenew(const gpool::WatchRenew& request) override {
    return Call<WatchRenewReply>(request);
  }
  Status Unwatch(uint64_t watch_id) override { return Call<Ack>(gpool::Unwatch{watch_id}).status(); }
  Result<std::optional<WatchUpdate>> NextPush(int timeout_ms) override {
    if (!pushes_.empty()) {
      WatchUpdate next = std::move(pushes_.front());
      pushes_.pop_front();
      return std::optional<WatchUpdate>(std::move(next));
    }
    // No connection: nothing can arrive; the caller's renewal reconnects.
    if (!socket_) return std::optional<WatchUpdate>();
    try {
      // Await keeps pushes aside; id 0 is never a request's.
      Result<std::optional<Envelope>> got = Await(0, std::chrono::milliseconds(std::max(0, timeout_ms)));
      if (!got.ok()) return got.status();
    } catch (const zmq::error_t& e) {
      CloseSocket();
      return Status::Unavailable(std::string("talking to ") + endpoint() + ": " + e.what());
    }
    if (pushes_.empty()) {
      if (watch_ != nullptr && watch_->Lost()) {
        // The coordinator holding the watch died: say so now (a transient
        // error, so a Watcher re-opens at once) rather than returning empty
        // at once again and again until the caller's next renewal.
        MarkFailed();
        CloseSocket();
        NextEndpoint();
        return Status::Unavailable("the coordinator holding the watch dropped the connection");
      }
      return std::optional<WatchUpdate>();
    }
    WatchUpdate next = std::move(pushes_.front());
    pushes_.pop_front();
    return std::optional<WatchUpdate>(std::move(next));
  }
  Result<UpdatePricesReply> UpdatePrices(const gpool::UpdatePrices& request) override {
    return Call<UpdatePricesReply>(request);
  }
  Result<CreditReply> Credit(const gpool::Credit& request) override { return Call<CreditReply>(request); }
  Result<EnrolmentReply> Enrol(const gpool::Enrolment& request) override { return Call<EnrolmentReply>(request); }
  Result<CreateTokenReply> CreateToken(const gpool::CreateToken& request) override {
    return Call<CreateTokenReply>(request);
  }
  Result<ListTokensReply> ListTokens(const gpool::ListTokens& request) override {
    return Call<ListTokensReply>(request);
  }
  Result<RevokeTokenReply> RevokeToken(const gpool::RevokeToken& request) override {
    return Call<RevokeTokenReply>(request);
  }
  Result<ExportSnapshotReply> ExportSnapshot(const gpool::ExportSnapshot& request) override {
    return Call<ExportSnapshotReply>(request);
  }
  Result<ExplainJobReply> ExplainJob(JobId job) override {
    gpool::ExplainJob request;
    request.job_id = job.value();
    return Call<ExplainJobReply>(request);
  }

  Result<ListJobsReply> ListSessions(bool include_finished, uint32_t limit) override {
    return CallListJobs(include_finished, limit, true);
  }

  Result<RenewSessionReply> RenewSession(JobId session) override {
    gpool::RenewSession request;
    request.job_id = session.value();
    return Call<RenewSessionReply>(request);
  }

 private:
  Result<ListJobsReply> CallListJobs(bool include_finished, uint32_t limit, bool sessions_only) {
    gpool::ListJobs request;
    request.include_finished = include_finished;
    request.limit = limit;
    request.sessions_only = sessions_only;
    return Call<ListJobsReply>(request);
  }

  const std::string& endpoint() const { return endpoints_[current_]; }

  // Pushes of the old connection are dropped with it: its watches are gone.
  void CloseSocket() {
    watch_.reset();
    socket_.reset();
    pushes_.clear();
  }

  // The current endpoint timed out, refused the connection or dropped it.
  void MarkFailed() {
    failed_at_[endpoint()] = std::chrono::steady_clock::now();
    // An endpoint with several accepted keys (a replica in a key rotation,
    // "new.pub+old.pub") is tried under its next one from now on.
    if (server_keys_.Count(endpoint()) > 1) ++key_attempt_[endpoint()];
  }
  // Whether `endpoint` failed lately (and has not answered since). A
  // follower keeps naming a dead leader until its election timeout passes;
  // going back there would cost a connect timeout each time, so the client
  // asks the other replicas instead, which learn the new leader first.
  bool FailedLately(const std::string& endpoint) const {
    auto it = failed_at_.find(endpoint);
    return it != failed_at_.end() && std::chrono::steady_clock::now() - it->second < kFailedMemory;
  }

  // The next endpoint that has not failed lately (the next one if all have).
  void NextEndpoint() {
    const size_t from = current_;
    for (size_t i = 1; i <= endpoints_.size(); ++i) {
      current_ = (from + i) % endpoints_.size();
      if (!FailedLately(endpoint())) return;
    }
    current_ = (from + 1) % endpoints_.size();
  }

  // Points at `leader` (adding it to the list when it is new). False, and
  // nothing changed, when the hint is not an endpoint to connect to: a
  // server's word is not trusted to add junk to the list.
  bool UseLeader(const std::string& leader) {
    auto parsed = ParseConnectEndpoint(leader, /*default_tcp=*/true);
    if (!parsed.ok()) return false;
    const std::string& normalized = *parsed;
    if (FailedLately(normalized)) return false;
    auto it = std::find(endpoints_.begin(), endpoints_.end(), normalized);
    if (it == endpoints_.end()) {
      endpoints_.push_back(normalized);
      it = endpoints_.end() - 1;
    }
    current_ = static_cast<size_t>(it - endpoints_.begin());
    return true;
  }

  Status OpenSocket() {
    if (socket_) return Status::Ok();
    try {
      auto socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
      socket->set(zmq::sockopt::linger, 0);
      // Queue nothing until a connection is up: a send that cannot complete
      // within the connect timeout means nobody is listening.
      socket->set(zmq::sockopt::immediate, 1);
      socket->set(zmq::sockopt::sndtimeo, std::max(1, std::min(options_.connect_timeout_ms, options_.timeout_ms)));
      if (secured()) {
        // A redirect to a replica the caller listed no key for (NotLeader
        // naming an endpoint not in --coordinator) cannot be reached securely.
        const std::string server_key = server_keys_.For(endpoint(), key_attempt_[endpoint()]);
        if (server_key.empty()) {
          return Status::Unavailable("no coordinator key for " + endpoint() +
                                     " (a replica named as the leader): list every replica in --coordinator with "
                                     "one --coordinator-key file each, in the same order");
        }
        GPOOL_RETURN_IF_ERROR(security::MakeCurveClient(*socket, options_.curve_keys, server_key)
                                  .WithContext("connecting to " + endpoint()));
      }
      socket->connect(endpoint());
      watch_ = std::make_unique<ConnectionWatch>(context_, *socket);
      socket_ = std::move(socket);
    } catch (const zmq::error_t& e) {
      return Status::InvalidArgument("cannot connect to '" + endpoint() + "': " + e.what());
    }
    return Status::Ok();
  }

  // Waits for the reply to request `id`. nullopt: nothing within `timeout`.
  Result<std::optional<Envelope>> Await(uint64_t id, std::chrono::milliseconds timeout) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    while (true) {
      auto remaining = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (remaining.count() <= 0) return std::optional<Envelope>();
      zmq::pollitem_t items[2] = {{socket_->handle(), 0, ZMQ_POLLIN, 0}, {}};
      const bool watched = watch_ != nullptr && watch_->active();
      if (watched) items[1] = watch_->poll_item();
      zmq::poll(items, watched ? 2 : 1, remaining);
      // A reply that arrived before the connection dropped is still read
      // first; otherwise a lost connection ends the wait like a timeout.
      if ((items[0].revents & ZMQ_POLLIN) == 0) {
        if (watched && (items[1].revents & ZMQ_POLLIN) != 0 && watch_->Lost()) return std::optional<Envelope>();
        continue;
      }
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(*socket_, std::back_inserter(parts), zmq::recv_flags::dontwait)) continue;
      if (parts.size() != 1) {
        return Status::Malformed("reply from " + endpoint() + ": expected one frame, got " +
                                 std::to_string(parts.size()));
      }
      auto envelope = DecodeEnvelope(parts[0].to_string_view());
      if (!envelope.ok()) {
        return Status::Malformed("reply from " + endpoint() + ": " + envelope.status().message());
      }
      // A pushed WatchUpdate is kept for NextPush, whatever was awaited;
      // NextPush awaits id 0 and returns on the first one.
      if (envelope->type() == MessageType::kWatchUpdate) {
        auto update = envelope->Body<WatchUpdate>();
        if (!update.ok()) return Status::Malformed("push from " + endpoint() + ": " + update.status().message());
        if (pushes_.size() < kMaxKeptPushes) pushes_.push_back(std::move(update).value());
        if (id == 0) return std::optional<Envelope>();
        continue;
      }
      // A reply to another id is a late answer to an earlier request: drop it.
      // An ErrorReply with id 0 is the coordinator refusing a frame whose
      // header it could not read; only this request is outstanding, so it is ours.
      const uint64_t reply_id = envelope->header().request_id;
      const bool unaddressed_error = reply_id == 0 && envelope->type() == MessageType::kErrorReply;
      if (reply_id != id && !unaddressed_error) continue;
      return std::optional<Envelope>(std::move(envelope).value());
    }
  }

  template <typename Reply, typename Request>
  Result<Reply> Call(const Request& request) {
    try {
      return CallOnce<Reply>(request);
    } catch (const zmq::error_t& e) {
      CloseSocket();
      return Status::Unavailable(std::string("talking to ") + endpoint() + ": " + e.what());
    }
  }

  template <typename Reply, typename Request>
  Result<Reply> CallOnce(const Request& request) {
    const auto timeout = std::chrono::milliseconds(std::max(1, options_.timeout_ms));
    const int attempts = 1 + std::max(0, options_.retries);
    Status last;
    int64_t election_waited_ms = 0;
    elections_ = 0;
    for (int attempt = 0; attempt < attempts; ++attempt) {
      if (watch_ != nullptr && watch_->Lost()) {
        // The connection dropped while the socket sat idle (its coordinator
        // died): a send would wait the connect timeout for nothing.
        MarkFailed();
        CloseSocket();
        NextEndpoint();
      }
      GPOOL_RETURN_IF_ERROR(OpenSocket());
      const uint64_t id = next_request_id_++;
      Header header;
      header.request_id = id;
      header.sender = options_.sender;
      header.token = options_.token;
      std::string frame = EncodeEnvelope(header, request);
      if (frame.size() > kMinReadableFrameBytes) {
        // A coordinator may drop a frame this large unanswered (envelope.h).
        return Status::ResourceExhausted("the request is " + std::to_string(frame.size()) +
                                         " bytes; no coordinator reads requests over " +
                                         std::to_string(kMinReadableFrameBytes) +
                                         " bytes (and each refuses those over its --max-frame-bytes)");
      }
      // Blocks at most connect_timeout_ms (ZMQ_SNDTIMEO with ZMQ_IMMEDIATE).
      bool sent = socket_->send(zmq::buffer(frame), zmq::send_flags::none).has_value();
      if (!sent) {
        last = Status::Unavailable("cannot connect to the coordinator at " + endpoint() + " (nothing accepted a " +
                                   "connection within " + std::to_string(options_.connect_timeout_ms) +
                                   " ms; is it running?" +
                                   (secured() ? " With CurveZMQ the coordinator also refuses a key it does not "
                                                "admit, and a wrong --coordinator-key fails the handshake)"
                                              : ")"));
        MarkFailed();
        CloseSocket();
        NextEndpoint();
        continue;
      }

      Result<std::optional<Envelope>> reply = Await(id, timeout);
      if (!reply.ok()) return reply.status();  // Malformed

      if (!reply->has_value()) {
        const bool lost = watch_ != nullptr && watch_->Lost();
        last = Status::Unavailable("coordinator at " + endpoint() +
                                   (lost ? " dropped the connection" : " did not answer within " +
                                                                           std::to_string(timeout.count()) + " ms") +
                                   (attempts > 1 ? " (" + std::to_string(attempt + 1) + " attempts)" : ""));
        // Lazy pirate: a DEALER may hold the unanswered request or a half-open
        // connection; a fresh socket starts clean.
        MarkFailed();
        CloseSocket();
        NextEndpoint();
        continue;
      }

      const Envelope& envelope = **reply;
      failed_at_.erase(endpoint());  // it answers
      if (envelope.type() == MessageType::kErrorReply) {
        auto error = envelope.Body<ErrorReply>();
        if (!error.ok()) return Status::Malformed("reply from " + endpoint() + ": " + error.status().message());
        Status status = error->ToStatus();
        if (status.code() != StatusCode::kNotLeader) return status;
        last = status;
        CloseSocket();
        if (!UseLeader(error->leader)) {
          // An election may be under way (or the hint names a replica that
          // just failed): ask the next replica after a short pause (20 ms,
          // then 40 ms), which finds a new leader soon after it is elected. These
          // short pauses are not counted as attempts until they add up to
          // what the attempts' own pauses (100 ms doubling) would have
          // waited, so few retries still ride out as long an election.
          NextEndpoint();
          const int64_t pause = std::min<int64_t>(timeout.count(), kFirstElectionPauseMs << std::min(elections_, 1));
          ++elections_;
          std::this_thread::sleep_for(std::chrono::milliseconds(pause));
          election_waited_ms += pause;
          if (election_waited_ms < ElectionBudgetMs(attempts, timeout.count())) --attempt;
        }
        continue;
      }
      auto body = envelope.Body<Reply>();
      if (!body.ok()) return Status::Malformed("reply from " + endpoint() + ": " + body.status().message());
      return body;
    }
    return last;
  }

  bool secured() const { return !options_.curve_keys.secret_key.empty(); }

  // What a call's pauses for a leader may add up to: what `attempts`
  // pauses of 100 ms doubling (each at most the reply timeout) come to.
  static int64_t ElectionBudgetMs(int attempts, int64_t timeout_ms) {
    int64_t budget = 0;
    for (int k = 0; k < attempts; ++k) budget += std::min<int64_t>(timeout_ms, int64_t{100} << std::min(k, 6));
    return budget;
  }

  // Pauses for a leader: 20 ms, then 40 ms. An election takes tens of ms
  // once a follower's timeout fires; a longer pause would mostly be spent
  // asleep after the new leader is known.
  static constexpr int64_t kFirstElectionPauseMs = 20;
  // How long an endpoint that failed is skipped and not trusted as a
  // NotLeader hint: about as long as followers keep naming a dead leader
  // (the default election timeout is 150-300 ms). Short, because a replica
  // that restarts may soon lead again.
  static constexpr std::chrono::milliseconds kFailedMemory{500};

  ClientOptions options_;
  std::vector<std::string> endpoints_;
  security::ServerKeys server_keys_;
  std::map<std::string, size_t> key_attempt_;  // endpoint -> which of its accepted keys to try
  size_t current_ = 0;
  uint64_t next_request_id_ = 1;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;  // null between a timeout and the next attempt
  std::unique_ptr<ConnectionWatch> watch_;  // on socket_; destroyed before it
  std::map<std::string, std::chrono::steady_clock::time_point> failed_at_;  // endpoint -> last failure
  int elections_ = 0;  // pauses for a leader in the current call
  // WatchUpdates received while awaiting a reply, for NextPush. Bounded: a
  // caller that stops reading loses the overflow, which its watch's seq
  // numbers reveal (it then re-watches from its position).
  static constexpr size_t kMaxKeptPushes = 10'000;
  std::deque<WatchUpdate> pushes_;
};

}  // namespace

Result<std::vector<std::string>> ParseEndpoints(const std::string& endpoints) {
  return ParseEndpointList(endpoints, "coordinator endpoint", /*default_tcp=*/true);
}

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  GPOOL_ASSIGN_OR_RETURN(std::vector<std::string> endpoints, ParseEndpoints(options.endpoints));
  if (options.timeout_ms <= 0) return Status::InvalidArgument("timeout_ms: must be positive");
  if (options.retries < 0) return Status::InvalidArgument("retries: must not be negative");
  security::ServerKeys server_keys;
  if (!options.curve_keys.secret_key.empty()) {
    GPOOL_ASSIGN_OR_RETURN(server_keys, security::ServerKeys::Match(endpoints, options.server_keys));
  }
  return std::unique_ptr<Client>(new ZmqClient(options, std::move(endpoints), std::move(server_keys)));
}

Result<GetUsageReply> Client::GetUsage(const gpool::GetUsage&) {
  return Status::UnknownType("this client does not implement GetUsage");
}

Result<UpdatePricesReply> Client::UpdatePrices(const gpool::UpdatePrices&) {
  return Status::UnknownType("this client does not implement UpdatePrices");
}

Result<CreditReply> Client::Credit(const gpool::Credit&) {
  return Status::UnknownType("this client does not implement Credit");
}

Result<CreateTokenReply> Client::CreateToken(const gpool::CreateToken&) {
  return Status::UnknownType("this client does not implement CreateToken");
}

Result<ListTokensReply> Client::ListTokens(const gpool::ListTokens&) {
  return Status::UnknownType("this client does not implement ListTokens");
}

Result<RevokeTokenReply> Client::RevokeToken(const gpool::RevokeToken&) {
  return Status::UnknownType("this client does not implement RevokeToken");
}

Result<WatchReply> Client::Watch(const gpool::Watch&) { return Status::UnknownType("this client does not watch"); }

Result<WatchRenewReply> Client::WatchRenew(const gpool::WatchRenew&) {
  return Status::UnknownType("this client does not watch");
}

Status Client::Unwatch(uint64_t) { return Status::UnknownType("this client does not watch"); }

Result<std::optional<WatchUpdate>> Client::NextPush(int) { return Status::UnknownType("this client does not watch"); }

Result<ExportSnapshotReply> Client::ExportSnapshot(const gpool::ExportSnapshot&) {
  return Status::UnknownType("this client does not export snapshots");
}

Result<EnrolmentReply> Client::Enrol(const gpool::Enrolment&) {
  return Status::UnknownType("this client does not manage enrolments");
}

std::string Client::NewIdempotencyKey() {
  std::random_device device;
  std::uniform_int_distribution<uint64_t> dist;
  char buffer[33];
  std::snprintf(buffer, sizeof(buffer), "%016llx%016llx", static_cast<unsigned long long>(dist(device)),
                static_cast<unsigned long long>(dist(device)));
  return buffer;
}

}  // namespace gpool
