#include "worker/agent.h"

#include <cerrno>

#include "worker/log.h"

namespace gpool::worker {

Result<std::unique_ptr<Agent>> Agent::Open(AgentOptions options) {
  if (options.tasks == nullptr || options.link == nullptr || options.clock == nullptr) {
    return Status::InvalidArgument("Agent: tasks, link and clock are required");
  }
  if (options.poll_ms < 1 || options.poll_ms > 1000) return Status::InvalidArgument("Agent: poll_ms out of range");
  try {
    return std::unique_ptr<Agent>(new Agent(std::move(options)));
  } catch (const zmq::error_t& e) {
    return Status::Internal(std::string("zmq context: ") + e.what());
  }
}

Agent::Agent(AgentOptions options) : options_(std::move(options)), log_(OrDefault(options_.logger)), context_(1) {}

Agent::~Agent() {
  if (socket_) {
    socket_->set(zmq::sockopt::linger, 0);
    socket_->close();
  }
}

void Agent::Connect(const std::string& endpoint) {
  if (socket_) {
    socket_->close();
    socket_.reset();
  }
  try {
    zmq::socket_t socket(context_, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::sndhwm, options_.send_hwm);
    socket.set(zmq::sockopt::rcvhwm, options_.receive_hwm);
    socket.connect(endpoint);
    socket_ = std::move(socket);
    log_->debug("socket connected endpoint={}", endpoint);
  } catch (const zmq::error_t& e) {
    // The Link will time out on the silence and move to the next endpoint.
    log_->error("cannot connect endpoint={} error={}", Q(endpoint), Q(e.what()));
    socket_.reset();
  }
}

void Agent::ApplyActions() {
  for (LinkAction& action : options_.link->TakeActions()) {
    if (action.kind == LinkAction::Kind::kConnect) {
      Connect(action.data);
      continue;
    }
    if (!socket_) {
      ++dropped_sends_;
      continue;
    }
    try {
      auto sent = socket_->send(zmq::buffer(action.data), zmq::send_flags::dontwait);
      if (!sent) {
        ++dropped_sends_;
        log_->debug("send queue full, frame dropped bytes={} dropped_total={}", action.data.size(), dropped_sends_);
      }
    } catch (const zmq::error_t& e) {
      ++dropped_sends_;
      log_->warn("send failed error={}", Q(e.what()));
    }
  }
}

void Agent::ReceiveFrames() {
  if (!socket_) return;
  for (size_t n = 0; n < options_.max_frames_per_turn; ++n) {
    // Coordinator frames are single-part; tolerate a leading empty delimiter.
    std::vector<zmq::message_t> parts;
    try {
      zmq::message_t part;
      if (!socket_->recv(part, zmq::recv_flags::dontwait)) return;
      bool more = part.more();
      parts.push_back(std::move(part));
      while (more) {
        zmq::message_t next;
        if (!socket_->recv(next, zmq::recv_flags::none)) break;
        more = next.more();
        parts.push_back(std::move(next));
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) log_->warn("receive failed error={}", Q(e.what()));
      return;
    }
    size_t first = 0;
    while (first + 1 < parts.size() && parts[first].size() == 0) ++first;
    if (parts.size() - first != 1) {
      log_->warn("multi-part message from coordinator dropped parts={}", parts.size());
      continue;
    }
    options_.link->Receive(parts[first].to_string_view());
  }
}

void Agent::Turn(int poll_ms) {
  if (socket_) {
    zmq_pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
    const int rc = zmq_poll(&item, 1, poll_ms);
    if (rc > 0) ReceiveFrames();
    if (rc < 0 && zmq_errno() != EINTR) log_->warn("poll failed error={}", Q(zmq_strerror(zmq_errno())));
  } else {
    zmq_poll(nullptr, 0, poll_ms);  // nothing to wait on; just pace the loop
  }
  options_.tasks->Poll();
  options_.link->Tick();
  ApplyActions();
}

Status Agent::Run(const std::atomic<bool>& stop) {
  options_.link->Start();
  ApplyActions();
  while (!stop.load()) Turn(options_.poll_ms);

  log_->info("shutting down, stopping tasks running={} grace_ms={}", options_.tasks->Running().size(),
             options_.shutdown_grace_ms);
  options_.tasks->StopAll(options_.shutdown_grace_ms);
  const int64_t deadline =
      options_.clock->MonoMs() + options_.shutdown_grace_ms + options_.shutdown_reap_ms;
  while (!options_.tasks->Idle() && options_.clock->MonoMs() < deadline) Turn(options_.poll_ms);
  // One more turn so the last exit events are queued, then give them a
  // moment on the wire.
  Turn(0);
  if (socket_) {
    socket_->set(zmq::sockopt::linger, 500);
    socket_->close();
    socket_.reset();
  }
  if (!options_.tasks->Idle()) {
    log_->error("tasks still alive after shutdown deadline running={}", options_.tasks->Running().size());
    return Status::DeadlineExceeded("tasks did not exit in time");
  }
  log_->info("stopped dropped_sends={}", dropped_sends_);
  return Status::Ok();
}

}  // namespace gpool::worker
