// LevelDbStore: the durable KvStore, one LevelDB database in one data dir.
//
// LevelDB holds an advisory lock on <path>/LOCK for as long as the store is
// open, so two gpool processes can never share a data dir; the second Open
// fails with a message saying so instead of LevelDB's bare "lock ... LOCK".
// Every LevelDB failure becomes Status::IoError naming the path and carrying
// LevelDB's own message.
//
// A full disk (docs/operations.md, "A full disk"): LevelDB writes at open (a
// new MANIFEST, the old log flushed to a table), so on a full disk Open
// fails. With `read_only_fallback` set, Open then loads a copy of the data
// dir into memory (LevelDB's MemEnv) and opens that instead: reads work,
// every Write is refused with an IoError carrying the disk's error, nothing
// is written to the disk, and the data dir's LOCK is still held. Reopen()
// later moves back onto the disk. After a failed write the database must
// also be reopened before writing again: LevelDB refuses every write after a
// failed sync or compaction until then, and a log record cut short by ENOSPC
// must stay the last one in its file, or the records written after it could
// be dropped when the log is replayed.
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
class Env;
class FileLock;
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
  // When the disk refuses the writes LevelDB makes at open, serve a
  // read-only copy in memory instead of failing (see above). Default false.
  bool read_only_fallback = false;
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
  // True while this is the read-only copy in memory.
  bool read_only() const { return lock_ != nullptr; }
  // Why the disk could not be opened, while read_only().
  const Status& disk_error() const { return disk_error_; }
  // Closes the database and opens it on the disk again (see above). On
  // failure, and with read_only_fallback, the store is the read-only copy
  // afterwards; the disk's error is returned either way. Iterators must be
  // destroyed first.
  Status Reopen();
  // Bytes LevelDB holds in memory: its memtables (the one being written and
  // one being flushed, if any) and the block cache ("leveldb.approximate-
  // memory-usage"). A large value written recently (a state snapshot) stays
  // resident until the background flush of its memtable finishes.
  uint64_t ApproximateMemoryUsage() const;

 private:
  explicit LevelDbStore(const LevelDbOptions& options);
  // Opens db_ on the disk; on failure (with the fallback) on a copy in memory.
  Status OpenDb();
  Status OpenMemoryCopy();
  void Close();
  Status Closed() const;

  LevelDbOptions options_;
  std::string path_;
  // Declared before db_ so they are destroyed after it: the DB uses them.
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  std::unique_ptr<leveldb::Env> memory_env_;  // the read-only copy's files; null on disk
  leveldb::FileLock* lock_ = nullptr;         // the data dir's LOCK, held for the copy
  Status disk_error_;
  std::unique_ptr<leveldb::DB> db_;           // null only when both opens failed in Reopen
};

}  // namespace gpool::storage
