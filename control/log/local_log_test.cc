#include "control/log/local_log.h"

#include <gtest/gtest.h>

#include "storage/memory_store.h"

namespace gpool::log {
namespace {

TEST(LocalLogTest, CommitsOnSyncAndBumpsTheTermOnEveryOpen) {
  storage::MemoryStore kv;
  auto store = storage::LogStore::Open(&kv);
  ASSERT_TRUE(store.ok());
  {
    auto log = LocalLog::Open(store->get());
    ASSERT_TRUE(log.ok());
    EXPECT_EQ((*log)->term(), 1u);
    EXPECT_EQ(*(*log)->Propose("a"), 1u);
    EXPECT_EQ(*(*log)->Propose("b"), 2u);
    EXPECT_EQ((*log)->commit_index(), 0u);
    auto committed = (*log)->Sync();
    ASSERT_TRUE(committed.ok());
    ASSERT_EQ(committed->entries.size(), 2u);
    EXPECT_EQ(committed->entries[1].data, "b");
    EXPECT_EQ((*log)->commit_index(), 2u);
  }
  auto reopened = LocalLog::Open(store->get());
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->term(), 2u);
  EXPECT_EQ(*(*reopened)->Propose("c"), 3u);
}

TEST(LocalLogTest, FailedSyncCommitsNothingAndReusesIndexes) {
  storage::MemoryStore kv;
  auto store = storage::LogStore::Open(&kv);
  ASSERT_TRUE(store.ok());
  auto log = LocalLog::Open(store->get());
  ASSERT_TRUE(log.ok());
  (void)(*log)->Propose("a");
  kv.FailNextWrites(1);
  EXPECT_FALSE((*log)->Sync().ok());
  EXPECT_EQ((*log)->commit_index(), 0u);
  EXPECT_EQ((*store)->LastIndex(), 0u);
  EXPECT_EQ(*(*log)->Propose("b"), 1u);
  EXPECT_TRUE((*log)->Sync().ok());
}

}  // namespace
}  // namespace gpool::log
