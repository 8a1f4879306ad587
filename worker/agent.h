// Agent: the thin ZeroMQ driver around the Link and the TaskManager. It owns
// the DEALER socket to the coordinator and runs the worker's one loop:
//
//   poll the socket (poll_ms) -> Link::Receive each frame
//   TaskManager::Poll (start, reap, SIGKILL at deadlines)
//   Link::Tick -> perform its actions through the NodeSocket (node_socket.h:
//   connect, and non-blocking sends)
//
// When `stop` becomes true the Agent stops the tasks (SIGTERM, grace,
// SIGKILL), keeps the loop turning until they are reaped so their exit
// events can still go out, and returns.
//
// Ownership and threads: owns the ZeroMQ context and the NodeSocket; the TaskManager
// and Link are the caller's and must outlive the Agent. Run on one thread,
// which must live as long as the tasks (PR_SET_PDEATHSIG follows the forking
// thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <spdlog/logger.h>
#include <zmq.hpp>

#include "protocol/base/clock.h"
#include "protocol/base/loop_inbox.h"
#include "protocol/base/status.h"
#include "worker/health/health_monitor.h"
#include "worker/link.h"
#include "worker/node_socket.h"
#include "worker/runner/exec_manager.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {

struct AgentOptions {
  TaskManager* tasks = nullptr;             // required
  Link* link = nullptr;                     // required
  HealthMonitor* health = nullptr;          // polled every turn, before the link; nullptr: none
  ExecManager* exec = nullptr;              // ticked every turn, after the tasks; nullptr: none
  LoopInbox* inbox = nullptr;               // work other threads post (the HTTP port's); nullptr: none
  const Clock* clock = nullptr;             // required
  int poll_ms = 20;                         // socket poll timeout per loop turn (10-50)
  int64_t shutdown_grace_ms = 5000;         // SIGTERM -> SIGKILL on shutdown
  int64_t shutdown_reap_ms = 2000;          // after the grace, how long to wait for exits
  int send_hwm = 1000;                      // frames queued per socket before sends drop
  int receive_hwm = 1000;
  size_t max_frames_per_turn = 1000;        // keeps timers running under a flood
  std::shared_ptr<spdlog::logger> logger;   // nullptr: spdlog's default
  security::KeyPair curve_keys;             // CurveZMQ (node_socket.h); empty secret: plaintext
  security::ServerKeys server_keys;
};

class Agent {
 public:
  static Result<std::unique_ptr<Agent>> Open(AgentOptions options);
  ~Agent();

  // Runs until `stop` is true, then shuts the tasks down and returns.
  Status Run(const std::atomic<bool>& stop);

 private:
  explicit Agent(AgentOptions options);

  void Turn(int poll_ms);

  AgentOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  zmq::context_t context_;
  // Declared after the context it uses, so it closes first.
  NodeSocket socket_;
};

}  // namespace gpool::worker
