// The scheduler's view of the state (build_view.cc): refreshed cycle after
// cycle, incrementally and in place (issue 49), it must always equal a view
// built from scratch, and an entry reused for another job or task keeps
// nothing of the one before.
#include "control/state/cluster_state.h"
#include "control/state/cluster_state_fixture.h"
#include "control/state/test_specs.h"
#include "protocol/model/node_update.h"
#include "protocol/model/task_report.h"

#include <gtest/gtest.h>

namespace gpool::state {
namespace {

using testing::MakeNode;

// Scheduler views refreshed incrementally must always equal a view built
// from scratch.
void ExpectSameView(const topology::ClusterView& a, const topology::ClusterView& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const auto& x = a.nodes[i];
    const auto& y = b.nodes[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.ready, y.ready) << x.name;
    EXPECT_EQ(x.cordoned, y.cordoned) << x.name;
    EXPECT_EQ(x.cpu_milli_free, y.cpu_milli_free) << x.name;
    EXPECT_EQ(x.memory_mib_free, y.memory_mib_free) << x.name;
    EXPECT_EQ(x.labels, y.labels) << x.name;
    EXPECT_EQ(x.FreeGpus(), y.FreeGpus()) << x.name;
    ASSERT_EQ(x.gpus.size(), y.gpus.size());
    for (size_t g = 0; g < x.gpus.size(); ++g) {
      EXPECT_EQ(x.gpus[g].allocated, y.gpus[g].allocated) << x.name;
      EXPECT_EQ(x.gpus[g].tenants, y.gpus[g].tenants) << x.name;
      EXPECT_EQ(x.gpus[g].uuid, y.gpus[g].uuid) << x.name;
    }
    ASSERT_EQ(x.numa.size(), y.numa.size());
    for (size_t n = 0; n < x.numa.size(); ++n) {
      EXPECT_EQ(x.numa[n].cpu_milli_free, y.numa[n].cpu_milli_free) << x.name;
      EXPECT_EQ(x.numa[n].memory_mib_free, y.numa[n].memory_mib_free) << x.name;
    }
  }
  ASSERT_EQ(a.running.size(), b.running.size());
  for (size_t i = 0; i < a.running.size(); ++i) {
    const auto& x = a.running[i];
    const auto& y = b.running[i];
    EXPECT_EQ(x.job, y.job);
    EXPECT_EQ(x.task_index, y.task_index);
    EXPECT_EQ(x.group, y.group);
    EXPECT_EQ(x.queue, y.queue);
    EXPECT_EQ(x.user, y.user);
    EXPECT_EQ(x.priority_class, y.priority_class);
    EXPECT_EQ(x.priority, y.priority);
    EXPECT_EQ(x.node, y.node);
    EXPECT_EQ(x.gpus, y.gpus);
    EXPECT_EQ(x.gpu_model, y.gpu_model);
    EXPECT_EQ(x.gpu_memory_mib, y.gpu_memory_mib);
    EXPECT_EQ(x.cpu_milli, y.cpu_milli);
    EXPECT_EQ(x.memory_mib, y.memory_mib);
    EXPECT_EQ(x.bind_order, y.bind_order);
    EXPECT_EQ(x.group_min, y.group_min);
    EXPECT_EQ(x.group_active, y.group_active);
    EXPECT_EQ(x.stopping, y.stopping);
    EXPECT_EQ(x.stopping_for, y.stopping_for);
    EXPECT_EQ(x.evicted_by, y.evicted_by);
    EXPECT_EQ(x.remaining_ms, y.remaining_ms);
  }
  ASSERT_EQ(a.pending.size(), b.pending.size());
  for (size_t i = 0; i < a.pending.size(); ++i) {
    const auto& x = a.pending[i];
    const auto& y = b.pending[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.priority, y.priority) << x.id.value();
    EXPECT_EQ(x.arrival, y.arrival) << x.id.value();
    EXPECT_EQ(x.queue, y.queue) << x.id.value();
    EXPECT_EQ(x.priority_class, y.priority_class) << x.id.value();
    EXPECT_EQ(x.pool, y.pool) << x.id.value();
    EXPECT_EQ(x.user, y.user) << x.id.value();
    EXPECT_EQ(x.node_selector, y.node_selector) << x.id.value();
    EXPECT_EQ(x.prefer_labels, y.prefer_labels) << x.id.value();
    EXPECT_EQ(x.tolerations, y.tolerations) << x.id.value();
    EXPECT_EQ(x.numa_policy, y.numa_policy) << x.id.value();
    EXPECT_EQ(x.network_mode, y.network_mode) << x.id.value();
    EXPECT_EQ(x.network_tier, y.network_tier) << x.id.value();
    EXPECT_EQ(x.gpu_uuid_allow, y.gpu_uuid_allow) << x.id.value();
    EXPECT_EQ(x.gpu_uuid_deny, y.gpu_uuid_deny) << x.id.value();
    ASSERT_EQ(x.groups.size(), y.groups.size()) << x.id.value();
    for (size_t g = 0; g < x.groups.size(); ++g) {
      EXPECT_EQ(x.groups[g].min, y.groups[g].min) << x.id.value();
      EXPECT_EQ(x.groups[g].active, y.groups[g].active) << x.id.value();
      EXPECT_EQ(x.groups[g].network_tier, y.groups[g].network_tier) << x.id.value();
    }
    ASSERT_EQ(x.tasks.size(), y.tasks.size()) << x.id.value();
    for (size_t t = 0; t < x.tasks.size(); ++t) EXPECT_EQ(x.tasks[t].index, y.tasks[t].index) << x.id.value();
    EXPECT_EQ(x.waiting_ms, y.waiting_ms) << x.id.value();
    EXPECT_EQ(x.max_runtime_ms, y.max_runtime_ms) << x.id.value();
    EXPECT_EQ(x.claimed_nodes, y.claimed_nodes) << x.id.value();
  }
  EXPECT_EQ(a.queues.size(), b.queues.size());
}

TEST_F(ClusterStateTest, RefreshedViewMatchesAFreshlyBuiltOne) {
  NodeSpec with_numa = MakeNode("n1", 4);
  with_numa.numa = {NumaInfo{0, 32'000, 128 * 1024, "0-31"}, NumaInfo{1, 32'000, 128 * 1024, "32-63"}};
  Do(RegisterNodeCmd{with_numa, {}});
  Do(RegisterNodeCmd{MakeNode("n2", 4), {}});
  topology::ClusterView view;
  ClusterState::ViewCursor cursor;
  state_.RefreshView(view, cursor, 0);
  ExpectSameView(view, state_.BuildView(0));

  const uint64_t a = Submit("a", 2, 1);
  Submit("b", 1, 4);
  PlanBind on_numa = Bind(a, 1, "n1", {1});
  on_numa.numa_node = 1;
  Do(ApplyPlanCmd{{Bind(a, 0, "n1", {0}), on_numa}, {}});  // n1's load changes
  state_.RefreshView(view, cursor, 0);
  ExpectSameView(view, state_.BuildView(0));
  EXPECT_EQ(view.nodes[0].FreeGpus(), 2u);
  EXPECT_EQ(view.nodes[0].numa[1].cpu_milli_free, 31'000u);

  Do(UpdateNodeCmd{UpdateNode{.node = "n2", .op = NodeUpdateOp::kCordon}});  // n2 changes
  Event(a, 0, "n1", "started");
  state_.RefreshView(view, cursor, 0);
  ExpectSameView(view, state_.BuildView(0));
  EXPECT_TRUE(view.nodes[1].cordoned);

  Do(RegisterNodeCmd{MakeNode("n0", 8), {}});  // a new node sorts first: every position moves
  Event(a, 0, "n1", "exited", 0);
  state_.RefreshView(view, cursor, 0);
  ExpectSameView(view, state_.BuildView(0));
  EXPECT_EQ(view.nodes[0].name, "n0");

  // A restored state is a new generation: nothing of the old view is trusted.
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(state_.Snapshot()).ok());
  restored.RefreshView(view, cursor, 0);
  ExpectSameView(view, restored.BuildView(0));
}

// The pending part of a refreshed view overwrites the last cycle's entries in
// place (issue 49): an entry that held a job with a selector, tolerations,
// preferences, device lists and a runtime limit, reused for a plain job,
// must keep none of them.
TEST_F(ClusterStateTest, RefreshedPendingEntriesKeepNothingOfTheirLastJob) {
  Do(RegisterNodeCmd{MakeNode("n1", 4), {}});
  topology::ClusterView view;
  ClusterState::ViewCursor cursor;
  JobSpec picky = MakeJob("picky", 2, 1);
  picky.node_selector = {{"zone", "x"}};
  picky.prefer_labels = {{"rack", "r1"}};
  picky.tolerations = {"maintenance"};
  picky.gpu_uuid_allow = {"GPU-1"};
  picky.gpu_uuid_deny = {"GPU-2"};
  picky.max_runtime_ms = 60'000;
  picky.priority = 7;
  const ApplyResult submitted = Do(SubmitJobCmd{picky, ""});
  ASSERT_TRUE(submitted.status.ok()) << submitted.status.ToString();
  const uint64_t first = submitted.job_id;
  const uint64_t plain = Submit("plain", 1, 1);
  state_.RefreshView(view, cursor, 5'000);
  ASSERT_EQ(view.pending.size(), 2u);
  EXPECT_EQ(view.pending[0].node_selector.size(), 1u);

  // The picky job leaves the pending set: the plain one takes its entry.
  Do(ApplyPlanCmd{{Bind(first, 0, "n1", {0}), Bind(first, 1, "n1", {1})}, {}});
  state_.RefreshView(view, cursor, 6'000);
  ExpectSameView(view, state_.BuildView(6'000));
  ASSERT_EQ(view.pending.size(), 1u);
  const topology::PendingJob& reused = view.pending[0];
  EXPECT_EQ(reused.id.value(), plain);
  EXPECT_TRUE(reused.node_selector.empty());
  EXPECT_TRUE(reused.prefer_labels.empty());
  EXPECT_TRUE(reused.tolerations.empty());
  EXPECT_TRUE(reused.gpu_uuid_allow.empty());
  EXPECT_TRUE(reused.gpu_uuid_deny.empty());
  EXPECT_EQ(reused.max_runtime_ms, 0);
  EXPECT_EQ(reused.priority, 0);
  EXPECT_EQ(reused.tasks.size(), 1u);

  // None pending: the view's pending part empties, and fills again after.
  Do(ApplyPlanCmd{{Bind(plain, 0, "n1", {2})}, {}});
  state_.RefreshView(view, cursor, 7'000);
  EXPECT_TRUE(view.pending.empty());
  Submit("later", 3, 0);
  state_.RefreshView(view, cursor, 8'000);
  ExpectSameView(view, state_.BuildView(8'000));
  ASSERT_EQ(view.pending.size(), 1u);
  EXPECT_EQ(view.pending[0].tasks.size(), 3u);
}

// The running part is rebuilt in place too (issue 49): an entry that held a
// task with a runtime limit, GPUs and a high class, reused for a CPU-only
// task of another queue, keeps none of it.
TEST_F(ClusterStateTest, RefreshedRunningEntriesKeepNothingOfTheirLastTask) {
  Do(RegisterNodeCmd{MakeNode("n1", 4), {}});
  topology::ClusterView view;
  ClusterState::ViewCursor cursor;
  JobSpec limited = MakeJob("limited", 1, 2);
  limited.max_runtime_ms = 60'000;
  limited.priority = 5;
  const ApplyResult submitted = Do(SubmitJobCmd{limited, ""});
  ASSERT_TRUE(submitted.status.ok()) << submitted.status.ToString();
  const uint64_t first = submitted.job_id;
  const uint64_t cpu_only = Submit("cpu", 1, 0);
  Do(ApplyPlanCmd{{Bind(first, 0, "n1", {0, 1}), Bind(cpu_only, 0, "n1", {})}, {}});
  state_.RefreshView(view, cursor, 5'000);
  ExpectSameView(view, state_.BuildView(5'000));
  ASSERT_EQ(view.running.size(), 2u);
  EXPECT_EQ(view.running[0].gpus, 2u);
  EXPECT_GE(view.running[0].remaining_ms, 0);

  // The limited job ends: the CPU-only task takes its entry.
  Event(first, 0, "n1", "started");
  Event(first, 0, "n1", "exited", 0);
  state_.RefreshView(view, cursor, 6'000);
  ExpectSameView(view, state_.BuildView(6'000));
  ASSERT_EQ(view.running.size(), 1u);
  const topology::RunningTask& reused = view.running[0];
  EXPECT_EQ(reused.job.value(), cpu_only);
  EXPECT_EQ(reused.gpus, 0u);
  EXPECT_EQ(reused.gpu_model, "");
  EXPECT_EQ(reused.gpu_memory_mib, 0u);
  EXPECT_EQ(reused.remaining_ms, -1);
  EXPECT_EQ(reused.priority, 0);
}

}  // namespace
}  // namespace gpool::state
