// Contract tests every KvStore must pass; run against MemoryStore and LevelDbStore.
#include "storage/kv_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "storage/test_stores.h"

namespace gpool::storage {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

template <typename H>
class KvStoreTest : public ::testing::Test {
 protected:
  KvStore& kv() { return *harness_.store(); }

  void Put(std::string_view key, std::string_view value, bool sync = false) {
    WriteBatch batch;
    batch.Put(key, value);
    ASSERT_TRUE(kv().Write(batch, WriteOptions{.sync = sync}).ok());
  }
  std::optional<std::string> Get(std::string_view key) {
    auto got = kv().Get(key);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return got.ok() ? *got : std::nullopt;
  }
  Pairs All() {
    Pairs out;
    auto it = kv().NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) out.emplace_back(it->key(), it->value());
    EXPECT_TRUE(it->status().ok());
    return out;
  }

  H harness_;
};
TYPED_TEST_SUITE(KvStoreTest, testing::StoreHarnesses, testing::HarnessName);

TYPED_TEST(KvStoreTest, GetOfMissingKeyIsNullopt) {
  EXPECT_EQ(this->Get("nope"), std::nullopt);
}

TYPED_TEST(KvStoreTest, PutGetDelete) {
  this->Put("k", "v1");
  EXPECT_EQ(this->Get("k"), "v1");
  this->Put("k", "v2");
  EXPECT_EQ(this->Get("k"), "v2");
  WriteBatch del;
  del.Delete("k");
  ASSERT_TRUE(this->kv().Write(del, {}).ok());
  EXPECT_EQ(this->Get("k"), std::nullopt);
}

TYPED_TEST(KvStoreTest, BinaryKeysAndValuesRoundTrip) {
  std::string key("a\0b\xff", 4);
  std::string value("\0\0\x01", 3);
  this->Put(key, value);
  EXPECT_EQ(this->Get(key), value);
  EXPECT_EQ(this->Get("a"), std::nullopt);
}

TYPED_TEST(KvStoreTest, BatchOpsApplyInOrder) {
  WriteBatch batch;
  batch.Put("a", "1");
  batch.Delete("a");   // deleted after put: gone
  batch.Delete("b");
  batch.Put("b", "2");  // put after delete: present
  batch.Put("c", "x");
  batch.Put("c", "y");  // last put wins
  EXPECT_EQ(batch.size(), 6u);
  ASSERT_TRUE(this->kv().Write(batch, {}).ok());
  EXPECT_EQ(this->All(), (Pairs{{"b", "2"}, {"c", "y"}}));
}

TYPED_TEST(KvStoreTest, EmptyBatchIsANoOp) {
  ASSERT_TRUE(this->kv().Write(WriteBatch(), WriteOptions{.sync = true}).ok());
  EXPECT_TRUE(this->All().empty());
}

TYPED_TEST(KvStoreTest, IteratesInUnsignedByteOrder) {
  // Signed-char comparison would put \xff first; memcmp order puts it last.
  for (const char* k : {"b", "\xff", "ab", "a", "", "a\x01"}) this->Put(k, "v");
  this->Put(std::string("a\0", 2), "v");
  std::vector<std::string> keys;
  for (auto& [k, v] : this->All()) keys.push_back(k);
  std::vector<std::string> want = {"", "a", std::string("a\0", 2), "a\x01", "ab", "b", "\xff"};
  EXPECT_EQ(keys, want);
}

TYPED_TEST(KvStoreTest, SeekAndReverseIteration) {
  for (const char* k : {"a", "c", "e"}) this->Put(k, k);
  auto it = this->kv().NewIterator();
  it->Seek("b");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "c");
  it->Seek("c");
  EXPECT_EQ(it->key(), "c");
  it->Prev();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "a");
  it->Prev();
  EXPECT_FALSE(it->Valid());
  it->Seek("f");
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "e");
  EXPECT_EQ(it->value(), "e");
  it->Next();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TYPED_TEST(KvStoreTest, EmptyStoreIteratorIsInvalid) {
  auto it = this->kv().NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_FALSE(it->Valid());
}

TYPED_TEST(KvStoreTest, IteratorIsASnapshot) {
  this->Put("a", "1");
  this->Put("b", "1");
  auto it = this->kv().NewIterator();
  WriteBatch later;
  later.Put("a", "2");
  later.Delete("b");
  later.Put("c", "2");
  ASSERT_TRUE(this->kv().Write(later, {}).ok());
  Pairs seen;
  for (it->SeekToFirst(); it->Valid(); it->Next()) seen.emplace_back(it->key(), it->value());
  EXPECT_EQ(seen, (Pairs{{"a", "1"}, {"b", "1"}}));
  EXPECT_EQ(this->All(), (Pairs{{"a", "2"}, {"c", "2"}}));
}

TYPED_TEST(KvStoreTest, ScanPrefixVisitsOnlyThePrefixInOrder) {
  for (const char* k : {"job/", "job/2", "job/1", "jobs", "joa", "node/1"}) this->Put(k, k);
  Pairs seen;
  Status s = ScanPrefix(this->kv(), "job/", [&](std::string_view k, std::string_view v) {
    seen.emplace_back(k, v);
    return true;
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(seen, (Pairs{{"job/", "job/"}, {"job/1", "job/1"}, {"job/2", "job/2"}}));
}

TYPED_TEST(KvStoreTest, ScanPrefixStopsWhenVisitorSaysSo) {
  for (const char* k : {"p1", "p2", "p3"}) this->Put(k, "v");
  int visits = 0;
  ASSERT_TRUE(ScanPrefix(this->kv(), "p", [&](std::string_view, std::string_view) {
                return ++visits < 2;
              }).ok());
  EXPECT_EQ(visits, 2);
}

TYPED_TEST(KvStoreTest, ScanPrefixWithEmptyPrefixVisitsAll) {
  for (const char* k : {"x", "y"}) this->Put(k, "v");
  int visits = 0;
  ASSERT_TRUE(ScanPrefix(this->kv(), "", [&](std::string_view, std::string_view) {
                ++visits;
                return true;
              }).ok());
  EXPECT_EQ(visits, 2);
}

TYPED_TEST(KvStoreTest, DataSurvivesRestart) {
  this->Put("synced", "1", /*sync=*/true);
  this->Put("unsynced", "2", /*sync=*/false);  // a clean close flushes it too
  this->harness_.Restart();
  EXPECT_EQ(this->Get("synced"), "1");
  EXPECT_EQ(this->Get("unsynced"), "2");
}

// A reader must never see half a batch: the writer keeps a == b in every batch.
TYPED_TEST(KvStoreTest, ConcurrentReadersNeverSeeHalfABatch) {
  this->Put("a", "0");
  this->Put("b", "0");
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        auto it = this->kv().NewIterator();
        it->Seek("a");
        std::string a(it->Valid() ? it->value() : "");
        it->Seek("b");
        std::string b(it->Valid() ? it->value() : "");
        if (a != b) torn.fetch_add(1);
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 300; ++i) {
        WriteBatch batch;
        std::string v = std::to_string(w) + ":" + std::to_string(i);
        batch.Put("a", v);
        batch.Put("w" + std::to_string(w) + "/" + std::to_string(i), "x");
        batch.Put("b", v);
        EXPECT_TRUE(this->kv().Write(batch, {}).ok());
      }
    });
  }
  for (auto& t : writers) t.join();
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(this->All().size(), 2u + 2 * 300);
}

TEST(WriteBatchTest, CountsOpsAndBytes) {
  WriteBatch batch;
  EXPECT_TRUE(batch.empty());
  batch.Put("key", "value");
  batch.Delete("gone");
  EXPECT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch.ApproximateBytes(), 3u + 5u + 4u);
  batch.Clear();
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_EQ(batch.ApproximateBytes(), 0u);
}

}  // namespace
}  // namespace gpool::storage
