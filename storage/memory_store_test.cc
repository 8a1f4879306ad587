// MemoryStore's fault injection; its KvStore contract is in kv_store_test.cc.
#include "storage/testing/memory_store.h"

#include <gtest/gtest.h>

namespace gpool::storage {
namespace {

Status Put(MemoryStore& store, std::string_view key, std::string_view value, bool sync = false) {
  WriteBatch batch;
  batch.Put(key, value);
  return store.Write(batch, WriteOptions{.sync = sync});
}

std::optional<std::string> Get(MemoryStore& store, std::string_view key) {
  auto got = store.Get(key);
  EXPECT_TRUE(got.ok());
  return *got;
}

TEST(MemoryStoreTest, FailNextWritesFailsThatManyWritesAndAppliesNothing) {
  MemoryStore store;
  ASSERT_TRUE(Put(store, "a", "old").ok());
  store.FailNextWrites(2);

  WriteBatch batch;
  batch.Put("a", "new");
  batch.Put("b", "1");
  batch.Delete("a");
  for (int i = 0; i < 2; ++i) {
    Status s = store.Write(batch, WriteOptions{.sync = true});
    EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  }
  EXPECT_EQ(Get(store, "a"), "old");
  EXPECT_EQ(Get(store, "b"), std::nullopt);
  EXPECT_EQ(store.key_count(), 1u);
  EXPECT_EQ(store.synced_writes(), 0u);

  EXPECT_TRUE(store.Write(batch, {}).ok());  // the third write goes through
  EXPECT_EQ(Get(store, "b"), "1");
}

TEST(MemoryStoreTest, FailNextWritesWithZeroClearsPendingFailures) {
  MemoryStore store;
  store.FailNextWrites(5);
  store.FailNextWrites(0);
  EXPECT_TRUE(Put(store, "a", "1").ok());
}

TEST(MemoryStoreTest, DropUnsyncedWritesRevertsToLastSyncedWrite) {
  MemoryStore store;
  ASSERT_TRUE(Put(store, "a", "1").ok());
  ASSERT_TRUE(Put(store, "b", "1", /*sync=*/true).ok());  // makes "a" durable too
  ASSERT_TRUE(Put(store, "a", "2").ok());
  ASSERT_TRUE(Put(store, "c", "2").ok());
  WriteBatch del;
  del.Delete("b");
  ASSERT_TRUE(store.Write(del, {}).ok());

  store.DropUnsyncedWrites();
  EXPECT_EQ(Get(store, "a"), "1");
  EXPECT_EQ(Get(store, "b"), "1");
  EXPECT_EQ(Get(store, "c"), std::nullopt);
  EXPECT_EQ(store.synced_writes(), 1u);
}

TEST(MemoryStoreTest, DropUnsyncedWritesWithNoSyncEmptiesTheStore) {
  MemoryStore store;
  ASSERT_TRUE(Put(store, "a", "1").ok());
  store.DropUnsyncedWrites();
  EXPECT_EQ(store.key_count(), 0u);
}

TEST(MemoryStoreTest, LiveIteratorKeepsItsSnapshotAcrossCrash) {
  MemoryStore store;
  ASSERT_TRUE(Put(store, "a", "1").ok());
  auto it = store.NewIterator();
  store.DropUnsyncedWrites();
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "a");
  EXPECT_EQ(store.key_count(), 0u);
}

}  // namespace
}  // namespace gpool::storage
