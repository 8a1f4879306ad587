// The Agent over a real ZeroMQ socket, against a scripted coordinator (a
// ROUTER socket on loopback) and real child processes. Every wait is a poll
// with a deadline.
#include "worker/agent.h"
#include "worker/node_host.h"

#include <csignal>
#include <thread>

#include <gtest/gtest.h>
#include <zmq_addon.hpp>

#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/runner/posix_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class FakeCoordinator {
 public:
  explicit FakeCoordinator(zmq::context_t& context, const std::string& endpoint = "tcp://127.0.0.1:*")
      : socket_(context, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    // Rebinding the port of a socket just closed can fail until ZeroMQ's I/O
    // thread has released it; retry for a bounded time.
    const int64_t deadline = SystemClock::Get().MonoMs() + 5000;
    for (;;) {
      try {
        socket_.bind(endpoint);
        break;
      } catch (const zmq::error_t& e) {
        if (e.num() != EADDRINUSE || SystemClock::Get().MonoMs() > deadline) throw;
        zmq_poll(nullptr, 0, 10);
      }
    }
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  }

  const std::string& endpoint() const { return endpoint_; }

  // The next frame from the worker, within 5 s.
  std::optional<Envelope> Receive() {
    const int64_t deadline = SystemClock::Get().MonoMs() + 5000;
    while (SystemClock::Get().MonoMs() < deadline) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      auto got = zmq::recv_multipart(socket_, std::back_inserter(parts));
      if (!got || parts.size() != 2) continue;
      peer_ = parts[0].to_string();
      auto env = DecodeEnvelope(parts[1].to_string_view());
      EXPECT_TRUE(env.ok()) << env.status().ToString();
      if (env.ok()) return std::move(env.value());
    }
    return std::nullopt;
  }

  // How heartbeats are answered while waiting for something else.
  enum class Heartbeats { kAck, kIgnore, kNotFound };
  void set_heartbeats(Heartbeats mode) { heartbeats_ = mode; }

  // The next frame of `type`, answering heartbeats on the way.
  std::optional<Envelope> ReceiveType(MessageType type) {
    for (int i = 0; i < 200; ++i) {
      auto env = Receive();
      if (!env) return std::nullopt;
      if (env->type() == type) return env;
      if (env->type() != MessageType::kHeartbeat) continue;
      if (heartbeats_ == Heartbeats::kAck) Send(Ack{}, env->header().request_id);
      if (heartbeats_ == Heartbeats::kNotFound) {
        Send(ErrorReply{"NotFound", "unknown node", ""}, env->header().request_id);
      }
    }
    return std::nullopt;
  }

  template <typename T>
  void Send(const T& body, uint64_t request_id, uint64_t epoch = 1) {
    Header header;
    header.request_id = request_id;
    header.sender = "fake-coordinator";
    header.epoch = epoch;
    const std::string frame = EncodeEnvelope(header, body);
    std::array<zmq::const_buffer, 2> parts = {zmq::buffer(peer_), zmq::buffer(frame)};
    zmq::send_multipart(socket_, parts);
  }

 private:
  zmq::socket_t socket_;
  std::string endpoint_;
  std::string peer_;
  Heartbeats heartbeats_ = Heartbeats::kAck;
};

// Runs Agent::Run on a thread; stops and joins it however the test ends.
class AgentThread {
 public:
  explicit AgentThread(Agent& agent) : thread_([this, &agent] { status_ = agent.Run(stop_); }) {}
  ~AgentThread() { (void)Stop(); }
  Status Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  std::atomic<bool> stop_{false};
  Status status_ = Status::Internal("not run");
  std::thread thread_;
};

TEST(AgentTest, RegistersRunsTasksFollowsARestartedCoordinatorAndStops) {
  testing::TempDir dir;
  testing::CapturedLog log;
  zmq::context_t context(1);
  auto coordinator = std::make_unique<FakeCoordinator>(context);
  const std::string endpoint = coordinator->endpoint();

  NodeSpec node;
  node.name = "agent-node";
  node.cpu_milli = 1000;
  node.memory_mib = 1024;
  PosixProcessLauncher launcher;
  TaskManagerOptions tm_options;
  tm_options.node = node;
  tm_options.log_dir = dir.path() + "/tasks";
  tm_options.base_env = {{"PATH", "/usr/bin:/bin"}};
  tm_options.launcher = &launcher;
  tm_options.clock = &SystemClock::Get();
  tm_options.logger = log.logger();
  auto tasks = std::move(TaskManager::Open(std::move(tm_options)).value());

  NodeHost host(NodeHostOptions{.tasks = tasks.get()});
  LinkOptions link_options;
  link_options.endpoints = {endpoint};
  link_options.token = "secret";
  link_options.host = &host;
  link_options.clock = &SystemClock::Get();
  link_options.logger = log.logger();
  // 20 x 50 ms = 1 s of silence before the worker gives the coordinator up:
  // this fake one answers only while the test thread waits in ReceiveType,
  // and on a loaded box that thread can be off the CPU for longer than 3 x 50.
  link_options.liveness_intervals = 20;
  auto link = std::move(Link::Open(std::move(link_options)).value());

  AgentOptions agent_options;
  agent_options.tasks = tasks.get();
  agent_options.link = link.get();
  agent_options.clock = &SystemClock::Get();
  agent_options.poll_ms = 10;
  agent_options.shutdown_grace_ms = 2000;
  agent_options.logger = log.logger();
  auto agent = std::move(Agent::Open(std::move(agent_options)).value());

  AgentThread running(*agent);

  // Registration.
  auto reg = coordinator->ReceiveType(MessageType::kRegisterNode);
  ASSERT_TRUE(reg.has_value()) << log.text();
  EXPECT_EQ(reg->header().token, "secret");
  EXPECT_EQ(reg->Body<RegisterNode>()->node.name, "agent-node");
  RegisterNodeReply reply;
  reply.heartbeat_interval_ms = 50;
  coordinator->Send(reply, reg->header().request_id);
  auto hb = coordinator->ReceiveType(MessageType::kHeartbeat);
  ASSERT_TRUE(hb.has_value()) << log.text();
  coordinator->Send(Ack{}, hb->header().request_id);

  // A task that prints and exits.
  BindTask bind;
  bind.task = TaskId{JobId(1), 0, 0};
  bind.command = {"sh", "-c", "echo hi; exit 0"};
  coordinator->Send(bind, 100);
  auto ack = coordinator->ReceiveType(MessageType::kAck);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->header().request_id, 100u);
  for (const TaskEventKind kind : {TaskEventKind::kStarted, TaskEventKind::kExited}) {
    auto event = coordinator->ReceiveType(MessageType::kTaskEvent);
    ASSERT_TRUE(event.has_value()) << log.text();
    EXPECT_EQ(event->Body<TaskEvent>()->kind, kind);
    TaskEventAck event_ack;
    event_ack.seq = event->Body<TaskEvent>()->seq;
    coordinator->Send(event_ack, event->header().request_id);
  }
  FetchLog fetch;
  fetch.task = bind.task;
  coordinator->Send(fetch, 101);
  auto logs = coordinator->ReceiveType(MessageType::kFetchLogReply);
  ASSERT_TRUE(logs.has_value());
  EXPECT_EQ(logs->Body<FetchLogReply>()->data, "hi\n");

  // A long task, then the coordinator "restarts" and does not answer: the
  // worker notices the silence (20 x 50 ms), reconnects and registers again,
  // reporting the task.
  bind.task = TaskId{JobId(2), 0, 0};
  bind.command = {"sleep", "30"};
  coordinator->Send(bind, 102);
  ASSERT_TRUE(coordinator->ReceiveType(MessageType::kAck).has_value());
  coordinator.reset();
  coordinator = std::make_unique<FakeCoordinator>(context, endpoint);
  coordinator->set_heartbeats(FakeCoordinator::Heartbeats::kIgnore);
  reg = coordinator->ReceiveType(MessageType::kRegisterNode);
  ASSERT_TRUE(reg.has_value()) << log.text();
  auto reports = reg->Body<RegisterNode>()->tasks;
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].task.job.value(), 2u);
  EXPECT_EQ(reports[0].state, TaskState::kRunning);
  coordinator->Send(reply, reg->header().request_id);

  // A coordinator that lost the node answers heartbeats with NotFound: the
  // worker registers again at once.
  coordinator->set_heartbeats(FakeCoordinator::Heartbeats::kNotFound);
  reg = coordinator->ReceiveType(MessageType::kRegisterNode);
  ASSERT_TRUE(reg.has_value());
  coordinator->set_heartbeats(FakeCoordinator::Heartbeats::kAck);
  coordinator->Send(reply, reg->header().request_id);
  ASSERT_TRUE(coordinator->ReceiveType(MessageType::kHeartbeat).has_value());

  // Shutdown: the task is stopped with SIGTERM and its exit still reported.
  Status stopped = running.Stop();
  EXPECT_TRUE(stopped.ok()) << stopped.ToString();
  EXPECT_TRUE(log.Contains("reconnecting to coordinator"));
  EXPECT_TRUE(log.Contains("coordinator does not know this node"));
  EXPECT_TRUE(tasks->Idle());
  bool saw_exit = false;
  for (int i = 0; i < 20 && !saw_exit; ++i) {
    auto event = coordinator->ReceiveType(MessageType::kTaskEvent);
    if (!event) break;
    auto body = event->Body<TaskEvent>();
    saw_exit = body->kind == TaskEventKind::kExited && body->task.job.value() == 2u && body->signal == SIGTERM;
  }
  EXPECT_TRUE(saw_exit) << log.text();
}

}  // namespace
}  // namespace gpool::worker
