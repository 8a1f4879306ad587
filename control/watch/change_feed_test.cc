// The change feed (change_feed.h). The property: for random command streams
// (submissions, real scheduler plans with preemption, task events, cancels,
// cordons, nodes going NotReady, lost and re-registering), every job and
// node whose watched summary a command changes is among the candidates
// named before it was applied, so no change escapes a watcher. And the feed
// records a change once per distinct state, replays from a position, and
// says when it cannot.
#include "control/watch/change_feed.h"

#include <gtest/gtest.h>

#include <map>

#include "control/scheduler/scheduler.h"
#include "control/state/test_specs.h"
#include "control/watch/watch_frames.h"
#include "protocol/model/node_update.h"
#include "protocol/model/task_report.h"
#include "protocol/wire.h"
#include "topology/lcg.h"

namespace gpool::control {
namespace {

using state::testing::MakeNode;

template <typename T>
std::string Bytes(const T& summary) {
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  packer.Value(summary);
  return std::string(buffer.data(), buffer.size());
}

struct Prints {
  std::map<uint64_t, std::string> jobs;
  std::map<std::string, std::string> nodes;
};

Prints PrintsOf(const state::ClusterState& state) {
  Prints prints;
  for (const auto& [id, job] : state.jobs()) prints.jobs[id] = Bytes(WatchJobSummary(job));
  for (const auto& [name, node] : state.nodes()) prints.nodes[name] = Bytes(WatchNodeSummary(state, node));
  return prints;
}

JobSpec Job(topology::Lcg& rng, uint32_t n) {
  JobSpec spec;
  spec.name = "j" + std::to_string(n);
  spec.priority_class = rng.Percent(20) ? "high" : "low";
  TaskGroupSpec group;
  group.replicas = 1 + static_cast<uint32_t>(rng.Below(2));
  group.command = {"true"};
  group.resources = Resources{1 + static_cast<uint32_t>(rng.Below(2)), 1000, 1024};
  spec.tasks.push_back(group);
  return spec;
}

// One random command against the state as it is.
state::CommandBody RandomCommand(topology::Lcg& rng, const state::ClusterState& state, uint32_t& submitted) {
  const std::string node = "n" + std::to_string(rng.Below(3));
  std::vector<const state::TaskRecord*> held;
  for (const auto& [id, job] : state.jobs()) {
    for (const auto& task : job.tasks) {
      if (state::HoldsResources(task.state)) held.push_back(&task);
    }
  }
  switch (rng.Below(10)) {
    case 0:
    case 1:
      return state::SubmitJobCmd{Job(rng, submitted++), ""};
    case 2:
    case 3: {
      const auto view = state.BuildView(1'000'000);
      const scheduler::Plan plan = scheduler::Schedule(view, scheduler::SchedulerConfig{});
      state::ApplyPlanCmd cmd;
      cmd.binds = plan.binds;
      cmd.evictions = plan.evictions;
      cmd.pending = plan.pending;
      return cmd;
    }
    case 4:
    case 5: {
      if (held.empty()) return state::SubmitJobCmd{Job(rng, submitted++), ""};
      const state::TaskRecord* task = held[rng.Below(held.size())];
      TaskEvent event;
      event.node = task->node;
      event.task = task->id;
      const TaskEventKind kinds[] = {TaskEventKind::kStarted, TaskEventKind::kExited, TaskEventKind::kFailed};
      event.kind = task->state == TaskState::kBound ? TaskEventKind::kStarted : kinds[rng.Below(3)];
      event.exit_code = event.kind == TaskEventKind::kFailed ? 1 : 0;
      event.pid = 100;
      return state::TaskEventCmd{event};
    }
    case 6:
      return state::CancelJobCmd{1 + rng.Below(std::max<uint32_t>(1, submitted)), 0, ""};
    case 7: {
      UpdateNode update;
      update.node = node;
      update.op = rng.Percent(50) ? NodeUpdateOp::kCordon : NodeUpdateOp::kUncordon;
      return state::UpdateNodeCmd{update};
    }
    case 8:
      return rng.Percent(50) ? state::CommandBody(state::NodeStateCmd{node, rng.Percent(50) ? NodeState::kNotReady : NodeState::kReady})
                             : state::CommandBody(state::NodeLostCmd{node, 0});
    default: {
      // The worker comes back and reports what it runs (some of it).
      state::RegisterNodeCmd cmd{MakeNode(node, 4), {}, {}, ""};
      for (const state::TaskRecord* task : held) {
        if (task->node != node || !rng.Percent(60)) continue;
        TaskReport report;
        report.task = task->id;
        report.state = TaskState::kRunning;
        report.pid = 100;
        cmd.tasks.push_back(report);
      }
      return cmd;
    }
  }
}

TEST(ChangeFeedPropertyTest, EveryChangedJobAndNodeIsACandidate) {
  uint64_t changes = 0;
  for (int seed = 1; seed <= 60; ++seed) {
    topology::Lcg rng(static_cast<uint64_t>(seed) * 104729);
    state::ClusterState state;
    uint64_t index = 0;
    for (int n = 0; n < 3; ++n) {
      state.Apply(++index, state::Command{1000, state::RegisterNodeCmd{MakeNode("n" + std::to_string(n), 4), {}, {}, ""}});
    }
    uint32_t submitted = 0;
    for (int step = 0; step < 150; ++step) {
      state::Command command{static_cast<int64_t>(1000 * (index + 1)), RandomCommand(rng, state, submitted)};
      const Prints before = PrintsOf(state);
      FeedCandidates candidates = CandidatesOf(state, command);
      const state::ApplyResult result = state.Apply(++index, command);
      if (result.job_id != 0) candidates.jobs.push_back(result.job_id);
      const Prints after = PrintsOf(state);
      for (const auto& [id, print] : after.jobs) {
        auto was = before.jobs.find(id);
        if (was != before.jobs.end() && was->second == print) continue;
        ++changes;
        ASSERT_NE(std::find(candidates.jobs.begin(), candidates.jobs.end(), id), candidates.jobs.end())
            << "seed " << seed << " step " << step << ": " << state::CommandName(command.body) << " changed job "
            << id << " without naming it";
      }
      for (const auto& [name, print] : after.nodes) {
        auto was = before.nodes.find(name);
        if (was != before.nodes.end() && was->second == print) continue;
        ++changes;
        ASSERT_NE(std::find(candidates.nodes.begin(), candidates.nodes.end(), name), candidates.nodes.end())
            << "seed " << seed << " step " << step << ": " << state::CommandName(command.body) << " changed node "
            << name << " without naming it";
      }
    }
  }
  EXPECT_GT(changes, 5000u);  // the streams really changed things
}

class ChangeFeedTest : public ::testing::Test {
 protected:
  void SetUp() override { Apply(state::RegisterNodeCmd{MakeNode("n0", 2), {}, {}, ""}); }
  size_t Apply(state::CommandBody body) {
    state::Command command{static_cast<int64_t>(1000 * (index_ + 1)), std::move(body)};
    feed_.Note(state_, command);
    const state::ApplyResult result = state_.Apply(++index_, command);
    last_job_ = result.job_id != 0 ? result.job_id : last_job_;
    return feed_.Record(state_, index_, command, result);
  }
  state::ClusterState state_;
  ChangeFeed feed_{/*capacity=*/6};
  uint64_t index_ = 0;
  uint64_t last_job_ = 0;
};

TEST_F(ChangeFeedTest, RecordsEachStateOnceAndReplaysFromAPosition) {
  JobSpec spec;
  spec.name = "train";
  spec.tasks.push_back(TaskGroupSpec{.replicas = 1, .command = {"true"}, .resources = Resources{1, 1000, 1024}});
  EXPECT_EQ(Apply(state::SubmitJobCmd{spec, ""}), 1u);
  const uint64_t submitted_at = index_;
  const uint64_t job = last_job_;
  // A plan placing it: the job and the node change.
  EXPECT_EQ(Apply(state::ApplyPlanCmd{{state::PlanBind{JobId(job), 0, "n0", {0}, 1000, 1024}}, {}, {}}), 2u);
  // The same cordon twice: the second changes nothing, so records nothing.
  EXPECT_EQ(Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = NodeUpdateOp::kCordon}}), 1u);
  EXPECT_EQ(Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = NodeUpdateOp::kCordon}}), 0u);
  auto since = feed_.Since(submitted_at);
  ASSERT_TRUE(since.has_value());
  ASSERT_EQ(since->size(), 3u);
  EXPECT_EQ((*since)[0]->job, job);
  EXPECT_EQ((*since)[0]->job_summary().tasks_total, 1u);
  // Its watch item: the summary's bytes, encoded once and kept.
  const std::string& encoded = (*since)[0]->encoded();
  EXPECT_EQ(encoded, EncodeWatchItem((*since)[0]->job_summary()));
  EXPECT_EQ(&(*since)[0]->encoded(), &encoded);
  EXPECT_EQ((*since)[2]->encoded(), EncodeWatchItem((*since)[2]->node_summary()));
  EXPECT_EQ((*since)[2]->node, "n0");
  EXPECT_EQ(feed_.Since(feed_.position())->size(), 0u);
  EXPECT_FALSE(feed_.Since(feed_.position() + 1).has_value()) << "a position this replica has not reached";
  // Past its capacity the oldest fall off: replays from before them are refused.
  for (int i = 0; i < 3; ++i) {
    Apply(state::UpdateNodeCmd{UpdateNode{.node = "n0", .op = i % 2 ? NodeUpdateOp::kCordon : NodeUpdateOp::kUncordon}});
  }
  EXPECT_EQ(feed_.history().size(), 6u);
  EXPECT_FALSE(feed_.Since(submitted_at - 1).has_value()) << "the submission fell off";
  EXPECT_TRUE(feed_.Since(submitted_at).has_value()) << "a client that saw it misses nothing still kept";
  EXPECT_TRUE(feed_.Since(feed_.covered_after()).has_value());
  // A replaced state starts history again at its applied index.
  feed_.Reset(state_);
  EXPECT_FALSE(feed_.Since(index_ - 1).has_value());
  EXPECT_EQ(feed_.Since(index_)->size(), 0u);
}

// A plan names a node once per bind and its jobs in any order: each job and
// node it changes is recorded once, jobs by id (found however far apart
// they sit among the others), nodes in the order the plan first names them;
// a job the state does not hold is skipped.
TEST_F(ChangeFeedTest, APlanRecordsEachChangedJobAndNodeOnce) {
  Apply(state::RegisterNodeCmd{MakeNode("n1", 4), {}, {}, ""});
  std::vector<uint64_t> jobs;
  for (int i = 0; i < 30; ++i) {
    JobSpec spec;
    spec.name = "j" + std::to_string(i);
    spec.tasks.push_back(TaskGroupSpec{.replicas = 1, .command = {"true"}, .resources = Resources{1, 1000, 1024}});
    Apply(state::SubmitJobCmd{spec, ""});
    jobs.push_back(last_job_);
  }
  feed_ = ChangeFeed(/*capacity=*/100);  // room for the whole plan
  auto bind = [](uint64_t job, const std::string& node, uint32_t gpu) {
    return state::PlanBind{JobId(job), 0, node, {gpu}, 1000, 1024};
  };
  state::ApplyPlanCmd plan;
  plan.binds = {bind(jobs[27], "n1", 0), bind(jobs[1], "n1", 1), bind(jobs[2], "n0", 0),
                bind(jobs[14], "n1", 2), bind(9999, "n0", 1)};
  EXPECT_EQ(Apply(plan), 6u) << "four jobs and two nodes";
  const auto& history = feed_.history();
  ASSERT_EQ(history.size(), 6u);
  EXPECT_EQ(history[0].job, jobs[1]);
  EXPECT_EQ(history[1].job, jobs[2]);
  EXPECT_EQ(history[2].job, jobs[14]);
  EXPECT_EQ(history[3].job, jobs[27]);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(history[i].job_summary().tasks_total, 1u);
    EXPECT_NE(history[i].job_summary().state, "Pending") << i;
  }
  EXPECT_EQ(history[4].node, "n1");
  EXPECT_EQ(history[4].node_summary().gpus_used, 3u);
  EXPECT_EQ(history[5].node, "n0");
  EXPECT_EQ(history[5].node_summary().gpus_used, 1u);
  // The same plan again binds nothing new: nothing is recorded.
  EXPECT_EQ(Apply(plan), 0u);
}

}  // namespace
}  // namespace gpool::control
