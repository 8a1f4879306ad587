// A task that finds no node is explained from the search itself (FindNode
// counts each rejection as it checks). These properties hold that account to
// the one a separate pass of the check chain over every node would give, on
// random clusters of every node state, pool, label, taint and load.
#include <memory>
#include <optional>

#include <gtest/gtest.h>

#include "control/scheduler/scenario.h"
#include "control/scheduler/session.h"
#include "topology/lcg.h"

namespace gpool::scheduler {
namespace {

using testing::MakeNode;
using testing::JobBuilder;
using testing::MakeQueue;
using topology::ClusterView;
using topology::PendingReason;

constexpr const char* kPools[] = {"public", "pooled", "exclusive"};

ClusterView RandomCluster(topology::Lcg& rng) {
  ClusterView view;
  view.queues = {MakeQueue("q", "root")};
  const uint32_t nodes = static_cast<uint32_t>(rng.Below(24));
  for (uint32_t n = 0; n < nodes; ++n) {
    auto node = MakeNode("n" + std::to_string(n), static_cast<uint32_t>(rng.Below(9)), kPools[rng.Below(3)],
                         rng.Below(4) == 0 ? "H100" : "A100", 1000 * (1 + rng.Below(16)), 1024 * (1 + rng.Below(64)));
    node.ready = rng.Below(8) != 0;
    node.cordoned = rng.Below(8) == 0;
    for (auto& gpu : node.gpus) {
      gpu.allocated = rng.Below(3) == 0;
      gpu.healthy = rng.Below(10) != 0;
    }
    node.cpu_milli_free = rng.Below(node.cpu_milli_total + 1);
    node.memory_mib_free = rng.Below(node.memory_mib_total + 1);
    if (rng.Below(3) == 0) node.labels["zone"] = rng.Below(2) == 0 ? "a" : "b";
    if (rng.Below(6) == 0) node.taints["dedicated"] = "infer";
    view.nodes.push_back(std::move(node));
  }
  return view;
}

topology::PendingJob RandomJob(topology::Lcg& rng) {
  JobBuilder builder(1, "q", 1, static_cast<uint32_t>(rng.Below(10)));
  topology::PendingJob job = builder.job;
  job.pool = kPools[rng.Below(3)];
  job.tasks[0].resources.cpu_milli = 500 * rng.Below(40);
  job.tasks[0].resources.memory_mib = 512 * rng.Below(160);
  if (rng.Below(4) == 0) job.tasks[0].resources.gpu_model = "H100";
  if (rng.Below(3) == 0) job.node_selector["zone"] = "a";
  if (rng.Below(3) == 0) job.tolerations.push_back("dedicated");
  return job;
}

// The reasons a check of every node would give, as FindNode orders them:
// what no node is large enough for (those come from the session's own
// figures, so they are compared in the rendered text below), then the
// nodes counted under the first check each fails.
std::vector<PendingReason> CountEveryNode(const Session& session, std::vector<WorkNode>& nodes, const WorkJob& job) {
  RejectCounts counts{};
  for (const auto& node : nodes) {
    if (auto reject = session.Check(job, job.view->tasks[0], node, false)) ++counts[static_cast<size_t>(*reject)];
  }
  std::vector<PendingReason> out;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] != 0) out.push_back(PendingReason::Nodes(CodeOf(static_cast<Reject>(r)), counts[r]));
  }
  return out;
}

// A random cluster with one pending job, and a session over it (which
// points into the view, so both stay where they are).
struct RandomCase {
  explicit RandomCase(uint64_t seed) : rng(seed * 2 + 1), view(RandomCluster(rng)) {
    view.pending = {RandomJob(rng)};
    session = std::make_unique<Session>(view, SchedulerConfig{});
  }
  topology::Lcg rng;
  ClusterView view;
  std::unique_ptr<Session> session;
};

TEST(ExplainTest, TheSearchCountsEveryNodeUnderTheCheckItFailsFirst) {
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    RandomCase c(seed);
    const ClusterView& view = c.view;
    Session& session = *c.session;
    WorkJob& job = session.jobs().front();
    std::vector<PendingReason> reasons;
    auto node = session.FindNode(job, job.view->tasks[0], false, reasons);
    if (node) {
      EXPECT_FALSE(session.Check(job, job.view->tasks[0], session.nodes()[*node], false)) << "seed " << seed;
      EXPECT_TRUE(reasons.empty()) << "seed " << seed;
      continue;
    }
    if (view.nodes.empty()) {
      EXPECT_EQ(reasons, std::vector<PendingReason>{PendingReason::Of(topology::PendingCode::kNoNodes)});
      continue;
    }
    std::vector<PendingReason> node_reasons;
    for (const auto& reason : reasons) {
      if (!topology::NeverFits(reason)) node_reasons.push_back(reason);
    }
    EXPECT_EQ(topology::RenderPendingReasons(node_reasons),
              topology::RenderPendingReasons(CountEveryNode(session, session.nodes(), job)))
        << "seed " << seed;
  }
}

TEST(ExplainTest, ASecondSearchOfTheSameShapeGivesTheSameAccount) {
  for (uint64_t seed = 1; seed <= 500; ++seed) {
    RandomCase c(seed);
    Session& session = *c.session;
    WorkJob& job = session.jobs().front();
    std::vector<PendingReason> first, second;
    auto a = session.FindNode(job, job.view->tasks[0], false, first);
    auto b = session.FindNode(job, job.view->tasks[0], false, second);
    EXPECT_EQ(a, b) << "seed " << seed;
    EXPECT_EQ(first, second) << "seed " << seed;
  }
}

// Claims and reservations made during the cycle (and those the view brings)
// reject a node before its free GPUs are counted: a failed search must count
// such nodes under them even when it has fewer free GPUs than the task
// needs, where most nodes are counted in bulk.
TEST(ExplainTest, NodesClaimedOrReservedThisCycleAreCountedUnderThatCheck) {
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    topology::Lcg rng(seed * 2 + 1);
    ClusterView view = RandomCluster(rng);
    view.pending = {RandomJob(rng)};
    if (rng.Below(4) != 0) {
      // Mostly plain whole-GPU tasks that every node could hold: the
      // searches whose failure counts nodes with fewer free GPUs in bulk.
      auto& need = view.pending[0].tasks[0].resources;
      need.cpu_milli = 500 * rng.Below(3);
      need.memory_mib = 512 * rng.Below(3);
      need.gpu_model.clear();
      view.pending[0].node_selector.clear();
      if (rng.Below(2) == 0) {
        // One model everywhere (mostly healthy), pinned by the task alone,
        // among others, or another model.
        const bool healthy = rng.Below(2) == 0;
        for (auto& node : view.nodes) {
          for (auto& gpu : node.gpus) {
            gpu.model = "H100";
            gpu.healthy = gpu.healthy || healthy;
          }
        }
        constexpr const char* kPinned[] = {"H100", "A100|H100", "A100"};
        need.gpu_model = kPinned[rng.Below(3)];
      }
    }
    topology::PendingJob holder = JobBuilder(2, "q", 1, 1);
    for (const auto& node : view.nodes) {
      if (rng.Below(6) == 0) holder.claimed_nodes.push_back(node.name);
      if (rng.Below(4) == 0) {
        topology::RunningTask task;  // holds nothing: evicting it only claims the node
        task.job = JobId(100 + view.running.size());
        task.queue = "q";
        task.priority_class = topology::PriorityClass::kLow;
        task.node = node.name;
        view.running.push_back(task);
      }
    }
    view.pending.push_back(holder);
    Session session(view, SchedulerConfig{});
    WorkJob& job = session.jobs().front();
    for (size_t n = 0; n < session.nodes().size(); ++n) {
      if (rng.Below(5) == 0) session.Reserve(n, session.jobs().back());
    }
    for (size_t i = 0; i < session.running().size(); ++i) {
      if (rng.Below(2) == 0) session.Evict(i, session.jobs().back(), "test");
    }
    std::vector<PendingReason> reasons;
    if (session.FindNode(job, job.view->tasks[0], false, reasons) || view.nodes.empty()) continue;
    std::vector<PendingReason> node_reasons;
    for (const auto& reason : reasons) {
      if (!topology::NeverFits(reason)) node_reasons.push_back(reason);
    }
    EXPECT_EQ(topology::RenderPendingReasons(node_reasons),
              topology::RenderPendingReasons(CountEveryNode(session, session.nodes(), job)))
        << "seed " << seed;
  }
}

// A node a shape's search found short of CPU stays counted so for that shape
// within the generation, also once it has fewer free GPUs than the shape
// needs (where a failed search counts the other nodes in bulk under kGpus).
TEST(ExplainTest, ANodeRememberedShortStaysCountedShortWithFewerGpus) {
  ClusterView view;
  view.queues = {MakeQueue("q", "root")};
  view.nodes = {MakeNode("short", 8), MakeNode("roomy", 8)};
  for (uint32_t g = 0; g < 4; ++g) view.nodes[0].gpus[g].allocated = true;
  view.nodes[0].cpu_milli_free = 1000;
  view.pending = {JobBuilder(1, "q", 1, 2).Cpu(4000, 1024), JobBuilder(2, "q", 1, 3), JobBuilder(3, "q", 1, 8)};
  Session session(view, SchedulerConfig{});
  auto& jobs = session.jobs();
  std::vector<PendingReason> reasons;
  // The first search checks "short" (4 free GPUs, too little CPU) and takes "roomy".
  ASSERT_EQ(session.FindNode(jobs[0], view.pending[0].tasks[0], false, reasons), std::optional<size_t>(1));
  session.Place(jobs[1], view.pending[1].tasks[0], 0);  // "short": 1 GPU left
  session.Place(jobs[2], view.pending[2].tasks[0], 1);  // "roomy": none left
  reasons.clear();
  ASSERT_FALSE(session.FindNode(jobs[0], view.pending[0].tasks[0], false, reasons));
  std::vector<PendingReason> node_reasons;
  for (const auto& reason : reasons) {
    if (!topology::NeverFits(reason)) node_reasons.push_back(reason);
  }
  EXPECT_EQ(topology::RenderPendingReasons(node_reasons),
            topology::RenderPendingReasons({PendingReason::Nodes(CodeOf(Reject::kGpus), 1),
                                            PendingReason::Nodes(CodeOf(Reject::kCpu), 1)}));
}

}  // namespace
}  // namespace gpool::scheduler
