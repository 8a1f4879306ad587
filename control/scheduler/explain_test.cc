// A task that finds no node is explained from the search itself (FindNode
// counts each rejection as it checks). These properties hold that account to
// the one a separate pass of the check chain over every node would give, on
// random clusters of every node state, pool, label, taint and load.
#include <memory>

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

}  // namespace
}  // namespace gpool::scheduler
