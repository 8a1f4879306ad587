// A follower that fell far behind (paused like a SIGSTOP'd process while the
// others committed) takes its backlog a slice per Sync, so the coordinator's
// loop applies it over several turns and serves its peers in between: Sync
// returns after a slice and MsUntilDue says to come straight back.
#include <gtest/gtest.h>

#include <algorithm>

#include "control/replication/raft_log.h"
#include "control/replication/raft_log_harness.h"

namespace gpool::replication {
namespace {

using testing::RaftLogTest;
using testing::Replica;

TEST_F(RaftLogTest, AFollowerFarBehindTakesItsBacklogASliceAtATime) {
  Replica& leader = AwaitLeader();
  Replica* behind = nullptr;
  for (auto& r : replicas_) {
    if (r.id != leader.id) behind = &r;
  }
  behind->paused = true;
  constexpr int kBacklog = 6'000;  // above the 4,096 (16 slices) that come whole
  ProposeAll(leader, "b-", kBacklog);
  ASSERT_TRUE(RunUntil([&] { return leader.machine.commands.size() == kBacklog; }, 20'000));

  // Its loop turns again, driven here Sync by Sync.
  size_t largest = 0, slices = 0;
  ASSERT_TRUE(RunUntil(
      [&] {
        for (auto& frame : behind->transport->Drain()) behind->log->Receive(frame.bytes, frame.sender);
        behind->log->Tick();
        while (behind->log->HasUnsynced()) {
          auto committed = behind->log->Sync();
          EXPECT_TRUE(committed.ok()) << committed.status().ToString();
          if (!committed.ok()) return true;
          const size_t n = committed->entries.size();
          largest = std::max(largest, n);
          if (behind->log->MsUntilDue() == 0) {  // more waits: the loop comes straight back
            ++slices;
            EXPECT_LE(n, 256u) << "a Sync that leaves a backlog hands over one slice (its normal entries)";
          }
          behind->machine.Take(std::move(committed).value());
        }
        return behind->machine.commands.size() == kBacklog;
      },
      20'000));
  EXPECT_EQ(behind->machine.commands, leader.machine.commands);
  EXPECT_LE(largest, 4'096u) << "no Sync hands over more than 16 slices";
  EXPECT_GE(slices, size_t{(kBacklog - 4'096) / 256}) << "the backlog above 4,096 came 256 at a time";
}

}  // namespace
}  // namespace gpool::replication
