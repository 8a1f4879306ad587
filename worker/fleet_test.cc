// The fleet over real ZeroMQ sockets against a scripted coordinator (one
// ROUTER on loopback that sees every node's connection). Every wait is a
// poll with a deadline.
#include "worker/fleet.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <zmq_addon.hpp>

#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "topology/fleet_nodes.h"
#include "protocol/base/testing/fake_clock.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class ScriptedCoordinator {
 public:
  explicit ScriptedCoordinator(zmq::context_t& context) : socket_(context, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  }
  const std::string& endpoint() const { return endpoint_; }

  // Answers registrations and heartbeats and acknowledges task events, until
  // `done` holds or 10 s pass. Returns whether `done` held.
  bool Serve(const std::function<bool()>& done) {
    const int64_t deadline = SystemClock::Get().MonoMs() + 10'000;
    while (!done()) {
      if (SystemClock::Get().MonoMs() > deadline) return false;
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(10));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(socket_, std::back_inserter(parts)) || parts.size() != 2) continue;
      const std::string peer = parts[0].to_string();
      auto env = DecodeEnvelope(parts[1].to_string_view());
      if (!env.ok()) continue;
      const uint64_t id = env->header().request_id;
      switch (env->type()) {
        case MessageType::kRegisterNode: {
          const std::string node = env->Body<RegisterNode>()->node.name;
          peers_[node] = peer;
          RegisterNodeReply reply;
          // 500 ms: a node that hears nothing for 3 intervals reconnects, and
          // this coordinator only answers inside Serve(); on a loaded box the
          // test thread can be off the CPU for a few hundred ms.
          reply.heartbeat_interval_ms = 500;
          Send(peer, reply, id);
          break;
        }
        case MessageType::kHeartbeat:
          ++heartbeats_[env->Body<Heartbeat>()->node];
          Send(peer, Ack{}, id);
          break;
        case MessageType::kTaskEvent: {
          auto event = env->Body<TaskEvent>();
          const bool resent = std::any_of(events_.begin(), events_.end(), [&](const TaskEvent& e) {
            return e.seq == event->seq && e.node == event->node;
          });
          if (resent) break;
          events_.push_back(*event);
          if (!ack_events_) break;
          TaskEventAck ack;
          ack.seq = event->seq;
          Send(peer, ack, id);
          break;
        }
        default:
          break;
      }
    }
    return true;
  }

  template <typename T>
  void Send(const std::string& peer, const T& body, uint64_t request_id) {
    Header header;
    header.request_id = request_id;
    header.sender = "scripted-coordinator";
    header.epoch = 1;
    const std::string frame = EncodeEnvelope(header, body);
    std::array<zmq::const_buffer, 2> parts = {zmq::buffer(peer), zmq::buffer(frame)};
    zmq::send_multipart(socket_, parts);
  }

  std::map<std::string, std::string> peers_;  // node -> connection
  std::map<std::string, int> heartbeats_;
  std::vector<TaskEvent> events_;
  bool ack_events_ = true;  // false: no input reaches a node after its binds but heartbeat answers

 private:
  zmq::socket_t socket_;
  std::string endpoint_;
};

TEST(FleetTest, EveryNodeRegistersOnItsOwnConnectionAndRunsTasks) {
  constexpr uint32_t kNodes = 30;
  testing::TempDir dir;
  testing::CapturedLog log;
  zmq::context_t context(1);
  ScriptedCoordinator coordinator(context);

  NodeSpec spec = testing::MakeGpuNode(2);
  spec.name = "sim";
  FleetOptions options;
  options.nodes = std::move(topology::MakeFleetNodes(spec, "", kNodes).value());
  options.endpoints = {coordinator.endpoint()};
  options.data_dir = dir.path();
  options.clock = &SystemClock::Get();
  options.logger = log.logger();
  options.poll_ms = 5;
  options.start_spread_ms = 100;
  // Each node keeps ended tasks' logs by the fleet's retention (a day here,
  // a week by default): a two-day-old log left on one node goes.
  options.log_retention = TaskLogRetention{24 * 3'600'000, 0, 0};
  const std::string old_log = dir.path() + "/sim-0005/tasks/3.0.0.log";
  std::filesystem::create_directories(dir.path() + "/sim-0005/tasks");
  std::ofstream(old_log) << "two days old\n";
  const auto two_days_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(48);
  std::filesystem::last_write_time(old_log, two_days_ago);
  auto fleet = Fleet::Open(std::move(options));
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  std::atomic<bool> stop{false};
  Status run_status = Status::Internal("not run");
  std::thread running([&] { run_status = (*fleet)->Run(stop); });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } joiner{stop, running};

  // Every node registers, each on a connection of its own, and heartbeats.
  ASSERT_TRUE(coordinator.Serve([&] {
    if (coordinator.heartbeats_.size() < kNodes) return false;
    for (const auto& [node, count] : coordinator.heartbeats_) {
      if (count < 2) return false;
    }
    return true;
  })) << "registered=" << coordinator.peers_.size() << " heartbeating=" << coordinator.heartbeats_.size() << "\n"
      << log.text();
  std::set<std::string> connections;
  for (const auto& [node, peer] : coordinator.peers_) connections.insert(peer);
  EXPECT_EQ(connections.size(), kNodes);
  EXPECT_EQ(coordinator.peers_.begin()->first, "sim-0001");
  EXPECT_EQ(coordinator.peers_.rbegin()->first, "sim-0030");
  EXPECT_FALSE(std::filesystem::exists(old_log)) << log.text();

  // Idle nodes are stepped when a timer of theirs is due (a heartbeat every
  // 500 ms) or an answer arrives: a few times a second each, where stepping
  // every node every 10 ms sweep was a hundred.
  const uint64_t steps_before = (*fleet)->steps();
  const int64_t window_start = SystemClock::Get().MonoMs();
  ASSERT_TRUE(coordinator.Serve([&] { return SystemClock::Get().MonoMs() >= window_start + 2'000; }));
  const uint64_t steps = (*fleet)->steps() - steps_before;
  EXPECT_GT(steps, kNodes);  // each heartbeated (four times, unless the box starved the fleet)
  EXPECT_LT(steps, kNodes * 2 * 20);

  // A simulated task on one node starts, runs its second and exits 0.
  BindTask bind;
  bind.task = TaskId{JobId(7), 0, 0};
  bind.command = {"sleep", "0.2"};
  bind.gpu_indices = {1};
  coordinator.Send(coordinator.peers_.at("sim-0017"), bind, 500);
  ASSERT_TRUE(coordinator.Serve([&] { return coordinator.events_.size() >= 2; })) << log.text();
  EXPECT_EQ(coordinator.events_[0].node, "sim-0017");
  EXPECT_EQ(coordinator.events_[0].kind, TaskEventKind::kStarted);
  EXPECT_EQ(coordinator.events_[1].kind, TaskEventKind::kExited);
  EXPECT_EQ(coordinator.events_[1].exit_code, 0);
  EXPECT_NE(testing::ReadFile(dir.path() + "/sim-0017/tasks/7.0.0.log").find("simulating: sleep 0.2"),
            std::string::npos);


  // A task still running at shutdown is stopped and its exit reported.
  bind.task = TaskId{JobId(8), 0, 0};
  bind.command = {"sleep", "infinity"};
  coordinator.Send(coordinator.peers_.at("sim-0003"), bind, 501);
  ASSERT_TRUE(coordinator.Serve([&] { return coordinator.events_.size() >= 3; })) << log.text();
  stop = true;
  auto exits = [&] {
    std::vector<TaskEvent> out;
    for (const TaskEvent& event : coordinator.events_) {
      if (event.kind == TaskEventKind::kExited) out.push_back(event);
    }
    return out;
  };
  ASSERT_TRUE(coordinator.Serve([&] { return exits().size() >= 2; })) << log.text();
  running.join();
  EXPECT_TRUE(run_status.ok()) << run_status.ToString();
  EXPECT_EQ(exits()[1].node, "sim-0003");
  EXPECT_EQ(exits()[1].signal, 15);
}

// The fleet's clock moving in coarse steps (10 ms at a time, as a loaded
// box's can seem to): a node still due after its step (more binds at once
// than it starts in one poll) is stepped again at the next sweep, never lost
// for being due in the very millisecond its queue entry was taken.
TEST(FleetTest, ABurstOfBindsAllStartWhenTheClockMovesInCoarseSteps) {
  testing::TempDir dir;
  testing::CapturedLog log;
  zmq::context_t context(1);
  ScriptedCoordinator coordinator(context);
  FakeClock clock;
  std::atomic<bool> stop{false};
  // Ticks until the fleet has stopped: its shutdown waits on this clock.
  std::atomic<bool> stop_ticking{false};
  std::thread ticking([&] {
    while (!stop_ticking.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      clock.Advance(10);
    }
  });
  NodeSpec spec = testing::MakeGpuNode(2);
  spec.name = "sim";
  FleetOptions options;
  options.nodes = std::move(topology::MakeFleetNodes(spec, "", 2).value());
  options.endpoints = {coordinator.endpoint()};
  options.data_dir = dir.path();
  options.clock = &clock;
  options.logger = log.logger();
  options.poll_ms = 5;
  options.start_spread_ms = 0;
  auto fleet = Fleet::Open(std::move(options));
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  Status run_status = Status::Internal("not run");
  std::thread running([&] { run_status = (*fleet)->Run(stop); });
  struct Joiner {
    std::atomic<bool>& stop;
    std::atomic<bool>& stop_ticking;
    std::thread& running;
    std::thread& ticking;
    ~Joiner() {
      stop = true;
      if (running.joinable()) running.join();
      stop_ticking = true;
      if (ticking.joinable()) ticking.join();
    }
  } joiner{stop, stop_ticking, running, ticking};
  ASSERT_TRUE(coordinator.Serve([&] { return coordinator.peers_.size() == 2; })) << log.text();
  // Unanswered events: only the node's own timers step it after the binds.
  coordinator.ack_events_ = false;

  constexpr size_t kBurst = 40;  // five polls' worth of starts (TaskManager::kMaxStartsPerPoll)
  for (size_t i = 0; i < kBurst; ++i) {
    BindTask burst;
    burst.task = TaskId{JobId(100 + i), 0, 0};
    burst.command = {"sleep", "infinity"};
    coordinator.Send(coordinator.peers_.at("sim-0001"), burst, 600 + i);
  }
  ASSERT_TRUE(coordinator.Serve([&] {
    size_t started = 0;
    for (const TaskEvent& event : coordinator.events_) started += event.kind == TaskEventKind::kStarted;
    return started == kBurst;
  })) << coordinator.events_.size() << " events\n" << log.text();
}

TEST(FleetTest, BadOptionsAreInvalidArgument) {
  FleetOptions options;
  EXPECT_EQ(Fleet::Open(options).status().code(), StatusCode::kInvalidArgument);
  options.nodes = {testing::MakeGpuNode(0)};
  options.endpoints = {"tcp://127.0.0.1:1"};
  options.data_dir = "/tmp";
  options.clock = &SystemClock::Get();
  options.poll_ms = 0;
  EXPECT_EQ(Fleet::Open(options).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpool::worker
