#include "worker/fleet.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "protocol/base/fd_limit.h"
#include "protocol/messages_watch.h"
#include "worker/log.h"
#include "worker/runner/job_hosts.h"

namespace gpool::worker {
namespace {

// Descriptors besides the nodes': stdio, ZeroMQ's context and I/O threads,
// task log files opened one at a time, the odd library.
constexpr uint64_t kSpareDescriptors = 64;  // also covers the epoll instance
// Each node's socket: its mailbox and its TCP connection (a reconnect closes
// one before it opens the next).
constexpr uint64_t kDescriptorsPerNode = 2;

Status EnsureDescriptors(size_t nodes, spdlog::logger& log) {
  const uint64_t needed = kSpareDescriptors + kDescriptorsPerNode * nodes;
  auto limit = RaiseOpenFileLimit(needed);
  if (!limit.ok()) return limit.status();
  if (limit->now > limit->before) log.info("raised the open file limit for the fleet from={} to={}", limit->before, limit->now);
  if (limit->now < needed) {
    return Status::ResourceExhausted("a fleet of " + std::to_string(nodes) + " nodes needs about " +
                                     std::to_string(needed) + " open files, but the limit is " +
                                     std::to_string(limit->now) + " (hard limit " + std::to_string(limit->hard) +
                                     "); raise it (ulimit -n) or simulate fewer nodes");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Fleet>> Fleet::Open(FleetOptions options) {
  if (options.nodes.empty()) return Status::InvalidArgument("Fleet: at least one node is required");
  if (options.endpoints.empty()) return Status::InvalidArgument("Fleet: at least one coordinator endpoint is required");
  if (options.data_dir.empty()) return Status::InvalidArgument("Fleet: data_dir is required");
  if (options.clock == nullptr) return Status::InvalidArgument("Fleet: clock is required");
  if (options.poll_ms < 1 || options.poll_ms > 1000) return Status::InvalidArgument("Fleet: poll_ms out of range");
  if (options.io_threads < 1) return Status::InvalidArgument("Fleet: io_threads must be >= 1");
  if (options.start_spread_ms < 0) return Status::InvalidArgument("Fleet: start_spread_ms must be >= 0");
  if (options.sweep_ms < 0 || options.sweep_ms > 1000) return Status::InvalidArgument("Fleet: sweep_ms out of range");
  auto log = OrDefault(options.logger);
  GPOOL_RETURN_IF_ERROR(EnsureDescriptors(options.nodes.size(), *log));
  std::unique_ptr<Fleet> fleet;
  try {
    fleet.reset(new Fleet(std::move(options)));
  } catch (const zmq::error_t& e) {
    return Status::Internal(std::string("zmq context: ") + e.what());
  }
  fleet->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (fleet->epoll_fd_ < 0) return Status::Internal(std::string("epoll_create1: ") + std::strerror(errno));
  fleet->nodes_.reserve(fleet->options_.nodes.size());
  for (const NodeSpec& spec : fleet->options_.nodes) GPOOL_RETURN_IF_ERROR(fleet->OpenNode(spec));
  return fleet;
}

Fleet::Fleet(FleetOptions options)
    : options_(std::move(options)),
      log_(OrDefault(options_.logger)),
      context_(options_.io_threads),
      resolver_(HostResolverOptions{.resolve = ResolveHost, .clock = options_.clock}),
      events_(256) {
  context_.set(zmq::ctxopt::max_sockets, static_cast<int>(options_.nodes.size() + kSpareDescriptors));
}

Fleet::~Fleet() {
  // Sockets before the context they belong to.
  nodes_.clear();
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

Status Fleet::OpenNode(const NodeSpec& spec) {
  auto logger = options_.node_logger ? options_.node_logger(spec.name) : log_;
  Node node;
  node.launcher = std::make_unique<SimulatedProcessLauncher>(options_.clock);
  node.mig = std::make_unique<SimulatedMigManager>(spec);
  TaskManagerOptions task_options;
  task_options.node = spec;
  task_options.log_dir = options_.data_dir + "/" + spec.name + "/tasks";
  task_options.base_env = options_.base_env;
  task_options.log_retention = options_.log_retention;
  task_options.launcher = node.launcher.get();
  task_options.resolver = &resolver_;
  task_options.mig = node.mig.get();
  task_options.clock = options_.clock;
  task_options.logger = logger;
  GPOOL_ASSIGN_OR_RETURN(node.tasks, TaskManager::Open(std::move(task_options)));

  LinkOptions link_options;
  link_options.endpoints = options_.endpoints;
  link_options.token = options_.token;
  link_options.worker_version = options_.worker_version;
  node.host = std::make_unique<NodeHost>(NodeHostOptions{.tasks = node.tasks.get()});
  link_options.host = node.host.get();
  link_options.clock = options_.clock;
  link_options.logger = logger;
  GPOOL_ASSIGN_OR_RETURN(node.link, Link::Open(std::move(link_options)));
  NodeSocketOptions socket_options;
  socket_options.logger = logger;
  if (options_.secure) {
    GPOOL_ASSIGN_OR_RETURN(socket_options.curve_keys, security::GenerateKeyPair());
    socket_options.server_keys = options_.server_keys;
  }
  node.socket = std::make_unique<NodeSocket>(context_, *node.link, std::move(socket_options));
  nodes_.push_back(std::move(node));
  due_ms_.push_back(INT64_MAX);
  watched_fd_.push_back(-1);
  watched_generation_.push_back(0);
  return Status::Ok();
}

void Fleet::StartDue(int64_t start_ms) {
  const int64_t elapsed = options_.clock->MonoMs() - start_ms;
  const size_t n = nodes_.size();
  while (started_ < n) {
    const int64_t due = options_.start_spread_ms * static_cast<int64_t>(started_) / static_cast<int64_t>(n);
    if (due > elapsed) return;
    const size_t index = started_++;
    nodes_[index].link->Start();
    Step(index, /*receive=*/false);
  }
}

void Fleet::Watch(size_t index) {
  NodeSocket& socket = *nodes_[index].socket;
  if (socket.generation() == watched_generation_[index]) return;
  watched_generation_[index] = socket.generation();
  const int fd = socket.fd();
  int& watched = watched_fd_[index];
  // A closed fd has left the epoll set already; EBADF/ENOENT are expected.
  if (watched >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, watched, nullptr);
  watched = -1;
  if (fd < 0) return;
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = index;
  // A new socket's fd may reuse the number of one not yet removed.
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0 &&
      (errno != EEXIST || epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event) != 0)) {
    // Still served by the sweep, only up to sweep_ms later.
    log_->warn("cannot watch a node's socket node={} error={}", options_.nodes[index].name, Q(std::strerror(errno)));
    return;
  }
  watched = fd;
}

void Fleet::Turn(int poll_ms) {
  const int64_t before = options_.clock->MonoMs();
  const int wait_ms = static_cast<int>(std::clamp<int64_t>(next_sweep_ms_ - before, 0, poll_ms));
  const int ready = epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()), wait_ms);
  if (ready < 0 && errno != EINTR) log_->warn("epoll_wait failed error={}", Q(std::strerror(errno)));
  const int64_t now = options_.clock->MonoMs();
  if (now < next_sweep_ms_) {
    // A node that heard something answers now (a bind starts its task and
    // reports it in this turn); the others wait for the sweep.
    for (int k = 0; k < ready; ++k) {
      const size_t index = static_cast<size_t>(events_[k].data.u64);
      if (index < started_) Step(index, /*receive=*/true);
    }
    return;
  }
  next_sweep_ms_ = now + options_.sweep_ms;
  // Sockets with input were reported by epoll_wait: receive on them only,
  // as a receive attempt costs a syscall per socket.
  for (int k = 0; k < ready; ++k) {
    const size_t index = static_cast<size_t>(events_[k].data.u64);
    if (index < started_) Step(index, /*receive=*/true);
  }
  // A safety net: every socket is received on about once a second (a slice
  // each sweep), so no frame waits longer than that even if an fd edge went
  // unseen. A tenth of them each sweep cost a receive syscall per node
  // every 100 ms.
  const size_t sweeps_a_second = static_cast<size_t>(1000 / std::max<int64_t>(1, options_.sweep_ms));
  const size_t slice = std::max<size_t>(1, (started_ + sweeps_a_second - 1) / std::max<size_t>(1, sweeps_a_second));
  for (size_t k = 0; k < slice && started_ > 0; ++k) {
    const size_t index = next_receive_sweep_++ % started_;
    // What it received is seen by its next Step: due now.
    if (nodes_[index].socket->ReceiveFrames() > 0) Step(index, /*receive=*/false);
  }
  while (!due_.empty() && due_.top().first <= now) {
    const auto [due, index] = due_.top();
    due_.pop();
    if (due_ms_[index] != due) continue;  // a stale entry: rescheduled since
    due_ms_[index] = INT64_MAX;           // not queued: Step's Schedule queues it again
    Step(index, /*receive=*/false);
  }
}

void Fleet::Schedule(size_t index) {
  const Node& node = nodes_[index];
  const int64_t now = options_.clock->MonoMs();
  // Input left unread (Step's rounds ran out) or a timer due now: the next
  // sweep (never this one again: a node still due, a start waiting its turn,
  // is stepped once a sweep, as every node was).
  int64_t due = node.socket->readable() ? now : std::min(node.link->NextDueMs(), node.tasks->NextDueMs());
  due = std::max(due, now + 1);
  if (due == due_ms_[index]) return;  // queued for then already
  due_ms_[index] = due;
  due_.emplace(due, index);
}

void Fleet::ScheduleAll() {
  const int64_t now = options_.clock->MonoMs();
  for (size_t i = 0; i < started_; ++i) {
    due_ms_[i] = now;
    due_.emplace(now, i);
  }
}

void Fleet::Step(size_t index, bool receive) {
  Node& node = nodes_[index];
  // ZMQ_FD only signals edges, and sending can consume the edge of a frame
  // that arrived meanwhile: after sending, look again (bounded, so one busy
  // node cannot starve the rest).
  for (int round = 0; round < 4; ++round) {
    // A sweep steps nodes without reading their sockets (a syscall each);
    // one about to give up on the coordinator reads first: after this
    // thread was busy (a burst of thousands of binds to start), its
    // coordinator's answers may be waiting unread, and giving up on a
    // coordinator that did answer would set off a reconnect storm.
    if (receive || round > 0 || node.link->SilenceDue()) node.socket->ReceiveFrames();
    node.tasks->Poll();
    node.link->Tick();
    const size_t actions = node.socket->ApplyActions();
    Watch(index);
    if (actions == 0 || !node.socket->readable()) break;
  }
  steps_.fetch_add(1, std::memory_order_relaxed);
  Schedule(index);
}

bool Fleet::Idle() const {
  return std::all_of(nodes_.begin(), nodes_.end(), [](const Node& node) { return node.tasks->Idle(); });
}

FleetStats Fleet::stats() const {
  FleetStats stats;
  stats.nodes = nodes_.size();
  stats.started = started_;
  for (const Node& node : nodes_) {
    stats.registered += node.link->registered() ? 1 : 0;
    stats.dropped_sends += node.socket->dropped_sends();
  }
  return stats;
}

void Fleet::LogProgress(int64_t now_ms) {
  if (now_ms < next_progress_log_ms_) return;
  next_progress_log_ms_ = now_ms + 1000;
  const FleetStats s = stats();
  // Progress while registrations change, not a line a second forever.
  if (s.registered == last_logged_registered_) return;
  last_logged_registered_ = s.registered;
  log_->info("fleet registration nodes={} started={} registered={} dropped_sends={}", s.nodes, s.started, s.registered,
             s.dropped_sends);
}

Status Fleet::Run(const std::atomic<bool>& stop) {
  const int64_t start_ms = options_.clock->MonoMs();
  log_->info("fleet starting nodes={} start_spread_ms={} io_threads={}", nodes_.size(), options_.start_spread_ms,
             options_.io_threads);
  while (!stop.load()) {
    StartDue(start_ms);
    Turn(options_.poll_ms);
    LogProgress(options_.clock->MonoMs());
  }

  size_t running = 0;
  for (Node& node : nodes_) running += node.tasks->Running().size();
  log_->info("fleet shutting down, stopping tasks nodes={} running={} grace_ms={}", nodes_.size(), running,
             options_.shutdown_grace_ms);
  for (Node& node : nodes_) node.tasks->StopAll(options_.shutdown_grace_ms);
  ScheduleAll();  // their tasks were signalled outside a Step
  const int64_t deadline = options_.clock->MonoMs() + options_.shutdown_grace_ms + options_.shutdown_reap_ms;
  while (!Idle() && options_.clock->MonoMs() < deadline) Turn(options_.poll_ms);
  // One more turn so the last exit events are queued; the linger gives them
  // a moment on the wire when the context terminates.
  next_sweep_ms_ = 0;
  ScheduleAll();
  Turn(0);
  for (Node& node : nodes_) node.socket->Close(/*linger_ms=*/500);
  const FleetStats s = stats();
  if (!Idle()) {
    log_->error("fleet tasks still alive after shutdown deadline");
    return Status::DeadlineExceeded("simulated tasks did not exit in time");
  }
  log_->info("fleet stopped nodes={} dropped_sends={}", s.nodes, s.dropped_sends);
  return Status::Ok();
}

}  // namespace gpool::worker
