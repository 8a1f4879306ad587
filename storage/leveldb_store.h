// LevelDbStore: the durable KvStore, one LevelDB database in one data dir.
//
// LevelDB holds an advisory lock on <path>/LOCK for as long as the store is
// open, so two gpool processes can never share a data dir; the second Open
// fails with a message saying so instead of LevelDB's bare "lock ... LOCK".
// Every LevelDB failure becomes Status::IoError naming the path and carrying
// LevelDB's own message.
//
// Ownership: Open returns the sole owner; destroying it closes the database
// and releases the lock. Iterators must be destroyed first.
//
// Thread-safety: safe for concurrent use (LevelDB serialises writers itself
// and readers never block). Iterators read an implicit snapshot taken when
// they were created.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "storage/kv_store.h"

namespace leveldb {
class Cache;
class DB;
class FilterPolicy;
}  // namespace leveldb

namespace gpool::storage {

struct LevelDbOptions {
  // Directory holding the database. Required; there is no default.
  std::string path;
  // Create the database (and the last path component) if it does not exist.
  // Default true; set false where a missing data dir means misconfiguration.
  bool create_if_missing = true;
  // Bytes of uncompressed blocks cached in memory for reads. Default 8 MiB,
  // LevelDB's own default.
  size_t block_cache_bytes = 8 << 20;
  // Bytes buffered in the memtable before it is flushed to a sorted file.
  // Larger speeds bulk loads and lengthens recovery. Default 4 MiB, LevelDB's own default.
  size_t write_buffer_bytes = 4 << 20;
  // Bloom filter bits per key, so a Get for an absent key rarely reads a
  // block; 0 disables the filter. Default 10 (about 1% false positives).
  int bloom_bits_per_key = 10;
};

class LevelDbStore final : public KvStore {
 public:
  static Result<std::unique_ptr<LevelDbStore>> Open(const LevelDbOptions& options);

  ~LevelDbStore() override;
  LevelDbStore(const LevelDbStore&) = delete;
  LevelDbStore& operator=(const LevelDbStore&) = delete;

  Result<std::optional<std::string>> Get(std::string_view key) override;
  Status Write(const WriteBatch& batch, const WriteOptions& opts) override;
  std::unique_ptr<KvIterator> NewIterator() override;

  const std::string& path() const { return path_; }
  // Bytes LevelDB holds in memory: its memtables (the one being written and
  // one being flushed, if any) and the block cache ("leveldb.approximate-
  // memory-usage"). A large value written recently (a state snapshot) stays
  // resident until the background flush of its memtable finishes.
  uint64_t ApproximateMemoryUsage() const;

 private:
  LevelDbStore(std::string path, std::unique_ptr<leveldb::Cache> cache,
               std::unique_ptr<const leveldb::FilterPolicy> filter);

  std::string path_;
  // Declared before db_ so they are destroyed after it: the DB uses both.
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  std::unique_ptr<leveldb::DB> db_;
};

}  // namespace gpool::storage
