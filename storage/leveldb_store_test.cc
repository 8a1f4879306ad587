// LevelDbStore specifics: options, errors, the data-dir lock. The shared
// KvStore contract is in kv_store_test.cc.
#include "storage/leveldb_store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "storage/test_stores.h"

namespace gpool::storage {
namespace {

using testing::TempDir;

TEST(LevelDbStoreTest, EmptyPathIsInvalid) {
  auto opened = LevelDbStore::Open(LevelDbOptions{});
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
}

TEST(LevelDbStoreTest, MissingDirWithoutCreateIsIoErrorNamingThePath) {
  TempDir dir;
  std::string path = dir.Sub("absent");
  auto opened = LevelDbStore::Open(LevelDbOptions{.path = path, .create_if_missing = false});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kIoError);
  EXPECT_NE(opened.status().message().find(path), std::string::npos) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("does not exist"), std::string::npos)
      << opened.status().ToString();
}

TEST(LevelDbStoreTest, CustomOptionsOpenAndWork) {
  TempDir dir;
  auto opened = LevelDbStore::Open(LevelDbOptions{.path = dir.Sub("db"),
                                                  .block_cache_bytes = 1 << 20,
                                                  .write_buffer_bytes = 64 << 10,
                                                  .bloom_bits_per_key = 0});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  WriteBatch batch;
  // Enough data to push several memtables to disk with the small write buffer.
  for (int i = 0; i < 2000; ++i) batch.Put("k" + std::to_string(i), std::string(100, 'x'));
  ASSERT_TRUE((*opened)->Write(batch, WriteOptions{.sync = true}).ok());
  auto got = (*opened)->Get("k1999");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value_or(""), std::string(100, 'x'));
  EXPECT_EQ((*opened)->path(), dir.Sub("db"));
}

TEST(LevelDbStoreTest, NegativeBloomBitsIsInvalid) {
  TempDir dir;
  auto opened = LevelDbStore::Open(LevelDbOptions{.path = dir.Sub("db"), .bloom_bits_per_key = -1});
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
}

TEST(LevelDbStoreTest, SecondOpenInThisProcessGivesAClearError) {
  TempDir dir;
  auto first = LevelDbStore::Open(LevelDbOptions{.path = dir.Sub("db")});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = LevelDbStore::Open(LevelDbOptions{.path = dir.Sub("db")});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIoError);
  EXPECT_NE(second.status().message().find("data dir " + dir.Sub("db") + " is in use"),
            std::string::npos)
      << second.status().ToString();
}

TEST(LevelDbStoreTest, SecondOpenFromAnotherProcessGivesAClearError) {
  TempDir dir;
  std::string path = dir.Sub("db");
  auto first = LevelDbStore::Open(LevelDbOptions{.path = path});
  ASSERT_TRUE(first.ok()) << first.status().ToString();

  // The child reports through its exit code: 0 = the expected error, 1 = it
  // opened the store, 2 = some other error. _exit skips gtest's atexit hooks.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto second = LevelDbStore::Open(LevelDbOptions{.path = path});
    if (second.ok()) ::_exit(1);
    const std::string& m = second.status().message();
    bool clear = second.status().code() == StatusCode::kIoError &&
                 m.find("data dir " + path + " is in use by another process") != std::string::npos;
    ::_exit(clear ? 0 : 2);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0);
}

TEST(LevelDbStoreTest, CloseReleasesTheLock) {
  TempDir dir;
  {
    auto first = LevelDbStore::Open(LevelDbOptions{.path = dir.Sub("db")});
    ASSERT_TRUE(first.ok());
  }
  auto again = LevelDbStore::Open(LevelDbOptions{.path = dir.Sub("db")});
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

TEST(LevelDbStoreTest, TempDirIsRemoved) {
  std::string path;
  {
    TempDir dir;
    path = dir.path();
    auto store = LevelDbStore::Open(LevelDbOptions{.path = dir.Sub("db")});
    ASSERT_TRUE(store.ok());
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(LevelDbStoreTest, ReopenKeepsTheDataAndAllowsWritesAgain) {
  TempDir dir;
  auto opened = LevelDbStore::Open(LevelDbOptions{.path = dir.Sub("db"), .read_only_fallback = true});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  LevelDbStore& store = **opened;
  EXPECT_FALSE(store.read_only());
  WriteBatch batch;
  batch.Put("a", "1");
  ASSERT_TRUE(store.Write(batch, WriteOptions{.sync = true}).ok());
  ASSERT_TRUE(store.Reopen().ok());
  EXPECT_FALSE(store.read_only());
  EXPECT_EQ(store.Get("a").value().value_or(""), "1");
  batch.Put("b", "2");
  ASSERT_TRUE(store.Write(batch, WriteOptions{.sync = true}).ok());
  EXPECT_EQ(store.Get("b").value().value_or(""), "2");
}

}  // namespace
}  // namespace gpool::storage
