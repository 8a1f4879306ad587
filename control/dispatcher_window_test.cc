// The dispatcher's per-node window (issue 49): a node never has more than
// `window_per_node` commands awaiting its answer, the rest go as answers
// come back (stops first), a reconnect starts afresh, and resends back off.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "control/dispatcher.h"
#include "control/testing/fake_ports.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"

namespace gpool::control {
namespace {

class DispatcherWindowTest : public ::testing::Test {
 protected:
  // `jobs` jobs of `replicas` CPU-only tasks each, all bound: the first half
  // of the jobs on n1, the rest on n2.
  void Build(uint32_t window, uint32_t jobs, uint32_t replicas) {
    DispatcherOptions options;
    options.window_per_node = window;
    options.metrics = &metrics_;
    dispatcher_ = std::make_unique<Dispatcher>(options, state_, workers_, request_ids_, outbox_, proposer_);
    proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n1"), {}}, [](const auto&) {});
    proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n2"), {}}, [](const auto&) {});
    for (uint32_t j = 1; j <= jobs; ++j) {
      JobSpec spec;
      spec.name = "j" + std::to_string(j);
      spec.tasks.push_back(
          TaskGroupSpec{.replicas = replicas, .command = {"true"}, .resources = Resources{0, 100, 100}});
      proposer_.Propose(state::SubmitJobCmd{spec, ""}, [](const auto&) {});
      std::vector<state::PlanBind> binds;
      for (uint32_t r = 0; r < replicas; ++r) {
        binds.push_back(state::PlanBind{JobId(j), r, j <= (jobs + 1) / 2 ? "n1" : "n2", {}, 100, 100});
      }
      proposer_.Propose(state::ApplyPlanCmd{binds, {}},
                        [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
    }
  }

  struct Frame {
    std::string peer;
    uint64_t request = 0;
    MessageType type{};
    TaskId task;
  };
  Frame Decode(size_t i) const {
    const auto& sent = outbox_.sent.at(i);
    const Envelope env = DecodeEnvelope(sent.frame).value();
    Frame out{sent.peer, env.header().request_id, env.type(), {}};
    out.task = env.type() == MessageType::kBindTask ? env.Body<BindTask>().value().task
                                                    : env.Body<PreemptTask>().value().task;
    return out;
  }
  std::vector<Frame> SentTo(const std::string& peer) const {
    std::vector<Frame> out;
    for (size_t i = 0; i < outbox_.sent.size(); ++i) {
      if (outbox_.sent[i].peer == peer) out.push_back(Decode(i));
    }
    return out;
  }
  void Answer(const std::string& node, uint64_t request) {
    dispatcher_->WorkerReplied(node, WorkerReply(request, gpool::Ack{}));
  }

  state::ClusterState state_;
  WorkerTable workers_;
  RequestIds request_ids_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  WorkerMetrics metrics_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherWindowTest, ANodeGetsOneWindowAtATimeAndTheRestAsItAnswers) {
  Build(/*window=*/3, /*jobs=*/1, /*replicas=*/10);
  workers_.Connect("n1", "peer-1", 0, 0);
  dispatcher_->Tick(0);
  ASSERT_EQ(SentTo("peer-1").size(), 3u);
  EXPECT_EQ(dispatcher_->waiting(), 7u);
  EXPECT_EQ(metrics_.commands_waiting, 7u);
  dispatcher_->Tick(100);
  EXPECT_EQ(SentTo("peer-1").size(), 3u) << "nothing more until the node answers";
  Answer("n1", SentTo("peer-1")[0].request);
  EXPECT_EQ(SentTo("peer-1").size(), 4u) << "an answer frees a slot at once";
  // Answering everything sent, as it comes, gets every task its bind exactly once.
  for (size_t answered = 1; answered < SentTo("peer-1").size(); ++answered) Answer("n1", SentTo("peer-1")[answered].request);
  std::set<TaskId> bound;
  for (const Frame& frame : SentTo("peer-1")) EXPECT_TRUE(bound.insert(frame.task).second) << frame.task.ToString();
  EXPECT_EQ(bound.size(), 10u);
  EXPECT_EQ(dispatcher_->waiting(), 0u);
  dispatcher_->Tick(200);
  EXPECT_EQ(metrics_.commands_waiting, 0u);
}

TEST_F(DispatcherWindowTest, StopsGoAheadOfWaitingBinds) {
  Build(/*window=*/1, /*jobs=*/3, /*replicas=*/4);  // jobs 1 and 2 on n1
  workers_.Connect("n1", "peer-1", 0, 0);
  dispatcher_->Tick(0);
  ASSERT_EQ(SentTo("peer-1").size(), 1u);
  EXPECT_EQ(SentTo("peer-1")[0].task.job, JobId(1));
  proposer_.Propose(state::CancelJobCmd{2, 300}, [](const auto&) {});
  dispatcher_->Tick(10);
  Answer("n1", SentTo("peer-1")[0].request);
  ASSERT_EQ(SentTo("peer-1").size(), 2u);
  EXPECT_EQ(SentTo("peer-1")[1].type, MessageType::kPreemptTask) << "the cancel's stop before job 1's other binds";
  EXPECT_EQ(SentTo("peer-1")[1].task.job, JobId(2));
}

TEST_F(DispatcherWindowTest, AReconnectedNodeGetsOneWindowOnItsNewConnection) {
  Build(/*window=*/2, /*jobs=*/1, /*replicas=*/6);
  workers_.Connect("n1", "peer-1", 0, 0);
  dispatcher_->Tick(0);
  ASSERT_EQ(SentTo("peer-1").size(), 2u);
  // A fleet that keeps re-registering used to get every bind again each time.
  for (int reconnect = 0; reconnect < 5; ++reconnect) {
    workers_.Connect("n1", "peer-1b", 100, 100);
    dispatcher_->NodeConnected("n1");
    dispatcher_->Tick(100 + reconnect);
  }
  EXPECT_EQ(SentTo("peer-1b").size(), 2u * 5) << "one window per connection, not one bind per task";
  EXPECT_EQ(dispatcher_->in_flight(), 6u);
  EXPECT_EQ(dispatcher_->waiting(), 4u);
  // The old connection's late answer frees nothing on the new one.
  Answer("n1", SentTo("peer-1")[0].request);
  EXPECT_EQ(SentTo("peer-1b").size(), 10u);
  Answer("n1", SentTo("peer-1b").back().request);
  EXPECT_EQ(SentTo("peer-1b").size(), 11u);
}

TEST_F(DispatcherWindowTest, ResendsAndReconfirmsBackOff) {
  Build(/*window=*/4, /*jobs=*/1, /*replicas=*/1);
  workers_.Connect("n1", "peer-1", 0, 0);
  dispatcher_->Tick(0);
  dispatcher_->Tick(2000);
  ASSERT_EQ(SentTo("peer-1").size(), 2u) << "unanswered for 2 s: resent";
  dispatcher_->Tick(5999);
  EXPECT_EQ(SentTo("peer-1").size(), 2u) << "the next wait is twice as long";
  dispatcher_->Tick(6000);
  ASSERT_EQ(SentTo("peer-1").size(), 3u);
  EXPECT_EQ(metrics_.commands_resent, 2u);
  Answer("n1", SentTo("peer-1")[2].request);
  dispatcher_->Tick(16'000);
  ASSERT_EQ(SentTo("peer-1").size(), 4u) << "acknowledged, never started: confirmed after 10 s";
  Answer("n1", SentTo("peer-1")[3].request);
  dispatcher_->Tick(35'999);
  EXPECT_EQ(SentTo("peer-1").size(), 4u) << "then after 20 s";
  dispatcher_->Tick(36'000);
  EXPECT_EQ(SentTo("peer-1").size(), 5u);
}

// Random answers, refusals, cancels, task starts and reconnects on two nodes:
// at every step no node has more unanswered commands than its window, and once
// the nodes answer everything, every task still due has had its command
// acknowledged.
TEST_F(DispatcherWindowTest, NeverMoreThanTheWindowUnansweredAndNothingDueIsForgotten) {
  constexpr uint32_t kWindow = 4;
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    state_ = state::ClusterState{};
    outbox_.sent.clear();
    workers_.Clear();
    Build(kWindow, /*jobs=*/6, /*replicas=*/5);
    std::mt19937 rng(seed);
    std::map<std::string, std::string> peer_of = {{"n1", "peer-n1-0"}, {"n2", "peer-n2-0"}};
    for (const auto& [node, peer] : peer_of) workers_.Connect(node, peer, 0, 0);
    std::set<uint64_t> answered;
    std::map<TaskId, uint64_t> latest;  // the last request sent for each task
    std::vector<Frame> frames;          // everything sent, decoded once
    int64_t now = 0;
    auto refresh = [&] {
      while (frames.size() < outbox_.sent.size()) {
        frames.push_back(Decode(frames.size()));
        latest[frames.back().task] = frames.back().request;
      }
    };
    auto node_of = [&](const TaskId& task) { return state_.FindTask(task)->node; };
    // Latest commands, unanswered, still due, sent to the node's connection of now.
    auto outstanding = [&](const std::string& node) {
      refresh();
      std::vector<std::pair<TaskId, uint64_t>> out;
      for (const Frame& frame : frames) {
        if (latest[frame.task] != frame.request || answered.count(frame.request) != 0) continue;
        if (frame.peer != peer_of[node] || node_of(frame.task) != node || !state_.command_due(frame.task)) continue;
        out.emplace_back(frame.task, frame.request);
      }
      return out;
    };
    dispatcher_->Tick(now);
    for (int step = 0; step < 300; ++step) {
      refresh();
      const std::string node = rng() % 2 == 0 ? "n1" : "n2";
      auto open = outstanding(node);
      ASSERT_LE(open.size(), kWindow) << node << " at step " << step;
      switch (rng() % 8) {
        case 0: case 1: case 2:
          if (!open.empty()) {
            const auto& [task, request] = open[rng() % open.size()];
            answered.insert(request);
            Answer(node, request);
          }
          break;
        case 3:
          if (!open.empty()) {
            const uint64_t request = open[rng() % open.size()].second;
            answered.insert(request);
            dispatcher_->WorkerReplied(node, WorkerReply(request, ErrorReply::FromStatus(Status::Unavailable("busy"))));
          }
          break;
        case 4:
          proposer_.Propose(state::CancelJobCmd{1 + rng() % 6, 100}, [](const auto&) {});
          dispatcher_->Tick(now);
          break;
        case 5: {
          // A task whose bind was acknowledged starts.
          for (const auto& [task, request] : latest) {
            const state::TaskRecord* record = state_.FindTask(task);
            if (answered.count(request) == 0 || record->state != TaskState::kBound || node_of(task) != node) continue;
            TaskEvent started{.node = node, .seq = static_cast<uint64_t>(step + 1), .task = task,
                              .kind = TaskEventKind::kStarted};
            proposer_.Propose(state::TaskEventCmd{started}, [](const auto&) {});
            dispatcher_->TaskSettled(task);
            break;
          }
          break;
        }
        case 6:
          peer_of[node] = "peer-" + node + "-" + std::to_string(step);
          workers_.Connect(node, peer_of[node], now, now);
          dispatcher_->NodeConnected(node);
          break;
        default:
          now += static_cast<int64_t>(rng() % 3000);
          dispatcher_->Tick(now);
          break;
      }
      refresh();
      ASSERT_LE(outstanding(node).size(), kWindow) << node << " after step " << step;
    }
    // The nodes answer everything; time passes until nothing new is sent.
    for (int round = 0; round < 100; ++round) {
      refresh();
      const size_t before = outbox_.sent.size();
      for (const char* node : {"n1", "n2"}) {
        for (const auto& [task, request] : outstanding(node)) {
          answered.insert(request);
          Answer(node, request);
        }
      }
      dispatcher_->Tick(now += 1);
      if (outbox_.sent.size() == before && outstanding("n1").empty() && outstanding("n2").empty()) break;
    }
    refresh();
    EXPECT_EQ(dispatcher_->waiting(), 0u);
    for (const char* node : {"n1", "n2"}) {
      for (TaskId task : state_.FindNode(node)->tasks) {
        if (!state_.command_due(task)) continue;
        ASSERT_TRUE(latest.count(task)) << task.ToString() << " due and never sent";
        const Frame last = *std::find_if(frames.rbegin(), frames.rend(),
                                         [&](const Frame& frame) { return frame.request == latest[task]; });
        EXPECT_EQ(last.peer, peer_of[node]) << task.ToString();
        EXPECT_EQ(last.type, state_.command_due(task)->stop ? MessageType::kPreemptTask : MessageType::kBindTask);
        EXPECT_TRUE(answered.count(latest[task])) << task.ToString();
      }
    }
  }
}

}  // namespace
}  // namespace gpool::control
