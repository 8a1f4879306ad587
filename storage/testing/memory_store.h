// MemoryStore: an in-memory KvStore for tests (gpool_storage_fakes, built
// only with them), with the same ordering, atomicity and snapshot-iterator
// semantics as LevelDbStore, plus faults a real disk can produce on demand:
//   - FailNextWrites(n): the next n writes fail with IoError and change nothing.
//   - DropUnsyncedWrites(): forget every write since the last synced one, as a
//     machine crash would (modelled on LevelDB's fault_injection_test). A
//     synced write makes every earlier write durable too, as a log flush does.
//
// Ownership: the test owns it; it outlives the LogStore or state built on it,
// so "reopening" over the same MemoryStore models a process restart.
//
// Thread-safety: all methods are safe to call concurrently (one mutex).
// Iterators share the map with the store; a write copies the map only while
// some iterator still holds it. Iterators drop their share under the store's
// mutex, so the count a writer reads is ordered after the reader is done; an
// iterator must therefore not outlive its store (the KvStore rule anyway).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/kv_store.h"

namespace gpool::storage {

class MemoryStore final : public KvStore {
 public:
  MemoryStore();
  ~MemoryStore() override;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  Result<std::optional<std::string>> Get(std::string_view key) override;
  Status Write(const WriteBatch& batch, const WriteOptions& opts) override;
  std::unique_ptr<KvIterator> NewIterator() override;

  // The next n calls to Write return IoError and apply nothing. Adds to any
  // failures still pending; n <= 0 clears them.
  void FailNextWrites(int n);
  // Reverts to the state right after the last write with opts.sync (or to the
  // empty store if there was none).
  void DropUnsyncedWrites();

  size_t key_count() const;
  // Writes that succeeded with opts.sync set; lets tests check that callers ask
  // for durability where they must.
  uint64_t synced_writes() const;

 private:
  class Iterator;
  using Map = std::map<std::string, std::string, std::less<>>;
  // The value a key had before an unsynced write touched it (nullopt: absent).
  using Undo = std::pair<std::string, std::optional<std::string>>;

  // Requires mu_. Makes data_ safe to mutate: copies it if an iterator shares it.
  Map& MutableData();
  // Drops an iterator's share of the map under mu_ (see the thread rules above).
  void ReleaseSnapshot(std::shared_ptr<const Map>* snapshot);

  mutable std::mutex mu_;
  std::shared_ptr<Map> data_;     // guarded by mu_
  std::vector<Undo> undo_;        // guarded by mu_; oldest first
  int fail_writes_ = 0;           // guarded by mu_
  uint64_t synced_writes_ = 0;    // guarded by mu_
};

}  // namespace gpool::storage
