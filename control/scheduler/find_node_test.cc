// FindNode checks and scores twin nodes (WorkNode::twin_class) once per
// search, and the fragmentation strategies take a plain node's growth by
// its free shape (Session::FragByShape). These properties hold both to what
// checking and scoring every node itself gives: a search against a plain
// scan of the same buckets, on random clusters of a few node kinds (so
// twins abound) with odd, shared, NUMA and linked nodes among them, for
// every strategy, through a run of placements; and a node's score against
// a fresh session's, where nothing was remembered before it.
#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "control/scheduler/scenario.h"
#include "control/scheduler/session.h"
#include "topology/lcg.h"

namespace gpool::scheduler {
namespace {

using testing::JobBuilder;
using testing::MakeNode;
using testing::MakeQueue;
using topology::ClusterView;
using topology::PendingTask;

constexpr Strategy kFindNodeStrategies[] = {Strategy::kBinpack,    Strategy::kSpread,        Strategy::kFragmentation,
                                            Strategy::kFgd,        Strategy::kRandom,        Strategy::kDotProduct,
                                            Strategy::kGpuPacking, Strategy::kGpuClustering, Strategy::kBestFit};

// One of three node kinds, with what is free drawn from a few levels, so
// many nodes are twins; a few are made odd (taints, a claim), shared (a
// device with a tenant), NUMA-laid-out or NVLinked.
topology::NodeView TwinnyNode(topology::Lcg& rng, uint32_t n) {
  const uint32_t kind = static_cast<uint32_t>(rng.Below(3));
  auto node = MakeNode("n" + std::to_string(n), kind == 2 ? 4 : 8, rng.Below(8) == 0 ? "pooled" : "public",
                       kind == 1 ? "H100" : "A100", kind == 2 ? 32'000 : 64'000, 512 * 1024);
  const uint32_t held = static_cast<uint32_t>(rng.Below(node.gpus.size() + 1));
  for (uint32_t i = 0; i < held; ++i) {
    // Which devices are held varies between twins: only the count may matter.
    node.gpus[(i * 3 + rng.Below(2)) % node.gpus.size()].allocated = true;
  }
  node.cpu_milli_free = node.cpu_milli_total - 8'000 * rng.Below(4);
  node.memory_mib_free = node.memory_mib_total - 64 * 1024 * rng.Below(3);
  if (rng.Below(2) == 0) node.labels["zone"] = rng.Below(2) == 0 ? "a" : "b";
  if (rng.Below(12) == 0) node.taints["dedicated"] = "infer";
  if (rng.Below(12) == 0) {
    auto& gpu = node.gpus.back();
    if (!gpu.allocated) {
      gpu.tenants = 1;
      gpu.memory_used_mib = 20'000;
      gpu.compute_used_pct = 30;
    }
  }
  if (rng.Below(10) == 0) {
    node.numa = {topology::NumaSlot{0, node.cpu_milli_total / 2, node.cpu_milli_free / 2, node.memory_mib_total / 2,
                                    node.memory_mib_free / 2},
                 topology::NumaSlot{1, node.cpu_milli_total / 2, node.cpu_milli_free / 2, node.memory_mib_total / 2,
                                    node.memory_mib_free / 2}};
    for (size_t g = 0; g < node.gpus.size(); ++g) node.gpus[g].numa = g < node.gpus.size() / 2 ? 0 : 1;
  }
  if (rng.Below(6) == 0) {
    for (size_t g = 0; g + 1 < node.gpus.size(); g += 2) {
      node.gpus[g].nvlink_peers = {node.gpus[g + 1].index};
      node.gpus[g + 1].nvlink_peers = {node.gpus[g].index};
    }
  }
  return node;
}

topology::PendingJob TwinnyJob(topology::Lcg& rng, uint64_t id) {
  const uint32_t gpus = static_cast<uint32_t>(rng.Below(5));
  JobBuilder builder(id, "q", 1, gpus == 3 ? 8 : gpus);
  topology::PendingJob job = builder.job;
  job.pool = rng.Below(8) == 0 ? "pooled" : "public";
  job.tasks[0].resources.cpu_milli = 4'000 * (1 + rng.Below(4));
  job.tasks[0].resources.memory_mib = 16 * 1024 * (1 + rng.Below(4));
  if (gpus > 0 && rng.Below(5) == 0) job.tasks[0].resources.gpu_model = "H100";
  if (gpus == 1 && rng.Below(6) == 0) job.tasks[0].resources.gpu_memory_mib = 20'000;  // a share
  if (rng.Below(6) == 0) job.prefer_labels["zone"] = "a";
  if (rng.Below(10) == 0) job.node_selector["zone"] = "b";
  if (rng.Below(10) == 0) job.numa_policy = topology::NumaPolicy::kSingleNumaNode;
  if (rng.Below(10) == 0) job.tolerations.push_back("dedicated");
  return job;
}

// What FindNode decides, from Check and Score of every node in the order
// it searches: the first `candidates` nodes that pass, the best score,
// the lowest index among equals.
std::optional<size_t> ScanEveryNode(Session& session, const WorkJob& job, const PendingTask& task) {
  const auto& order = session.config().node_order;
  const uint32_t need = task.resources.Whole() ? task.resources.gpus : 0;
  const uint32_t wanted = std::max<uint32_t>(1, order.candidates);
  const bool fullest_first = order.strategy != Strategy::kSpread;
  const int top = static_cast<int>(session.largest_gpus());
  std::optional<size_t> best;
  Session::NodeScore best_score;
  uint32_t found = 0;
  for (int step = 0; step <= top && found < wanted; ++step) {
    const int b = fullest_first ? static_cast<int>(need) + step : top - step;
    if (b < static_cast<int>(need) || b > top) continue;
    for (uint32_t n : session.NodesWithFreeGpus(job.pool, static_cast<uint32_t>(b))) {
      const WorkNode& node = session.nodes()[n];
      if (session.Check(job, task, node, false)) continue;
      const Session::NodeScore score = session.Score(job, task, node);
      if (!best || score > best_score || (score == best_score && n < *best)) {
        best = n;
        best_score = score;
      }
      if (++found >= wanted) break;
    }
  }
  return best;
}

TEST(FindNodeTest, TwinsAreCheckedAndScoredAsEachNodeAlone) {
  uint64_t searches = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    topology::Lcg rng(seed * 7 + 3);
    ClusterView view;
    view.queues = {MakeQueue("q", "root")};
    const uint32_t nodes = 8 + static_cast<uint32_t>(rng.Below(40));
    for (uint32_t n = 0; n < nodes; ++n) view.nodes.push_back(TwinnyNode(rng, n));
    for (uint64_t id = 1; id <= 8; ++id) view.pending.push_back(TwinnyJob(rng, id));
    // A job holding a claim makes its node odd for every other job.
    if (rng.Below(3) == 0) view.pending[0].claimed_nodes = {"n" + std::to_string(rng.Below(nodes))};
    SchedulerConfig config;
    config.node_order.strategy = kFindNodeStrategies[seed % std::size(kFindNodeStrategies)];
    config.node_order.candidates = 1 + static_cast<uint32_t>(rng.Below(12));
    Session session(view, config);
    // A run of searches, each placed: later ones meet nodes changed by the
    // earlier ones (versions, fewer free devices, remembered growth).
    for (auto& job : session.jobs()) {
      const PendingTask& task = job.view->tasks[0];
      std::vector<topology::PendingReason> reasons;
      const auto found = session.FindNode(job, task, false, reasons);
      EXPECT_EQ(found, ScanEveryNode(session, job, task)) << "seed " << seed << " job " << job.view->id.value()
                                                          << " strategy " << StrategyName(config.node_order.strategy);
      ++searches;
      if (found) session.Commit(session.Place(job, task, *found));
    }
  }
  EXPECT_EQ(searches, 400u * 8u);
}

// A plain node's fragmentation growth comes from its free figures alone:
// taken from a twin scored before it, it equals what the node scored first
// in a fresh session gives, whichever of its devices are the free ones and
// however they are linked; nodes whose figures differ do not share it.
TEST(FindNodeTest, PlainTwinsGrowAlikeWhicheverDevicesAreFree) {
  for (Strategy strategy : {Strategy::kFragmentation, Strategy::kFgd}) {
    for (uint64_t seed = 1; seed <= 150; ++seed) {
      topology::Lcg rng(seed * 11 + 5);
      ClusterView view;
      view.queues = {MakeQueue("q", "root")};
      constexpr uint32_t kNodes = 6;
      for (uint32_t n = 0; n < kNodes; ++n) {
        auto node = MakeNode("n" + std::to_string(n), 8, "public", "A100", 64'000, 512 * 1024);
        // Few levels of each figure, so twins are common; the devices held
        // start anywhere and are spread by a stride that visits all eight.
        const uint32_t held = 2 * static_cast<uint32_t>(rng.Below(4));
        const uint32_t stride = rng.Below(2) == 0 ? 1 : 3;
        for (uint32_t i = 0, at = static_cast<uint32_t>(rng.Below(8)); i < held; at = (at + stride) % 8) {
          if (!node.gpus[at].allocated) {
            node.gpus[at].allocated = true;
            ++i;
          }
        }
        if (rng.Below(3) == 0) {
          for (uint32_t g = 0; g < 8; ++g) node.gpus[g].nvlink_peers = {(g + 1) % 8, (g + 7) % 8};
        }
        node.cpu_milli_free = 64'000 - 16'000 * rng.Below(3);
        node.memory_mib_free = 512 * 1024 - 128 * 1024 * rng.Below(2);
        view.nodes.push_back(std::move(node));
      }
      // Waiting work of several shapes: the fragmentation measure's workload.
      for (uint64_t id = 1; id <= 5; ++id) {
        topology::PendingJob job = JobBuilder(id, "q", 1, static_cast<uint32_t>(rng.Below(3) * 2)).job;
        job.tasks[0].resources.cpu_milli = 4'000 * (1 + rng.Below(3));
        job.tasks[0].resources.memory_mib = 32 * 1024 * (1 + rng.Below(2));
        view.pending.push_back(std::move(job));
      }
      const SchedulerConfig config = testing::WithStrategy(strategy);
      Session remembered(view, config);
      std::vector<std::vector<Session::NodeScore>> scores(remembered.jobs().size());
      for (size_t j = 0; j < remembered.jobs().size(); ++j) {
        const WorkJob& job = remembered.jobs()[j];
        for (const WorkNode& node : remembered.nodes()) {
          scores[j].push_back(remembered.Score(job, job.view->tasks[0], node));
        }
      }
      for (uint32_t n = 0; n < kNodes; ++n) {
        Session fresh(view, config);  // node n is the first it scores
        for (size_t j = 0; j < fresh.jobs().size(); ++j) {
          const WorkJob& job = fresh.jobs()[j];
          EXPECT_EQ(fresh.Score(job, job.view->tasks[0], fresh.nodes()[n]), scores[j][n])
              << "seed " << seed << " node " << n << " job " << j << " strategy " << StrategyName(strategy);
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpool::scheduler
