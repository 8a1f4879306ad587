// The CI slice of the deterministic simulation: a few hundred seeds of the
// same runs gpool-raft-sim does by the hundred thousand. A failing seed
// prints its replay command, the tail of its trace and every node's state.
#include <gtest/gtest.h>

#include "control/raft/sim/cluster.h"

namespace gpool::raft::sim {
namespace {

struct Slice {
  int nodes;
  uint64_t first_seed;
  int seeds;
  int steps;
  // The rogue has its own shard, so a failure says which kind of run.
  uint32_t rogue_per_mille = 0;
};

void RunSlice(const Slice& slice) {
  int failed = 0;
  SimStats total;
  for (int i = 0; i < slice.seeds; ++i) {
    SimCluster cluster({.seed = slice.first_seed + static_cast<uint64_t>(i), .nodes = slice.nodes,
                        .steps = slice.steps, .rogue_per_mille = slice.rogue_per_mille});
    Status s = cluster.Run();
    if (!s.ok()) {
      ++failed;
      ADD_FAILURE() << cluster.Report(s);
      if (failed >= 3) return;  // enough to debug with
    }
    total.leaders += cluster.stats().leaders;
    total.max_commit += cluster.stats().max_commit;
    total.snapshots_installed += cluster.stats().snapshots_installed;
    total.conf_changes += cluster.stats().conf_changes;
    total.crashes += cluster.stats().crashes;
    total.reads += cluster.stats().reads;
    total.forged += cluster.stats().forged;
    total.replayed += cluster.stats().replayed;
  }
  // The runs must actually exercise the protocol, not idle.
  EXPECT_GT(total.leaders, static_cast<uint64_t>(slice.seeds)) << "elections";
  EXPECT_GT(total.max_commit, static_cast<uint64_t>(slice.seeds) * 10) << "commits";
  EXPECT_GT(total.snapshots_installed, 0u);
  EXPECT_GT(total.conf_changes, 0u);
  EXPECT_GT(total.crashes, 0u);
  EXPECT_GT(total.reads, 0u);
  if (slice.rogue_per_mille > 0) {
    EXPECT_GT(total.forged, 0u) << "the rogue never spoke";
    EXPECT_GT(total.replayed, 0u) << "the rogue never replayed";
  }
}

// 300 seeds of 2000 steps in four shards, so ctest can run them side by
// side: about 6 s in Debug and 20 s of CPU under ASan in all.
TEST(SimTest, ThreeNodesSeeds1To100) { RunSlice({.nodes = 3, .first_seed = 1, .seeds = 100, .steps = 2000}); }
TEST(SimTest, ThreeNodesSeeds101To200) { RunSlice({.nodes = 3, .first_seed = 101, .seeds = 100, .steps = 2000}); }
TEST(SimTest, FiveNodesSeeds1001To1050) { RunSlice({.nodes = 5, .first_seed = 1001, .seeds = 50, .steps = 2000}); }
TEST(SimTest, FiveNodesSeeds1051To1100) { RunSlice({.nodes = 5, .first_seed = 1051, .seeds = 50, .steps = 2000}); }

// Every seed has the rogue peer: maximal and random terms, outsiders,
// replays. Safety holds throughout, and the healed cluster (rogue silent)
// still elects a leader and commits.
TEST(SimTest, ARoguePeerBreaksNoSafetyCheckAndALeaderIsElectedAfterSeeds3001To3060) {
  RunSlice({.nodes = 3, .first_seed = 3001, .seeds = 60, .steps = 2000, .rogue_per_mille = 1000});
}

// Seeds of the full run (3 nodes, 3000 steps, rogue in 1 of 4) that once
// failed or stormed, as gpool-raft-sim --start N --seeds 1 runs them. (Some
// runs changed since, with the rogue's pre-vote rejections kept to ordinary
// terms; they stay here as ordinary seeds that must pass, fast.)
//   130  a leader's pipelined appends, reordered without end after the heal,
//        each a reject and a resend of the window (95,000 messages in 2000
//        steps; now the healed network keeps each link in order);
//   417, 708  a node that missed configuration changes dropped its new
//        leader's heartbeats, or the candidate it had to vote for, as
//        outsiders: no leader after the heal;
//   914, 21458  a forged pre-vote rejection lifted a node's term past the
//        others' bound, cutting it off from them for good.
TEST(SimTest, SeedsThatOnceFailedOrStormedPass) {
  for (uint64_t seed : {130, 417, 708, 914, 21458}) {
    SimCluster cluster({.seed = seed, .nodes = 3, .steps = 3000, .rogue_per_mille = 250});
    Status s = cluster.Run();
    EXPECT_TRUE(s.ok()) << cluster.Report(s);
    EXPECT_LT(cluster.stats().delivered, 20'000u) << "seed " << seed << " stormed";
  }
}

TEST(SimTest, SameSeedSameRun) {
  SimCluster a({.seed = 7, .nodes = 3, .steps = 1500});
  SimCluster b({.seed = 7, .nodes = 3, .steps = 1500});
  ASSERT_TRUE(a.Run().ok());
  ASSERT_TRUE(b.Run().ok());
  EXPECT_EQ(a.stats().delivered, b.stats().delivered);
  EXPECT_EQ(a.stats().max_commit, b.stats().max_commit);
  EXPECT_EQ(a.stats().ticks, b.stats().ticks);
}

}  // namespace
}  // namespace gpool::raft::sim
