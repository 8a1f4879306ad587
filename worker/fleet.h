// Fleet: fleet mode (`gpool-worker --simulate N --spec FILE`), N simulated
// nodes in one process, for benchmarks and tests that need a large cluster
// on one machine.
//
// Each node is what one real worker would be: its own NodeSpec
// (fleet_nodes.h), TaskManager (task logs in <data-dir>/<node>/tasks/),
// Link, and DEALER socket (NodeSocket), so the coordinator sees N separate
// connections, registrations, heartbeats and task events. What they share
// is the process: one ZeroMQ context and ONE thread that drives them all:
//
//   epoll_wait on every node's ZMQ_FD -> step the nodes with input at once
//   (receive, TaskManager::Poll, Link::Tick, send); every sweep_ms, step
//   the nodes whose timers are due (heartbeats, retries, task exits).
//
// A node is due when its Link or TaskManager says so (NextDueMs: a
// heartbeat, a retry, a simulated task's exit, a log pass; never more than
// a heartbeat interval away). Stepping every node every sweep instead cost
// 1.3 cores for 12,500 idle nodes, 1.25 million steps a second for 12,500
// heartbeats (perf: the steps' clock reads, log-retention and lease checks),
// the CPU a 2-core box needs for the coordinators the fleet is there to
// load. A node with something to do now (a start waiting its turn, an event
// to send) is due at the next sweep, as every node was before.
//
// epoll rather than zmq_poll: zmq_poll over a thousand sockets costs a
// thousand fds in a poll(2) and a getsockopt per socket on every call, about
// a third of a core for an idle fleet (perf). The sweep bounds the rest:
// with a thousand heartbeats a second arriving, stepping every node whenever
// any frame arrived would run the whole fleet a thousand times a second for
// nothing. A timer is thereby late by at most sweep_ms, far below any
// interval a Link or task uses. A socket is received on when epoll reports
// it, and again after every send that found input waiting (a send can
// consume the fd's edge); as a safety net each sweep also receives on a
// tenth of the sockets in turn.
//
// One thread rather than N Agents: a thousand threads each polling every
// 20 ms would cost more in context switches on a small machine than the
// nodes do work, and the Link and TaskManager are single-threaded state
// machines that need no thread of their own.
//
// Tasks are simulated (SimulatedProcessLauncher): no program runs, a task
// lasts as long as its command says (`sleep 30`), so binding thousands of
// tasks a second costs no fork.
//
// Registrations are spread over `start_spread_ms` (node i starts at
// i * spread / N): a thousand RegisterNode at once would arrive as one
// burst, and since each node heartbeats at a fixed interval from its
// registration, their heartbeats would keep arriving in that burst every
// interval. Spread, they arrive evenly.
//
// Resources: per node, a socket (its mailbox and TCP connection are two file
// descriptors). Open raises the soft RLIMIT_NOFILE as far as the hard limit
// allows and fails with ResourceExhausted when that is not enough; it also
// raises the context's socket limit (ZeroMQ's default is 1023 sockets).
//
// Stopping: when `stop` becomes true, every node stops its tasks (SIGTERM,
// grace, SIGKILL, all immediate for simulated tasks), the loop turns until
// their exits are queued, and the sockets get 500 ms to send them.
//
// Thread-safety: Run on one thread; registered() may be called from that
// thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include <sys/epoll.h>

#include <spdlog/logger.h>
#include <zmq.hpp>

#include "protocol/base/clock.h"
#include "protocol/base/status.h"
#include "protocol/messages_watch.h"
#include "protocol/security/server_keys.h"
#include "protocol/types.h"
#include "worker/link.h"
#include "worker/node_host.h"
#include "worker/node_socket.h"
#include "worker/runner/simulated_mig_manager.h"
#include "worker/runner/simulated_process_launcher.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {

struct FleetOptions {
  std::vector<NodeSpec> nodes;                  // required: the simulated nodes (MakeFleetNodes)
  std::vector<std::string> endpoints;           // required: coordinator worker-channel endpoints
  std::string token;                            // header.token of every frame
  // CurveZMQ: with secure set, each simulated node gets a key pair of its own
  // made at start (a node name binds to one key), so a fleet's nodes are new
  // to a secured coordinator on every start: give it a fresh data dir or use
  // --worker-enrolment first-use (a lab setting) with new node names.
  bool secure = false;
  security::ServerKeys server_keys;
  std::string worker_version;                   // reported in RegisterNode
  std::string data_dir;                         // required; node X logs its tasks in DATA_DIR/X/tasks/
  std::map<std::string, std::string> base_env;  // every task's inherited environment
  TaskLogRetention log_retention;               // each node's ended tasks' logs (task_log_janitor.h)
  const Clock* clock = nullptr;                 // required
  std::shared_ptr<spdlog::logger> logger;       // the fleet's own lines; nullptr: spdlog's default
  // Each node's logger (its name is the node's), so every line says which
  // node it is about. nullptr: all nodes log to `logger`.
  std::function<std::shared_ptr<spdlog::logger>(const std::string& node)> node_logger;
  int poll_ms = 20;                  // socket poll timeout per loop turn (1-1000)
  int64_t sweep_ms = 10;             // every node's timers are run this often (0-1000)
  int64_t start_spread_ms = 1000;    // registrations spread over this long (0: all at once)
  int64_t shutdown_grace_ms = 5000;  // SIGTERM -> SIGKILL on shutdown
  int64_t shutdown_reap_ms = 2000;   // after the grace, how long to wait for exits
  int io_threads = 1;                // ZeroMQ I/O threads for all the nodes' connections
};

struct FleetStats {
  size_t nodes = 0;
  size_t started = 0;     // nodes whose registration has begun
  size_t registered = 0;  // nodes registered now
  uint64_t dropped_sends = 0;
};

class Fleet {
 public:
  // Checks the options, raises the descriptor limit, opens every node's
  // TaskManager (creating its log dir) and Link. Nothing connects yet.
  static Result<std::unique_ptr<Fleet>> Open(FleetOptions options);
  ~Fleet();

  // Runs until `stop` is true, then shuts the nodes' tasks down and returns.
  Status Run(const std::atomic<bool>& stop);

  FleetStats stats() const;
  // Node steps since Open: for input, due timers or a start. Any thread.
  uint64_t steps() const { return steps_.load(std::memory_order_relaxed); }

 private:
  struct Node {
    std::unique_ptr<SimulatedProcessLauncher> launcher;
    std::unique_ptr<SimulatedMigManager> mig;
    std::unique_ptr<TaskManager> tasks;
    std::unique_ptr<NodeHost> host;  // the link's view of the tasks (simulated: no samplers, health or exec)
    std::unique_ptr<Link> link;
    std::unique_ptr<NodeSocket> socket;
  };

  explicit Fleet(FleetOptions options);
  Status OpenNode(const NodeSpec& spec);
  // Starts the nodes whose turn in the spread has come.
  void StartDue(int64_t start_ms);
  void Turn(int poll_ms);
  // One node's receives (when `receive`, and whenever its sends may have
  // consumed an input edge), TaskManager::Poll, Link::Tick and sends.
  void Step(size_t index, bool receive);
  // When the node is next due (after a Step), in due_ms_ and the queue.
  void Schedule(size_t index);
  // Every started node due at the next sweep (after calls outside Step).
  void ScheduleAll();
  // Keeps the node's current socket fd in the epoll set (a reconnect makes a
  // new socket).
  void Watch(size_t index);
  bool Idle() const;
  void LogProgress(int64_t now_ms);

  FleetOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  zmq::context_t context_;
  // One for all nodes (lookup threads are the process's, not a node's);
  // declared before the nodes, whose TaskManagers use it.
  HostResolver resolver_;
  // Declared after the context: the sockets close before it terminates.
  std::vector<Node> nodes_;
  size_t started_ = 0;
  int epoll_fd_ = -1;
  std::vector<int> watched_fd_;             // by node: the fd in the epoll set, -1 none
  std::vector<uint64_t> watched_generation_;  // by node: NodeSocket::generation() of that fd
  size_t next_receive_sweep_ = 0;           // the safety net's next node
  std::vector<epoll_event> events_;         // epoll_wait's buffer
  int64_t next_sweep_ms_ = 0;
  // By node: when it is next due (INT64_MAX: not started). The queue holds
  // (due, node), the stale entries of a node rescheduled since included:
  // an entry counts only while it matches due_ms_.
  std::vector<int64_t> due_ms_;
  std::priority_queue<std::pair<int64_t, size_t>, std::vector<std::pair<int64_t, size_t>>, std::greater<>> due_;
  std::atomic<uint64_t> steps_{0};  // Step calls (steps())
  size_t last_logged_registered_ = 0;
  int64_t next_progress_log_ms_ = 0;
};

}  // namespace gpool::worker
