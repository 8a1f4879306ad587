// RaftLog on a disk that refuses writes (docs/operations.md 6.4): a Ready it
// cannot persist is held, neither sent nor applied nor advanced past; the
// others elect a leader around it; once writes resume the held Ready is
// persisted first and the replica catches up with no entry lost or reordered.
#include <gtest/gtest.h>

#include "control/replication/raft_log_harness.h"

namespace gpool::replication::testing {
namespace {

TEST_F(RaftLogTest, ALeaderThatCannotPersistIsReplacedAndCatchesUpOnceWritesResume) {
  Replica& first = AwaitLeader();
  ProposeAll(first, "a-", 5);
  ASSERT_TRUE(RunUntil([&] { return AllApplied(5); }));

  first.kv->FailNextWrites(1'000'000);
  ProposeAll(first, "b-", 3);
  ASSERT_TRUE(RunUntil([&] { return !first.log->write_error().ok(); }));
  EXPECT_FALSE(first.log->HasUnsynced()) << "nothing to do until ResumeWrites";
  const size_t applied_when_full = first.machine.commands.size();

  // The others elect a leader and go on without it.
  Replica* second = nullptr;
  ASSERT_TRUE(RunUntil([&] {
    second = StableLeader();
    return second != nullptr && second->id != first.id;
  }));
  ProposeAll(*second, "c-", 5);
  ASSERT_TRUE(RunUntil([&] {
    for (auto& r : replicas_) {
      if (r.id != first.id && (r.machine.commands.empty() || r.machine.commands.back() != "c-4")) return false;
    }
    return true;
  }));
  EXPECT_FALSE(first.log->IsLeader()) << "it heard of the new leader and stepped down";
  EXPECT_EQ(first.machine.commands.size(), applied_when_full) << "nothing applied while it could not persist";

  // Space returns: the store is reloaded and the held Ready goes first.
  first.kv->FailNextWrites(0);
  ASSERT_TRUE(first.store->Reload().ok());
  ASSERT_TRUE(first.log->ResumeWrites().ok());
  ASSERT_TRUE(RunUntil([&] { return first.machine.commands == second->machine.commands; }));
  EXPECT_EQ(first.machine.commands.back(), "c-4");
  for (auto& r : replicas_) EXPECT_EQ(r.machine.commands, second->machine.commands) << "replica " << r.id;
}

}  // namespace
}  // namespace gpool::replication::testing
