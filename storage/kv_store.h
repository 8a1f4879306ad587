// KvStore: the ordered key-value interface every durable piece of gpool sits on
// (the Raft log, the replicated state machine's tables, node-local state).
//
// Keys and values are arbitrary byte strings; keys are ordered by unsigned
// bytewise comparison (memcmp), which is what storage/key_encoding.h relies on
// to make composite keys sort like the tuples they encode.
//
// Two implementations: LevelDbStore (durable) and MemoryStore (a fake for
// tests, with fault injection: testing/memory_store.h). Code under test takes a KvStore*
// so it never knows which one it got.
//
// Ownership: whoever opens a store owns it (unique_ptr). Iterators and the
// KvStore* handed to users (LogStore, state machine) must not outlive it.
//
// Thread-safety: implementations must be safe for concurrent use from several
// threads without external locking: Get, Write and NewIterator may race
// freely. Each Write is atomic: readers see all of a batch or none of it. A
// KvIterator is a consistent snapshot taken when it was created, and is
// itself not thread-safe: one iterator belongs to one thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::storage {

// An ordered list of puts and deletes applied atomically by KvStore::Write.
// Operations apply in insertion order, so a later Put or Delete of the same key
// wins. Plain value; not thread-safe.
class WriteBatch {
 public:
  enum class OpType : uint8_t { kPut, kDelete };
  struct Op {
    OpType type;
    std::string key;
    std::string value;  // empty for kDelete
  };

  void Put(std::string_view key, std::string_view value);
  void Delete(std::string_view key);
  void Clear();

  // Number of operations, not distinct keys.
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }
  // Sum of key and value bytes; lets callers cap batch size without encoding it.
  size_t ApproximateBytes() const { return bytes_; }
  const std::vector<Op>& ops() const { return ops_; }

 private:
  std::vector<Op> ops_;
  size_t bytes_ = 0;
};

struct WriteOptions {
  // true: the write is on stable storage (fsync) before Write returns, so it
  // survives a machine crash, not just a process crash. Raft needs this for
  // its log and hard state before it answers a peer. Default false.
  bool sync = false;
};

// A cursor over a consistent snapshot of the store, in key order.
// key() and value() are valid only until the next move or destruction.
class KvIterator {
 public:
  virtual ~KvIterator() = default;

  // Positions at the first key >= target; invalid if there is none.
  virtual void Seek(std::string_view target) = 0;
  virtual void SeekToFirst() = 0;
  // Lets callers find the largest key under a prefix (the Raft log's last
  // index) without scanning: Seek(PrefixSuccessor(p)) then Prev().
  virtual void SeekToLast() = 0;
  virtual bool Valid() const = 0;
  // Require Valid().
  virtual void Next() = 0;
  virtual void Prev() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // An I/O or corruption error met while iterating. An iterator that went
  // invalid because of an error is not at the end; check this after a loop.
  virtual Status status() const = 0;
};

class KvStore {
 public:
  virtual ~KvStore() = default;

  // nullopt when the key is absent; a non-OK status only for I/O failure.
  virtual Result<std::optional<std::string>> Get(std::string_view key) = 0;
  // Applies the whole batch atomically. An empty batch is a no-op that still
  // honours opts.sync.
  virtual Status Write(const WriteBatch& batch, const WriteOptions& opts) = 0;
  // Starts unpositioned; call a Seek first.
  virtual std::unique_ptr<KvIterator> NewIterator() = 0;
};

// Calls visit(key, value) for each key that starts with prefix, in key order,
// until visit returns false. Returns the iterator's error, if any. The views
// passed to visit are valid only during that call.
Status ScanPrefix(KvStore& store, std::string_view prefix,
                  const std::function<bool(std::string_view key, std::string_view value)>& visit);

}  // namespace gpool::storage
