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

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      log_(OrDefault(options_.logger)),
      context_(1),
      socket_(context_, *options_.link,
              NodeSocketOptions{options_.send_hwm, options_.receive_hwm, options_.max_frames_per_turn, log_,
                                options_.curve_keys, options_.server_keys}) {}

Agent::~Agent() = default;

void Agent::Turn(int poll_ms) {
  zmq_pollitem_t items[2];
  int count = 0;
  void* handle = socket_.handle();
  if (handle != nullptr) items[count++] = {handle, 0, ZMQ_POLLIN, 0};
  const int inbox_item = count;
  if (options_.inbox != nullptr) items[count++] = {nullptr, options_.inbox->fd(), ZMQ_POLLIN, 0};
  // With nothing to wait on, the poll just paces the loop.
  const int rc = zmq_poll(count == 0 ? nullptr : items, count, poll_ms);
  if (rc < 0 && zmq_errno() != EINTR) log_->warn("poll failed error={}", Q(zmq_strerror(zmq_errno())));
  if (rc > 0 && handle != nullptr && (items[0].revents & ZMQ_POLLIN)) socket_.ReceiveFrames();
  if (rc > 0 && options_.inbox != nullptr && (items[inbox_item].revents & ZMQ_POLLIN)) options_.inbox->RunPending();
  options_.tasks->Poll();
  if (options_.exec != nullptr) options_.exec->Tick();
  if (options_.health != nullptr) options_.health->Poll();
  options_.link->Tick();
  socket_.ApplyActions();
}

Status Agent::Run(const std::atomic<bool>& stop) {
  // One round of health checks first, so the registration carries what
  // they find at start rather than a heartbeat after it.
  if (options_.health != nullptr) options_.health->Poll();
  options_.link->Start();
  socket_.ApplyActions();
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
  socket_.Close(/*linger_ms=*/500);
  if (!options_.tasks->Idle()) {
    log_->error("tasks still alive after shutdown deadline running={}", options_.tasks->Running().size());
    return Status::DeadlineExceeded("tasks did not exit in time");
  }
  log_->info("stopped dropped_sends={}", socket_.dropped_sends());
  return Status::Ok();
}

}  // namespace gpool::worker
