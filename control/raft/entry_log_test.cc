#include "control/raft/entry_log.h"

#include <gtest/gtest.h>

namespace gpool::raft {
namespace {

std::vector<LogEntry> Entries(uint64_t first, std::initializer_list<uint64_t> terms) {
  std::vector<LogEntry> out;
  for (uint64_t t : terms) out.push_back({first++, t, "e"});
  return out;
}

// The data of a configuration-change entry that adds `node`, giving `voters`.
// Built member by member: a braced temporary ConfChangeEntry (with its
// std::string context) trips GCC 12's -Wmaybe-uninitialized at -O2 and above.
std::string AddVoterData(uint64_t node, std::vector<uint64_t> voters) {
  ConfChangeEntry cc;
  cc.change.type = ConfChangeType::kAddVoter;
  cc.change.node_id = node;
  cc.result.voters = std::move(voters);
  return EncodeConfChange(cc);
}

RaftLog MustOpen(Snapshot s, std::vector<LogEntry> entries, uint64_t committed = 0, uint64_t applied = 0) {
  auto log = RaftLog::Open(std::move(s), std::move(entries), committed, applied);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return std::move(log).value();
}

TEST(RaftLogTest, OpenValidatesTheDurableState) {
  EXPECT_FALSE(RaftLog::Open({}, Entries(2, {1}), 0, 0).ok()) << "gap after the snapshot";
  EXPECT_FALSE(RaftLog::Open({}, Entries(1, {2, 1}), 0, 0).ok()) << "terms go down";
  EXPECT_FALSE(RaftLog::Open({}, Entries(1, {1}), 2, 0).ok()) << "commit past the end";
  EXPECT_FALSE(RaftLog::Open({}, Entries(1, {1}), 1, 2).ok()) << "applied past commit";
  RaftLog log = MustOpen(Snapshot{5, 2, {}, ""}, Entries(6, {2, 3}), 0, 0);
  EXPECT_EQ(log.committed(), 5u) << "a snapshot is committed";
  EXPECT_EQ(log.applied(), 5u);
  EXPECT_EQ(log.first_index(), 6u);
  EXPECT_EQ(log.last_index(), 7u);
  EXPECT_EQ(log.last_term(), 3u);
  EXPECT_EQ(log.Term(5), 2u);
  EXPECT_EQ(log.Term(4), std::nullopt);
  EXPECT_EQ(log.Term(8), std::nullopt);
  EXPECT_FALSE(log.HasUnstableEntries());
}

TEST(RaftLogTest, MaybeAppendChecksConsistencyAndOverwritesConflicts) {
  RaftLog log = MustOpen({}, Entries(1, {1, 1, 2, 2}), 1);
  // (index 2, term 2) is not in the log: reject.
  auto r = log.MaybeAppend(2, 2, 1, Entries(3, {3}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  // Matching prefix, conflict at 3: entries 3 and 4 are replaced.
  r = log.MaybeAppend(2, 1, 3, Entries(3, {3}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(**r, 3u);
  EXPECT_EQ(log.last_index(), 3u);
  EXPECT_EQ(log.Term(3), 3u);
  EXPECT_EQ(log.committed(), 3u);
  EXPECT_EQ(log.stable(), 2u) << "the overwritten entry must be persisted again";
  EXPECT_EQ(log.UnstableEntries(), Entries(3, {3}));
  // A stale duplicate shorter than the log does not truncate it.
  ASSERT_TRUE(log.MaybeAppend(3, 3, 3, Entries(4, {3, 3})).ok());
  r = log.MaybeAppend(3, 3, 3, Entries(4, {3}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(**r, 4u);
  EXPECT_EQ(log.last_index(), 5u);
}

TEST(RaftLogTest, OverwritingACommittedEntryIsAnInternalError) {
  RaftLog log = MustOpen({}, Entries(1, {1, 1}), 2);
  auto r = log.MaybeAppend(1, 1, 2, Entries(2, {2}));
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(log.Term(2), 1u);
}

TEST(RaftLogTest, FindConflictByTermSkipsWholeTerms) {
  RaftLog log = MustOpen({}, Entries(1, {1, 1, 2, 2, 2, 4, 4}));
  EXPECT_EQ(log.FindConflictByTerm(7, 3), (std::pair<uint64_t, uint64_t>{5, 2}));
  EXPECT_EQ(log.FindConflictByTerm(7, 1), (std::pair<uint64_t, uint64_t>{2, 1}));
  EXPECT_EQ(log.FindConflictByTerm(7, 4), (std::pair<uint64_t, uint64_t>{7, 4}));
  EXPECT_EQ(log.FindConflictByTerm(9, 4), (std::pair<uint64_t, uint64_t>{7, 4}));
  EXPECT_EQ(log.FindConflictByTerm(7, 0), (std::pair<uint64_t, uint64_t>{0, 0}));
  RaftLog compacted = MustOpen(Snapshot{3, 3, {}, ""}, Entries(4, {5, 5}));
  EXPECT_EQ(compacted.FindConflictByTerm(5, 4), (std::pair<uint64_t, uint64_t>{3, 3}));
  EXPECT_EQ(compacted.FindConflictByTerm(5, 1), (std::pair<uint64_t, uint64_t>{2, 0}));
}

TEST(RaftLogTest, EntriesBatchByCountAndBytes) {
  std::vector<LogEntry> es;
  for (uint64_t i = 1; i <= 10; ++i) es.push_back({i, 1, std::string(84, 'x')});  // 100 bytes each
  RaftLog log = MustOpen({}, es);
  EXPECT_EQ(log.Entries(1, 3, 1 << 20)->size(), 3u);
  EXPECT_EQ(log.Entries(1, 100, 250)->size(), 2u);
  EXPECT_EQ(log.Entries(1, 100, 10)->size(), 1u) << "always at least one";
  EXPECT_EQ(log.Entries(11, 100, 1000)->size(), 0u);
  ASSERT_TRUE(log.CommitTo(5).ok());
  log.AppliedTo(5);
  ASSERT_TRUE(log.Compact(Snapshot{4, 1, {}, ""}).ok());
  EXPECT_FALSE(log.Entries(4, 10, 1000).has_value());
  EXPECT_EQ(log.Entries(5, 10, 1 << 20)->front().index, 5u);
}

TEST(RaftLogTest, CommitOnlyForTheGivenTerm) {
  RaftLog log = MustOpen({}, Entries(1, {1, 2}));
  EXPECT_FALSE(log.MaybeCommit(1, 2));
  EXPECT_TRUE(log.MaybeCommit(2, 2));
  EXPECT_EQ(log.committed(), 2u);
  EXPECT_EQ(log.CommitTo(3).code(), StatusCode::kInternal);
}

TEST(RaftLogTest, PersistenceBoundaryAndCommittedEntries) {
  RaftLog log = MustOpen({}, Entries(1, {1}), 1, 1);
  ASSERT_TRUE(log.Append(Entries(2, {2, 2})).ok());
  EXPECT_EQ(log.UnstableEntries().size(), 2u);
  ASSERT_TRUE(log.CommitTo(3).ok());
  EXPECT_EQ(log.NextCommitted(), Entries(2, {2, 2}));
  log.StableTo(3, 1);  // wrong term: the log changed since; ignored
  EXPECT_TRUE(log.HasUnstableEntries());
  log.StableTo(3, 2);
  EXPECT_FALSE(log.HasUnstableEntries());
  log.AppliedTo(3);
  EXPECT_FALSE(log.HasNextCommitted());
}

TEST(RaftLogTest, RestoreReplacesTheLogWithAPendingSnapshot) {
  RaftLog log = MustOpen({}, Entries(1, {1, 1}), 1, 1);
  log.Restore(Snapshot{10, 3, ConfState{{1, 2}}, "data"});
  EXPECT_EQ(log.last_index(), 10u);
  EXPECT_EQ(log.committed(), 10u);
  ASSERT_TRUE(log.pending_snapshot().has_value());
  EXPECT_FALSE(log.HasNextCommitted()) << "the snapshot itself brings the state to 10";
  EXPECT_EQ(log.conf().Latest().voters, (std::vector<uint64_t>{1, 2}));
  log.StableSnapshotTo(10);
  log.AppliedTo(10);
  EXPECT_FALSE(log.pending_snapshot().has_value());
  EXPECT_EQ(log.applied(), 10u);
}

TEST(RaftLogTest, ConfigurationFollowsTheLatestConfEntryAndRevertsOnTruncation) {
  RaftLog log = MustOpen(Snapshot{0, 0, ConfState{{1, 2, 3}}, ""}, {});
  LogEntry cc{1, 1, AddVoterData(4, {1, 2, 3, 4})};
  ASSERT_TRUE(log.Append({cc}).ok());
  EXPECT_EQ(log.conf().Latest().voters, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(log.conf().LatestIndex(), 1u);
  // A leader of term 2 overwrites index 1: back to the base configuration.
  ASSERT_TRUE(log.MaybeAppend(0, 0, 0, {LogEntry{1, 2, ""}}).ok());
  EXPECT_EQ(log.conf().Latest().voters, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(log.conf().LatestIndex(), 0u);
}

TEST(RaftLogTest, CompactKeepsTheConfigurationInForce) {
  RaftLog log = MustOpen(Snapshot{0, 0, ConfState{{1}}, ""}, {});
  ASSERT_TRUE(log.Append({LogEntry{1, 1, AddVoterData(2, {1, 2})}, LogEntry{2, 1, EncodeNormal("x")}}).ok());
  ASSERT_TRUE(log.CommitTo(2).ok());
  log.StableTo(2, 1);
  log.AppliedTo(2);
  ASSERT_TRUE(log.Compact(Snapshot{2, 1, log.conf().At(2), ""}).ok());
  EXPECT_EQ(log.conf().Latest().voters, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(log.conf().At(2).voters, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(log.Compact(Snapshot{2, 1, {}, ""}).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gpool::raft
