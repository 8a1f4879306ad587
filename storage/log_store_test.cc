// LogStore over both KvStores; a restart reopens the KvStore and the LogStore.
#include "storage/log_store.h"

#include <gtest/gtest.h>

#include "storage/log_codec.h"
#include "storage/test_stores.h"

namespace gpool::storage {
namespace {

// Entries [from, to] all in one term, each carrying its index as data.
std::vector<LogEntry> MakeRun(uint64_t from, uint64_t to, uint64_t term) {
  std::vector<LogEntry> out;
  for (uint64_t i = from; i <= to; ++i) out.push_back(LogEntry{i, term, "e" + std::to_string(i)});
  return out;
}

template <typename H>
class LogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    auto opened = LogStore::Open(harness_.store());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    log_ = std::move(opened).value();
  }
  void Restart() {
    log_.reset();
    harness_.Restart();
    Open();
  }
  LogStore& log() { return *log_; }
  KvStore& kv() { return *harness_.store(); }

  std::vector<LogEntry> All() {
    auto got = log_->Entries(log_->FirstIndex(), log_->LastIndex() + 1);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return got.ok() ? *got : std::vector<LogEntry>();
  }
  uint64_t TermOf(uint64_t index) {
    auto term = log_->Term(index);
    EXPECT_TRUE(term.ok()) << term.status().ToString();
    return term.ok() ? *term : ~uint64_t{0};
  }
  size_t StoredLogKeys() {
    size_t n = 0;
    EXPECT_TRUE(ScanPrefix(kv(), log_codec::kLogPrefix, [&](std::string_view, std::string_view) {
                  ++n;
                  return true;
                }).ok());
    return n;
  }
  void Plant(std::string_view key, std::string_view value) {
    WriteBatch batch;
    batch.Put(key, value);
    ASSERT_TRUE(kv().Write(batch, {}).ok());
  }

  H harness_;
  std::unique_ptr<LogStore> log_;
};
TYPED_TEST_SUITE(LogStoreTest, testing::StoreHarnesses, testing::HarnessName);

TYPED_TEST(LogStoreTest, EmptyLog) {
  EXPECT_EQ(this->log().FirstIndex(), 1u);
  EXPECT_EQ(this->log().LastIndex(), 0u);
  EXPECT_EQ(this->TermOf(0), 0u);
  EXPECT_EQ(this->log().hard_state(), HardState{});
  auto snap = this->log().LoadSnapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_FALSE(snap->has_value());
  EXPECT_TRUE(this->All().empty());
  EXPECT_EQ(this->log().Term(1).status().code(), StatusCode::kUnavailable);
}

TYPED_TEST(LogStoreTest, AppendThenRead) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 3, 1), true).ok());
  ASSERT_TRUE(this->log().Append(MakeRun(4, 5, 2), false).ok());
  EXPECT_EQ(this->log().FirstIndex(), 1u);
  EXPECT_EQ(this->log().LastIndex(), 5u);
  EXPECT_EQ(this->TermOf(3), 1u);
  EXPECT_EQ(this->TermOf(4), 2u);
  auto mid = this->log().Entries(2, 5);
  ASSERT_TRUE(mid.ok());
  std::vector<LogEntry> want = {{2, 1, "e2"}, {3, 1, "e3"}, {4, 2, "e4"}};
  EXPECT_EQ(*mid, want);
  EXPECT_TRUE(this->log().Entries(3, 3).value().empty());
}

TYPED_TEST(LogStoreTest, EmptyAppendIsANoOp) {
  ASSERT_TRUE(this->log().Append({}, true).ok());
  EXPECT_EQ(this->log().LastIndex(), 0u);
}

TYPED_TEST(LogStoreTest, AppendOverlappingTruncatesTheConflictingSuffix) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 5, 1), false).ok());
  // A new leader in term 2 overwrites from index 3 with a shorter log.
  ASSERT_TRUE(this->log().Append({LogEntry{3, 2, "new3"}}, false).ok());
  EXPECT_EQ(this->log().LastIndex(), 3u);
  std::vector<LogEntry> want = {{1, 1, "e1"}, {2, 1, "e2"}, {3, 2, "new3"}};
  EXPECT_EQ(this->All(), want);
  EXPECT_EQ(this->StoredLogKeys(), 3u);  // 4 and 5 are gone from disk, not just hidden
  EXPECT_EQ(this->log().Term(4).status().code(), StatusCode::kUnavailable);

  this->Restart();
  EXPECT_EQ(this->log().LastIndex(), 3u);
  EXPECT_EQ(this->All(), want);
}

TYPED_TEST(LogStoreTest, AppendingAnIdenticalPrefixKeepsTheLog) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 5, 1), false).ok());
  ASSERT_TRUE(this->log().Append(MakeRun(1, 5, 1), false).ok());
  EXPECT_EQ(this->All(), MakeRun(1, 5, 1));
}

TYPED_TEST(LogStoreTest, GapIsRejected) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 2, 1), false).ok());
  Status s = this->log().Append(MakeRun(4, 5, 1), false);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("gap"), std::string::npos) << s.ToString();
  EXPECT_EQ(this->log().LastIndex(), 2u);
  EXPECT_EQ(this->StoredLogKeys(), 2u);
}

TYPED_TEST(LogStoreTest, BadBatchesAreRejected) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 2, 2), false).ok());
  std::vector<LogEntry> not_contiguous = {{3, 2, ""}, {5, 2, ""}};
  EXPECT_EQ(this->log().Append(not_contiguous, false).code(), StatusCode::kInvalidArgument);
  std::vector<LogEntry> term_goes_down = {{3, 3, ""}, {4, 2, ""}};
  EXPECT_EQ(this->log().Append(term_goes_down, false).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(this->log().Append({LogEntry{3, 1, ""}}, false).code(),
            StatusCode::kInvalidArgument);  // below the term of entry 2
  EXPECT_EQ(this->log().Append({LogEntry{0, 2, ""}}, false).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(this->log().LastIndex(), 2u);
}

TYPED_TEST(LogStoreTest, EntriesRespectsMaxBytesButReturnsAtLeastOne) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 10, 1), false).ok());  // "eN": 2-3 bytes + 16
  auto one = this->log().Entries(1, 11, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  auto three = this->log().Entries(1, 11, 3 * 18);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->size(), 3u);
  auto all = this->log().Entries(1, 11, 1000);
  EXPECT_EQ(all->size(), 10u);
}

TYPED_TEST(LogStoreTest, EntriesBoundsAreChecked) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 5, 1), false).ok());
  EXPECT_EQ(this->log().Entries(3, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(this->log().Entries(1, 7).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(this->log().Entries(0, 2).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(LogStoreTest, CompactDropsOldEntriesButRemembersTheBoundaryTerm) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 3, 1), false).ok());
  ASSERT_TRUE(this->log().Append(MakeRun(4, 6, 2), false).ok());
  ASSERT_TRUE(this->log().Compact(4).ok());
  EXPECT_EQ(this->log().FirstIndex(), 5u);
  EXPECT_EQ(this->log().LastIndex(), 6u);
  EXPECT_EQ(this->TermOf(4), 2u);
  Status compacted = this->log().Term(3).status();
  EXPECT_EQ(compacted.code(), StatusCode::kNotFound);
  EXPECT_NE(compacted.message().find("compacted"), std::string::npos);
  EXPECT_EQ(this->log().Entries(4, 6).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->StoredLogKeys(), 6u) << "the covered entries wait for TrimCompacted";
  EXPECT_EQ(this->log().CompactedLeft(), 4u);

  EXPECT_TRUE(this->log().Compact(2).ok());  // already done: no-op
  EXPECT_EQ(this->log().FirstIndex(), 5u);
  EXPECT_EQ(this->log().Compact(7).code(), StatusCode::kInvalidArgument);

  this->Restart();
  EXPECT_EQ(this->log().FirstIndex(), 5u);
  EXPECT_EQ(this->log().LastIndex(), 6u);
  EXPECT_EQ(this->TermOf(4), 2u);
  EXPECT_EQ(this->All(), MakeRun(5, 6, 2));
  EXPECT_EQ(this->log().CompactedLeft(), 4u) << "found again at open";
  EXPECT_EQ(this->log().TrimCompacted(100).value(), 4u);
  EXPECT_EQ(this->StoredLogKeys(), 2u);
  EXPECT_EQ(this->All(), MakeRun(5, 6, 2));
}

TYPED_TEST(LogStoreTest, CompactEverythingThenAppend) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 3, 1), false).ok());
  ASSERT_TRUE(this->log().Compact(3).ok());
  EXPECT_EQ(this->log().FirstIndex(), 4u);
  EXPECT_EQ(this->log().LastIndex(), 3u);
  EXPECT_TRUE(this->All().empty());
  this->Restart();
  EXPECT_EQ(this->log().LastIndex(), 3u);
  // Entries at compacted indexes are skipped; the rest land.
  ASSERT_TRUE(this->log().Append(MakeRun(2, 5, 1), false).ok());
  EXPECT_EQ(this->All(), MakeRun(4, 5, 1));
}

TYPED_TEST(LogStoreTest, SnapshotWithinTheLogKeepsTheSuffix) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 10, 1), false).ok());
  ASSERT_TRUE(this->log().SaveSnapshot(SnapshotMeta{6, 1}, "state@6", true).ok());
  EXPECT_EQ(this->log().FirstIndex(), 7u);
  EXPECT_EQ(this->log().LastIndex(), 10u);
  EXPECT_EQ(this->TermOf(6), 1u);
  EXPECT_EQ(this->log().CompactedLeft(), 6u);
  EXPECT_EQ(this->log().TrimCompacted(100).value(), 6u);
  EXPECT_EQ(this->StoredLogKeys(), 4u);

  this->Restart();
  auto snap = this->log().LoadSnapshot();
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  ASSERT_TRUE(snap->has_value());
  EXPECT_EQ((*snap)->first, (SnapshotMeta{6, 1}));
  EXPECT_EQ((*snap)->second, "state@6");
  EXPECT_EQ(this->log().FirstIndex(), 7u);
  EXPECT_EQ(this->All(), MakeRun(7, 10, 1));
}

TYPED_TEST(LogStoreTest, SnapshotThatDisagreesWithTheLogDropsItAll) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 10, 1), false).ok());
  ASSERT_TRUE(this->log().SaveSnapshot(SnapshotMeta{6, 3}, "other", false).ok());
  EXPECT_EQ(this->log().FirstIndex(), 7u);
  EXPECT_EQ(this->log().LastIndex(), 6u);
  EXPECT_EQ(this->TermOf(6), 3u);
  EXPECT_EQ(this->StoredLogKeys(), 6u) << "the disagreeing suffix goes at once, the covered entries later";
  ASSERT_TRUE(this->log().Append(MakeRun(7, 8, 3), false).ok());
  this->Restart();
  EXPECT_EQ(this->All(), MakeRun(7, 8, 3));
  EXPECT_EQ(this->log().TrimCompacted(100).value(), 6u);
  EXPECT_EQ(this->StoredLogKeys(), 2u);
}

// Issue 49: a snapshot's covered entries are deleted in bounded runs on the
// coordinator's loop, and a restart in between finds the rest.
TYPED_TEST(LogStoreTest, CompactedEntriesGoInBoundedRunsAndARestartFindsTheRest) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 100, 1), false).ok());
  ASSERT_TRUE(this->log().SaveSnapshot(SnapshotMeta{80, 1}, "state@80", true).ok());
  EXPECT_EQ(this->log().CompactedLeft(), 80u);
  EXPECT_EQ(this->log().TrimCompacted(30).value(), 30u);
  EXPECT_EQ(this->StoredLogKeys(), 70u);
  this->Restart();
  EXPECT_EQ(this->log().FirstIndex(), 81u);
  EXPECT_EQ(this->log().LastIndex(), 100u);
  EXPECT_EQ(this->log().CompactedLeft(), 50u);
  EXPECT_EQ(this->All(), MakeRun(81, 100, 1));
  EXPECT_EQ(this->log().TrimCompacted(1000).value(), 50u);
  EXPECT_EQ(this->log().TrimCompacted(1000).value(), 0u);
  EXPECT_EQ(this->log().CompactedLeft(), 0u);
  EXPECT_EQ(this->StoredLogKeys(), 20u);
  this->Restart();
  EXPECT_EQ(this->All(), MakeRun(81, 100, 1));
}

// A follower that installs a snapshot far past its log never walks the
// indexes it never held.
TYPED_TEST(LogStoreTest, TrimmingSkipsIndexesTheLogNeverHeld) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 3, 1), false).ok());
  ASSERT_TRUE(this->log().SaveSnapshot(SnapshotMeta{1'000'000, 4}, "far", true).ok());
  int calls = 0;
  while (this->log().TrimCompacted(16).value() > 0) ASSERT_LE(++calls, 2);
  EXPECT_EQ(this->StoredLogKeys(), 0u);
  EXPECT_EQ(this->log().CompactedLeft(), 0u);
  ASSERT_TRUE(this->log().Append(MakeRun(1'000'001, 1'000'002, 4), false).ok());
  this->Restart();
  EXPECT_EQ(this->All(), MakeRun(1'000'001, 1'000'002, 4));
}

TYPED_TEST(LogStoreTest, SnapshotAheadOfTheLogReplacesIt) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 3, 1), false).ok());
  ASSERT_TRUE(this->log().SaveSnapshot(SnapshotMeta{50, 4}, "far", true).ok());
  EXPECT_EQ(this->log().FirstIndex(), 51u);
  EXPECT_EQ(this->log().LastIndex(), 50u);
  EXPECT_EQ(this->log().Append(MakeRun(52, 52, 4), false).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(this->log().Append(MakeRun(51, 52, 4), false).ok());
  EXPECT_EQ(this->log().LastIndex(), 52u);
}

TYPED_TEST(LogStoreTest, OlderSnapshotIsRefusedAndNewerReplacesOlder) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 10, 1), false).ok());
  ASSERT_TRUE(this->log().SaveSnapshot(SnapshotMeta{5, 1}, "s5", false).ok());
  EXPECT_EQ(this->log().SaveSnapshot(SnapshotMeta{4, 1}, "s4", false).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->log().SaveSnapshot(SnapshotMeta{0, 0}, "", false).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(this->log().SaveSnapshot(SnapshotMeta{8, 1}, "s8", false).ok());
  auto snap = this->log().LoadSnapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ((*snap)->first.index, 8u);
  EXPECT_EQ((*snap)->second, "s8");
  EXPECT_EQ(this->log().FirstIndex(), 9u);
}

TYPED_TEST(LogStoreTest, HardStatePersists) {
  ASSERT_TRUE(this->log().SaveHardState(HardState{3, 2, 0}, true).ok());
  EXPECT_EQ(this->log().hard_state(), (HardState{3, 2, 0}));
  this->Restart();
  EXPECT_EQ(this->log().hard_state(), (HardState{3, 2, 0}));
}

TYPED_TEST(LogStoreTest, SaveWritesEntriesAndHardStateTogether) {
  ASSERT_TRUE(this->log().Save(HardState{2, 1, 1}, MakeRun(1, 2, 2), true).ok());
  this->Restart();
  EXPECT_EQ(this->log().hard_state(), (HardState{2, 1, 1}));
  EXPECT_EQ(this->All(), MakeRun(1, 2, 2));
  // A rejected append must not save the hard state either.
  EXPECT_FALSE(this->log().Save(HardState{9, 9, 9}, MakeRun(9, 9, 2), true).ok());
  EXPECT_EQ(this->log().hard_state(), (HardState{2, 1, 1}));
}

TYPED_TEST(LogStoreTest, EverythingSurvivesRestartTogether) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 20, 1), true).ok());
  ASSERT_TRUE(this->log().Append(MakeRun(21, 25, 2), true).ok());
  ASSERT_TRUE(this->log().SaveSnapshot(SnapshotMeta{10, 1}, "snap", true).ok());
  ASSERT_TRUE(this->log().Compact(15).ok());
  ASSERT_TRUE(this->log().SaveHardState(HardState{2, 7, 18}, true).ok());
  this->Restart();
  EXPECT_EQ(this->log().FirstIndex(), 16u);
  EXPECT_EQ(this->log().LastIndex(), 25u);
  EXPECT_EQ(this->TermOf(15), 1u);
  EXPECT_EQ(this->TermOf(25), 2u);
  EXPECT_EQ(this->log().hard_state(), (HardState{2, 7, 18}));
  EXPECT_EQ(this->log().LoadSnapshot().value()->first, (SnapshotMeta{10, 1}));
}

TYPED_TEST(LogStoreTest, CorruptEntryIsMalformedNotACrash) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 3, 1), false).ok());
  this->Plant(log_codec::LogKey(2), "\x01short");
  EXPECT_EQ(this->log().Term(2).status().code(), StatusCode::kMalformed);
  EXPECT_EQ(this->log().Entries(1, 4).status().code(), StatusCode::kMalformed);
  EXPECT_TRUE(this->log().Entries(3, 4).ok());
}

TYPED_TEST(LogStoreTest, CorruptHardStateFailsOpen) {
  this->Plant(log_codec::kHardStateKey, "not a hard state");
  auto opened = LogStore::Open(this->harness_.store());
  EXPECT_EQ(opened.status().code(), StatusCode::kMalformed);
}

TYPED_TEST(LogStoreTest, CorruptSnapshotMetaIsMalformed) {
  this->Plant(log_codec::kSnapshotMetaKey, "\x02");
  EXPECT_EQ(this->log().LoadSnapshot().status().code(), StatusCode::kMalformed);
  this->Plant(log_codec::kTruncatedKey, "\x01\x02");
  EXPECT_EQ(LogStore::Open(this->harness_.store()).status().code(), StatusCode::kMalformed);
}

TYPED_TEST(LogStoreTest, LogNotStartingAfterTheCompactionPointFailsOpen) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 3, 1), false).ok());
  WriteBatch hole;
  hole.Delete(log_codec::LogKey(1));
  ASSERT_TRUE(this->kv().Write(hole, {}).ok());
  auto opened = LogStore::Open(this->harness_.store());
  EXPECT_EQ(opened.status().code(), StatusCode::kMalformed);
}

TYPED_TEST(LogStoreTest, MissingEntryInTheMiddleIsReported) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 3, 1), false).ok());
  WriteBatch hole;
  hole.Delete(log_codec::LogKey(2));
  ASSERT_TRUE(this->kv().Write(hole, {}).ok());
  EXPECT_EQ(this->log().Entries(1, 4).status().code(), StatusCode::kInternal);
  EXPECT_EQ(this->log().Term(2).status().code(), StatusCode::kInternal);
}

TYPED_TEST(LogStoreTest, OtherKeysInTheStoreAreIgnored) {
  this->Plant("raft0", "after the raft prefix");
  this->Plant("raft/log", "just before the log prefix");
  this->Plant("state/jobs/1", "x");
  ASSERT_TRUE(this->log().Append(MakeRun(1, 2, 1), false).ok());
  this->Restart();
  EXPECT_EQ(this->log().FirstIndex(), 1u);
  EXPECT_EQ(this->log().LastIndex(), 2u);
}

TEST(LogStoreOpenTest, NullKvIsInvalid) {
  EXPECT_EQ(LogStore::Open(nullptr).status().code(), StatusCode::kInvalidArgument);
}

// Fault injection on the fake: a failed write leaves both disk and cache as they were.
TEST(LogStoreFaultTest, FailedTruncatingAppendChangesNothing) {
  MemoryStore kv;
  auto log = LogStore::Open(&kv).value();
  ASSERT_TRUE(log->Append(MakeRun(1, 5, 1), false).ok());
  kv.FailNextWrites(1);
  Status s = log->Append({LogEntry{3, 2, "new"}}, true);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(log->LastIndex(), 5u);
  EXPECT_EQ(log->Entries(1, 6).value(), MakeRun(1, 5, 1));
}

TEST(LogStoreFaultTest, FailedSnapshotChangesNothing) {
  MemoryStore kv;
  auto log = LogStore::Open(&kv).value();
  ASSERT_TRUE(log->Append(MakeRun(1, 5, 1), false).ok());
  ASSERT_TRUE(log->SaveHardState(HardState{1, 1, 2}, false).ok());
  kv.FailNextWrites(3);
  EXPECT_EQ(log->SaveSnapshot(SnapshotMeta{3, 1}, "s", true).code(), StatusCode::kIoError);
  EXPECT_EQ(log->Compact(3).code(), StatusCode::kIoError);
  EXPECT_EQ(log->SaveHardState(HardState{2, 2, 2}, true).code(), StatusCode::kIoError);
  EXPECT_EQ(log->FirstIndex(), 1u);
  EXPECT_EQ(log->hard_state(), (HardState{1, 1, 2}));
  EXPECT_FALSE(log->LoadSnapshot().value().has_value());
  auto reopened = LogStore::Open(&kv).value();
  EXPECT_EQ(reopened->FirstIndex(), 1u);
  EXPECT_EQ(reopened->LastIndex(), 5u);
}

// The sync flag reaches the KvStore: a synced append survives a crash, an
// unsynced one after it does not.
TEST(LogStoreFaultTest, OnlySyncedWritesSurviveACrash) {
  MemoryStore kv;
  auto log = LogStore::Open(&kv).value();
  ASSERT_TRUE(log->Save(HardState{1, 1, 0}, MakeRun(1, 2, 1), /*sync=*/true).ok());
  ASSERT_TRUE(log->Append(MakeRun(3, 4, 1), /*sync=*/false).ok());
  ASSERT_TRUE(log->SaveHardState(HardState{1, 1, 4}, /*sync=*/false).ok());
  EXPECT_EQ(kv.synced_writes(), 1u);
  log.reset();
  kv.DropUnsyncedWrites();
  auto after = LogStore::Open(&kv).value();
  EXPECT_EQ(after->LastIndex(), 2u);
  EXPECT_EQ(after->hard_state(), (HardState{1, 1, 0}));
}

TYPED_TEST(LogStoreTest, TruncateAfterDropsTheTailDurably) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 5, 1), false).ok());
  ASSERT_TRUE(this->log().TruncateAfter(7).ok());  // past the end: nothing to do
  EXPECT_EQ(this->log().LastIndex(), 5u);
  ASSERT_TRUE(this->log().TruncateAfter(3).ok());
  EXPECT_EQ(this->log().LastIndex(), 3u);
  EXPECT_EQ(this->StoredLogKeys(), 3u);
  ASSERT_TRUE(this->log().Append({LogEntry{4, 2, "again"}}, true).ok());
  this->Restart();
  EXPECT_EQ(this->log().LastIndex(), 4u);
  EXPECT_EQ(this->TermOf(4), 2u);
}

TYPED_TEST(LogStoreTest, ReloadReadsWhatTheKvStoreHoldsNow) {
  ASSERT_TRUE(this->log().Append(MakeRun(1, 2, 1), true).ok());
  // Written behind the LogStore's back, as a LevelDB reopen can surface a
  // batch whose write had failed.
  ASSERT_TRUE(LogStore::Open(&this->kv()).value()->Append(MakeRun(3, 4, 1), true).ok());
  EXPECT_EQ(this->log().LastIndex(), 2u);
  ASSERT_TRUE(this->log().Reload().ok());
  EXPECT_EQ(this->log().LastIndex(), 4u);
}

}  // namespace
}  // namespace gpool::storage
