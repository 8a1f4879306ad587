#include "worker/link.h"

#include <chrono>
#include <algorithm>
#include <random>

#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_worker.h"
#include "worker/log.h"

namespace gpool::worker {
namespace {

constexpr int64_t kDecodeLogWindowMs = 10'000;
constexpr uint32_t kDecodeLogsPerWindow = 10;
constexpr int64_t kHealthSendMinGapMs = 50;
// Immediate hops to a leader a NotLeader named, between two retries.
constexpr uint32_t kMaxLeaderHops = 3;
// How long before the plain lease runs out the hold is taken (at most half
// the lease): a few agent turns, so the file is prolonged before any
// supervisor can read it expired.
constexpr int64_t kHoldAheadMs = 1000;

bool IsReply(MessageType type) {
  switch (type) {
    case MessageType::kAck:
    case MessageType::kErrorReply:
    case MessageType::kSubmitJobReply:
    case MessageType::kListJobsReply:
    case MessageType::kGetJobReply:
    case MessageType::kCancelJobReply:
    case MessageType::kListNodesReply:
    case MessageType::kGetTaskLogReply:
    case MessageType::kClusterStatusReply:
    case MessageType::kRegisterNodeReply:
    case MessageType::kTaskEventAck:
    case MessageType::kFetchLogReply:
    case MessageType::kExecStartReply:
    case MessageType::kExecPollReply:
      return true;
    default:
      return false;
  }
}

// What can be salvaged from a frame that did not decode as an envelope: the
// request id, and whether it claims to be a reply (replies are never answered).
struct Salvage {
  bool has_id = false;
  uint64_t request_id = 0;
  bool is_reply = false;
};

Salvage SalvageHeader(std::string_view frame, const wire::DecodeLimits& limits) {
  Salvage out;
  auto handle = wire::UnpackOne(frame, limits);
  if (!handle.ok()) return out;
  const msgpack::object& root = handle->get();
  if (root.type != msgpack::type::MAP) return out;
  wire::ObjectReader id_reader(root, "envelope");
  uint64_t id = 0;
  id_reader.Required("id", &id);
  if (!id_reader.status().ok()) return out;
  out.has_id = true;
  out.request_id = id;
  wire::ObjectReader type_reader(root, "envelope");
  std::string type_name;
  type_reader.Optional("type", &type_name);
  if (type_reader.status().ok()) {
    auto type = MessageTypeFromName(type_name);
    out.is_reply = type.has_value() && IsReply(*type);
  }
  return out;
}

std::function<double()> DefaultRandom() {
  auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
  return [engine]() { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
}

}  // namespace

Result<std::unique_ptr<Link>> Link::Open(LinkOptions options) {
  if (options.endpoints.empty()) return Status::InvalidArgument("Link: at least one coordinator endpoint is required");
  if (options.host == nullptr) return Status::InvalidArgument("Link: host is required");
  if (options.clock == nullptr) return Status::InvalidArgument("Link: clock is required");
  if (options.liveness_intervals == 0) return Status::InvalidArgument("Link: liveness_intervals must be >= 1");
  if (options.default_heartbeat_ms <= 0) return Status::InvalidArgument("Link: default_heartbeat_ms must be > 0");
  if (options.electing_retry_ms <= 0) return Status::InvalidArgument("Link: electing_retry_ms must be > 0");
  if (!options.random) options.random = DefaultRandom();
  return std::unique_ptr<Link>(new Link(std::move(options)));
}

Link::Link(LinkOptions options)
    : options_(std::move(options)),
      log_(OrDefault(options_.logger)),
      backoff_(options_.register_backoff, options_.random),
      sender_("worker/" + options_.host->node().name),
      interval_ms_(options_.default_heartbeat_ms) {}

// --- Outgoing --------------------------------------------------------------

template <typename T>
void Link::Send(const T& body, uint64_t request_id) {
  Header header;
  header.request_id = request_id;
  header.sender = sender_;
  header.epoch = max_epoch_;
  header.token = options_.token;
  actions_.push_back({LinkAction::Kind::kSend, EncodeEnvelope(header, body)});
}

template <typename T>
void Link::Reply(const Header& request, const T& body) {
  Send(body, request.request_id);
}

void Link::ReplyError(const Header& request, const Status& status) {
  ++stats_.error_replies_sent;
  Reply(request, ErrorReply::FromStatus(status));
}

void Link::Connect(size_t index) {
  endpoint_index_ = index;
  last_heard_ms_ = Now();
  event_sent_ms_.clear();
  actions_.push_back({LinkAction::Kind::kConnect, options_.endpoints[index]});
}

void Link::ReconnectNext(const char* why) {
  size_t next = (endpoint_index_ + 1) % options_.endpoints.size();
  if (!redirect_.empty()) {
    auto known = std::find(options_.endpoints.begin(), options_.endpoints.end(), redirect_);
    if (known == options_.endpoints.end()) known = options_.endpoints.insert(options_.endpoints.end(), redirect_);
    next = static_cast<size_t>(known - options_.endpoints.begin());
    redirect_.clear();
  }
  ++stats_.reconnects;
  log_->warn("reconnecting to coordinator reason={} from={} to={} silent_ms={}", Q(why), endpoint(),
             options_.endpoints[next], Now() - last_heard_ms_);
  rotate_on_retry_ = false;
  Connect(next);
}

void Link::Start() {
  if (phase_ != Phase::kIdle) return;
  last_tick_ms_ = Now();  // starting counts as the first turn
  Connect(0);
  BeginRegistration();
}

void Link::BeginRegistration() {
  phase_ = Phase::kRegistering;
  backoff_.Reset();
  SendRegister();
}

void Link::SendRegister() {
  RegisterNode reg;
  reg.node = options_.host->node();
  reg.tasks = options_.host->TaskReports();
  reg.worker_version = options_.worker_version;
  reg.join_token = options_.join_token;
  // Whom this reaches is known only from its reply: the registration tells
  // what any coordinator knows, and a newer one is sent the list as it is
  // with the next heartbeat (OnRegisterReply).
  reg.health = HealthForCoordinator(options_.host->health(), kHealthKindsBeforeRepairs, &register_health_told_older_);
  register_health_version_ = options_.host->health_version();
  register_request_id_ = next_request_id_++;
  register_sent_ms_ = Now();
  ++stats_.register_attempts;
  const int64_t delay = backoff_.Next();
  next_register_ms_ = Now() + delay;
  log_->info("registering node={} coordinator={} tasks={} attempt={} retry_in_ms={}", reg.node.name, endpoint(),
             reg.tasks.size(), stats_.register_attempts, delay);
  Send(reg, register_request_id_);
}

void Link::SendHeartbeat() {
  ++stats_.heartbeats_sent;
  Heartbeat hb;
  hb.node = options_.host->node().name;
  options_.host->FillStatus(hb);
  const uint64_t id = next_request_id_++;
  SentHeartbeat sent{Now(), 0};
  hb.health_rounds = options_.host->health_rounds();
  hb.labels_digest = options_.host->labels_digest();
  if (const uint64_t version = options_.host->health_version(); version > acked_health_version_) {
    hb.health_version = sent.health_version = sent_health_version_ = version;
    hb.health = HealthForCoordinator(options_.host->health(), coordinator_health_kinds_);
    last_health_send_ms_ = sent.sent_ms;
  }
  heartbeat_sent_ms_[id] = sent;
  // Acks lost for longer than this many intervals renew nothing anyway.
  constexpr size_t kMaxUnacknowledged = 64;
  while (heartbeat_sent_ms_.size() > kMaxUnacknowledged) heartbeat_sent_ms_.erase(heartbeat_sent_ms_.begin());
  Send(hb, id);
}

void Link::SendEvents() {
  const int64_t now = Now();
  const auto& outbox = options_.host->events();
  for (auto it = event_sent_ms_.begin(); it != event_sent_ms_.end();) {
    it = outbox.count(it->first) ? std::next(it) : event_sent_ms_.erase(it);
  }
  for (const auto& [seq, event] : outbox) {
    EventSent& sent = event_sent_ms_[seq];
    if (sent.sends > 0) {
      const int64_t wait = options_.event_resend_ms << std::min<uint32_t>(sent.sends - 1, 4);
      if (now - sent.ms < wait) continue;
      log_->debug("resending task event seq={} task={} kind={} sends={}", seq, event.task.ToString(),
                  ToString(event.kind), sent.sends);
    }
    sent.ms = now;
    ++sent.sends;
    Send(event, next_request_id_++);
  }
}

int64_t Link::NextDueMs() const {
  const int64_t now = Now();
  if (phase_ == Phase::kIdle) return INT64_MAX;
  int64_t due = now + interval_ms_;
  if (phase_ == Phase::kRegistering) {
    due = std::min(due, next_register_ms_);
  } else {
    due = std::min({due, next_heartbeat_ms_, last_heard_ms_ + LivenessMs()});
    if (options_.host->health_version() > sent_health_version_) {
      due = std::min(due, last_health_send_ms_ + kHealthSendMinGapMs);
    }
    // SendEvents: a new event at once, a sent one when its resend is due.
    for (const auto& [seq, event] : options_.host->events()) {
      auto sent = event_sent_ms_.find(seq);
      if (sent == event_sent_ms_.end() || sent->second.sends == 0) return now;
      due = std::min(due, sent->second.ms + (options_.event_resend_ms << std::min<uint32_t>(sent->second.sends - 1, 4)));
    }
  }
  // MaybeHoldLease's window opens ahead of the lease's end.
  if (!held_ && !leader_named_ && leader_sent_ms_ != INT64_MIN && hold_ms_ > LeaseMs()) {
    const int64_t deadline = leader_sent_ms_ + LeaseMs();
    if (now < deadline) due = std::min(due, deadline - std::min(LeaseMs() / 2, kHoldAheadMs));
  }
  return std::max(due, now);
}

void Link::Tick() {
  const int64_t now = Now();
  if (last_tick_ms_ != INT64_MIN && now - last_tick_ms_ > interval_ms_) {
    last_heard_ms_ += now - last_tick_ms_ - interval_ms_;  // our own stall, not the coordinator's silence
  }
  last_tick_ms_ = now;
  if (phase_ != Phase::kIdle) MaybeHoldLease(now);
  switch (phase_) {
    case Phase::kIdle:
      return;
    case Phase::kRegistering:
      if (now < next_register_ms_) return;
      leader_hops_ = 0;
      if (rotate_on_retry_) {
        ReconnectNext("coordinator is not the leader");
      } else if (now - last_heard_ms_ >= LivenessMs()) {
        ReconnectNext("no answer to registration");
      }
      SendRegister();
      return;
    case Phase::kRegistered:
      if (now - last_heard_ms_ >= LivenessMs()) {
        ReconnectNext("coordinator silent for the liveness window");
        BeginRegistration();
        return;
      }
      // A health change goes out at once (at most every 50 ms), not at the
      // next interval: detection time is what it is for.
      if (now >= next_heartbeat_ms_ ||
          (options_.host->health_version() > sent_health_version_ &&
           now - last_health_send_ms_ >= kHealthSendMinGapMs)) {
        next_heartbeat_ms_ = now + interval_ms_;
        SendHeartbeat();
      }
      SendEvents();
      return;
  }
}

// --- Incoming --------------------------------------------------------------

void Link::Receive(std::string_view frame) {
  ++stats_.frames_received;
  auto env = DecodeEnvelope(frame, options_.limits);
  if (!env.ok()) {
    OnDecodeError(frame, env.status());
    return;
  }
  last_heard_ms_ = Now();
  const Header& header = env->header();
  const uint64_t epoch_before = max_epoch_;
  max_epoch_ = std::max(max_epoch_, header.epoch);

  switch (env->type()) {
    case MessageType::kRegisterNodeReply:
      OnRegisterReply(*env);
      return;
    case MessageType::kAck:
      OnAck(*env);
      return;
    case MessageType::kTaskEventAck:
      OnTaskEventAck(*env);
      return;
    case MessageType::kErrorReply:
      OnErrorReply(*env);
      return;
    case MessageType::kBindTask: {
      const auto start = std::chrono::steady_clock::now();
      OnBind(*env, epoch_before);
      ++stats_.binds;
      stats_.command_seconds.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      return;
    }
    case MessageType::kPreemptTask: {
      const auto start = std::chrono::steady_clock::now();
      OnPreempt(*env, epoch_before);
      ++stats_.preempts;
      stats_.command_seconds.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      return;
    }
    case MessageType::kFetchLog:
      OnFetchLog(*env);
      return;
    case MessageType::kNodeLabels:
      OnNodeLabels(*env, epoch_before);
      return;
    case MessageType::kTaskExecStart:
    case MessageType::kTaskExecPoll:
    case MessageType::kTaskExecSignal:
      OnExec(*env);
      return;
    default:
      break;
  }
  const std::string type(MessageTypeName(env->type()));
  if (IsReply(env->type())) {
    log_->warn("unexpected reply from coordinator type={} request_id={}", type, header.request_id);
    return;
  }
  log_->warn("request the worker does not serve type={} request_id={}", type, header.request_id);
  ReplyError(header, Status::UnknownType("the worker channel does not serve " + type));
}

void Link::OnDecodeError(std::string_view frame, const Status& status) {
  ++stats_.decode_errors;
  const int64_t now = Now();
  if (now - decode_log_window_ms_ >= kDecodeLogWindowMs) {
    decode_log_window_ms_ = now;
    decode_logged_in_window_ = 0;
  }
  const Salvage salvage = SalvageHeader(frame, options_.limits);
  const bool answer = salvage.has_id && !salvage.is_reply;
  if (decode_logged_in_window_ < kDecodeLogsPerWindow) {
    ++decode_logged_in_window_;
    log_->warn("bad frame from coordinator bytes={} error={} answered={}{}", frame.size(), Q(status.ToString()),
               answer, decode_logged_in_window_ == kDecodeLogsPerWindow ? " (further ones suppressed for 10s)" : "");
  } else {
    log_->debug("bad frame from coordinator bytes={} error={}", frame.size(), Q(status.ToString()));
  }
  if (answer) {
    Header request;
    request.request_id = salvage.request_id;
    ReplyError(request, status);
  }
}

void Link::OnRegisterReply(const Envelope& env) {
  auto reply = env.Body<RegisterNodeReply>();
  if (!reply.ok()) {
    OnDecodeError({}, reply.status());
    return;
  }
  int64_t interval = reply->heartbeat_interval_ms == 0 ? options_.default_heartbeat_ms : reply->heartbeat_interval_ms;
  interval_ms_ = std::clamp(interval, options_.min_heartbeat_ms, options_.max_heartbeat_ms);
  if (phase_ == Phase::kRegistered) {
    log_->debug("duplicate registration reply ignored heartbeat_ms={}", interval_ms_);
    return;
  }
  phase_ = Phase::kRegistered;
  last_refusal_.clear();
  acked_health_version_ = sent_health_version_ = register_health_version_;
  coordinator_health_kinds_ = reply->health_kinds == 0 ? kHealthKindsBeforeRepairs : reply->health_kinds;
  // It knows kinds the registration left out or renamed: the next heartbeat
  // carries the list as it is.
  if (register_health_told_older_ && coordinator_health_kinds_ > kHealthKindsBeforeRepairs) acked_health_version_ = 0;
  lease_ms_ = reply->lease_ms;
  hold_ms_ = reply->lease_hold_ms;
  RenewLease(register_sent_ms_);
  rotate_on_retry_ = false;
  leader_hops_ = 0;
  backoff_.Reset();
  ++stats_.registrations;
  next_heartbeat_ms_ = Now() + interval_ms_;
  event_sent_ms_.clear();  // everything unacknowledged goes out again now
  log_->info("registered node={} coordinator={} coordinator_id={} heartbeat_ms={} epoch={} pending_events={}",
             options_.host->node().name, endpoint(), Q(reply->coordinator_id), interval_ms_, max_epoch_,
             options_.host->events().size());
  SendEvents();
}

void Link::OnAck(const Envelope& env) {
  auto it = heartbeat_sent_ms_.find(env.header().request_id);
  if (it == heartbeat_sent_ms_.end()) return;
  const SentHeartbeat sent = it->second;
  heartbeat_sent_ms_.erase(heartbeat_sent_ms_.begin(), std::next(it));  // older ones renew less
  acked_health_version_ = std::max(acked_health_version_, sent.health_version);
  RenewLease(sent.sent_ms);
}

void Link::RenewLease(int64_t sent_ms) {
  if (sent_ms > leader_sent_ms_) {
    leader_sent_ms_ = sent_ms;
    held_ = false;
  }
  leader_named_ = false;
  options_.host->RenewLease(sent_ms, LeaseMs());
}

void Link::MaybeHoldLease(int64_t now) {
  if (held_ || leader_named_ || leader_sent_ms_ == INT64_MIN || hold_ms_ <= LeaseMs()) return;
  const int64_t deadline = leader_sent_ms_ + LeaseMs();
  // A lease that ran out has stopped the tasks (this process was stopped
  // past it): it stays out until a leader renews it.
  if (now >= deadline || now < deadline - std::min(LeaseMs() / 2, kHoldAheadMs)) return;
  held_ = true;
  ++stats_.lease_holds;
  log_->warn("no leader acknowledges this node and no replica names one: holding the node lease "
             "coordinator={} silent_ms={} lease_ms={} hold_ms={} remaining_ms={}",
             endpoint(), now - last_heard_ms_, LeaseMs(), hold_ms_, leader_sent_ms_ + hold_ms_ - now);
  options_.host->RenewLease(leader_sent_ms_, hold_ms_);
}

void Link::OnErrorReply(const Envelope& env) {
  auto reply = env.Body<ErrorReply>();
  if (!reply.ok()) {
    OnDecodeError({}, reply.status());
    return;
  }
  const uint64_t request_id = env.header().request_id;
  const bool to_register = request_id == register_request_id_;
  if (reply->code == StatusCodeName(StatusCode::kNotFound) && !to_register) {
    if (phase_ == Phase::kRegistered) {
      log_->warn("coordinator does not know this node, registering again coordinator={} message={}", endpoint(),
                 Q(reply->message));
      BeginRegistration();
    }
    return;
  }
  if (reply->code == StatusCodeName(StatusCode::kNotLeader)) {
    log_->info("coordinator is not the leader coordinator={} leader={}", endpoint(), Q(reply->leader));
    // The leader's worker endpoint, when the replica knows it: go straight
    // there (it may be a replica added after this worker started).
    const bool named = !reply->leader.empty() && reply->leader != endpoint();
    if (named) redirect_ = reply->leader;
    // For the lease hold: a replica that follows a leader says the control
    // plane is up (this node may be the one cut off); one that knows none
    // says it is electing.
    leader_named_ = !reply->leader.empty();
    if (phase_ == Phase::kRegistered) {
      ReconnectNext("coordinator is not the leader");
      BeginRegistration();
    } else if (named && leader_hops_ < kMaxLeaderHops) {
      // Told where the leader is: no reason to sit out a backoff grown
      // while the control plane was away.
      ++leader_hops_;
      ++stats_.leader_hops;
      ReconnectNext("coordinator named the leader");
      SendRegister();
    } else {
      rotate_on_retry_ = true;
      if (reply->leader.empty()) next_register_ms_ = std::min(next_register_ms_, Now() + options_.electing_retry_ms);
    }
    return;
  }
  if (to_register) {
    const bool repeated = reply->code + reply->message == last_refusal_;
    last_refusal_ = reply->code + reply->message;
    log_->log(repeated ? spdlog::level::debug : spdlog::level::err,
              "registration refused coordinator={} code={} message={} repeats_logged_at=debug", endpoint(),
              reply->code, Q(reply->message));
  } else {
    log_->warn("coordinator error request_id={} code={} message={}", request_id, Q(reply->code), Q(reply->message));
  }
}

void Link::OnTaskEventAck(const Envelope& env) {
  auto ack = env.Body<TaskEventAck>();
  if (!ack.ok()) {
    OnDecodeError({}, ack.status());
    return;
  }
  options_.host->AckEvent(ack->seq);
  event_sent_ms_.erase(ack->seq);
}

bool Link::Fence(const Header& header, uint64_t epoch_before) {
  if (header.epoch >= epoch_before) return true;
  ++stats_.stale_epoch_refusals;
  log_->warn("stale command refused type={} request_id={} epoch={} current_epoch={}", MessageTypeName(header.type),
             header.request_id, header.epoch, epoch_before);
  ReplyError(header, Status::StaleEpoch("epoch " + std::to_string(header.epoch) + " is older than epoch " +
                                        std::to_string(epoch_before) + " seen by this worker"));
  return false;
}

void Link::OnBind(const Envelope& env, uint64_t epoch_before) {
  if (!Fence(env.header(), epoch_before)) return;
  auto bind = env.Body<BindTask>();
  if (!bind.ok()) {
    log_->warn("malformed BindTask request_id={} error={}", env.header().request_id, Q(bind.status().ToString()));
    ReplyError(env.header(), bind.status());
    return;
  }
  Status status = options_.host->Bind(*bind);
  if (!status.ok()) {
    log_->warn("bind refused task={} error={}", bind->task.ToString(), Q(status.ToString()));
    ReplyError(env.header(), status);
    return;
  }
  Reply(env.header(), Ack{});
}

void Link::OnNodeLabels(const Envelope& env, uint64_t epoch_before) {
  // An older leader's state may be older: its labels are not taken.
  if (!Fence(env.header(), epoch_before)) return;
  auto labels = env.Body<NodeLabels>();
  Status status = labels.ok() ? Status::Ok() : labels.status();
  if (status.ok() && labels->node != options_.host->node().name) {
    status = Status::InvalidArgument("node labels for '" + labels->node.substr(0, 253) + "' sent to node '" +
                                     options_.host->node().name + "'");
  }
  if (status.ok()) status = options_.host->SetLabels(std::move(labels->labels));
  if (!status.ok()) {
    log_->warn("node labels refused request_id={} error={}", env.header().request_id, Q(status.ToString()));
    ReplyError(env.header(), status);
    return;
  }
  Reply(env.header(), Ack{});
}

void Link::OnPreempt(const Envelope& env, uint64_t epoch_before) {
  if (!Fence(env.header(), epoch_before)) return;
  auto preempt = env.Body<PreemptTask>();
  if (!preempt.ok()) {
    log_->warn("malformed PreemptTask request_id={} error={}", env.header().request_id,
               Q(preempt.status().ToString()));
    ReplyError(env.header(), preempt.status());
    return;
  }
  options_.host->Preempt(*preempt);
  Reply(env.header(), Ack{});
}

void Link::OnFetchLog(const Envelope& env) {
  auto request = env.Body<FetchLog>();
  if (!request.ok()) {
    log_->warn("malformed FetchLog request_id={} error={}", env.header().request_id, Q(request.status().ToString()));
    ReplyError(env.header(), request.status());
    return;
  }
  auto reply = options_.host->TailLog(request->task, request->max_bytes);
  if (!reply.ok()) {
    ReplyError(env.header(), reply.status());
    return;
  }
  Reply(env.header(), *reply);
}

void Link::OnExec(const Envelope& env) {
  const Header& header = env.header();
  auto answer = [&](const auto& result) {
    if (!result.ok()) return ReplyError(header, result.status());
    Reply(header, *result);
  };
  switch (env.type()) {
    case MessageType::kTaskExecStart: {
      auto request = env.Body<TaskExecStart>();
      if (!request.ok()) return ReplyError(header, request.status());
      return answer(options_.host->ExecStart(*request));
    }
    case MessageType::kTaskExecPoll: {
      auto request = env.Body<TaskExecPoll>();
      if (!request.ok()) return ReplyError(header, request.status());
      return answer(options_.host->ExecPoll(*request));
    }
    case MessageType::kTaskExecSignal: {
      auto request = env.Body<TaskExecSignal>();
      if (!request.ok()) return ReplyError(header, request.status());
      Status signalled = options_.host->ExecSignal(*request);
      if (!signalled.ok()) return ReplyError(header, signalled);
      return Reply(header, Ack{});
    }
    default:
      return;
  }
}

}  // namespace gpool::worker
