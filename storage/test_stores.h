// Test-only helpers: a self-deleting temp dir and "harnesses" that give typed
// tests a KvStore they can restart, so one test body runs against both the
// in-memory fake and a real LevelDB on disk.
//
// Restart() models a process restart: LevelDbHarness closes and reopens the
// database; MemoryHarness keeps the same MemoryStore, whose contents play the
// part of the disk. Not thread-safe; one per test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "storage/leveldb_store.h"
#include "storage/testing/memory_store.h"

namespace gpool::storage::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpool-storage-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class MemoryHarness {
 public:
  static constexpr const char* kName = "Memory";
  KvStore* store() { return &store_; }
  MemoryStore* memory() { return &store_; }
  void Restart() {}

 private:
  MemoryStore store_;
};

class LevelDbHarness {
 public:
  static constexpr const char* kName = "LevelDb";
  LevelDbHarness() { Restart(); }
  KvStore* store() { return store_.get(); }
  MemoryStore* memory() { return nullptr; }
  void Restart() {
    store_.reset();  // releases the LOCK before reopening
    auto opened = LevelDbStore::Open(LevelDbOptions{.path = dir_.Sub("db")});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
  }

 private:
  TempDir dir_;
  std::unique_ptr<LevelDbStore> store_;
};

using StoreHarnesses = ::testing::Types<MemoryHarness, LevelDbHarness>;

struct HarnessName {
  template <typename T>
  static std::string GetName(int) { return T::kName; }
};

}  // namespace gpool::storage::testing
