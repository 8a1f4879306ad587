#include "storage/leveldb_store.h"

#include <cstdlib>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/write_batch.h>

namespace gpool::storage {
namespace {

leveldb::Slice ToSlice(std::string_view s) { return leveldb::Slice(s.data(), s.size()); }
std::string_view ToView(const leveldb::Slice& s) { return std::string_view(s.data(), s.size()); }

Status FromLevelDb(const leveldb::Status& s, const std::string& path, std::string_view what) {
  if (s.ok()) return Status::Ok();
  std::string message = "leveldb ";
  message += what;
  message += " in ";
  message += path;
  message += ": ";
  message += s.ToString();
  return Status::IoError(std::move(message));
}

// LevelDB reports a held lock as an IOError on "<path>/LOCK": "already held by
// process" when this process has it open, or the fcntl errno text (EAGAIN)
// when another process does. Both mean the same thing to an operator.
bool IsLockConflict(const leveldb::Status& s) {
  return s.IsIOError() && s.ToString().find("/LOCK: ") != std::string::npos;
}

class LevelDbIterator final : public KvIterator {
 public:
  explicit LevelDbIterator(leveldb::Iterator* it) : it_(it) {}

  void Seek(std::string_view target) override { it_->Seek(ToSlice(target)); }
  void SeekToFirst() override { it_->SeekToFirst(); }
  void SeekToLast() override { it_->SeekToLast(); }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  void Prev() override { it_->Prev(); }
  std::string_view key() const override { return ToView(it_->key()); }
  std::string_view value() const override { return ToView(it_->value()); }
  Status status() const override {
    leveldb::Status s = it_->status();
    if (s.ok()) return Status::Ok();
    return Status::IoError("leveldb iterator: " + s.ToString());
  }

 private:
  std::unique_ptr<leveldb::Iterator> it_;
};

}  // namespace

Result<std::unique_ptr<LevelDbStore>> LevelDbStore::Open(const LevelDbOptions& options) {
  if (options.path.empty()) return Status::InvalidArgument("leveldb store: path is empty");
  if (options.bloom_bits_per_key < 0) {
    return Status::InvalidArgument("leveldb store: bloom_bits_per_key must be >= 0");
  }
  std::unique_ptr<leveldb::Cache> cache(leveldb::NewLRUCache(options.block_cache_bytes));
  std::unique_ptr<const leveldb::FilterPolicy> filter;
  if (options.bloom_bits_per_key > 0) {
    filter.reset(leveldb::NewBloomFilterPolicy(options.bloom_bits_per_key));
  }

  leveldb::Options db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.block_cache = cache.get();
  db_options.write_buffer_size = options.write_buffer_bytes;
  db_options.filter_policy = filter.get();

  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(db_options, options.path, &raw);
  if (IsLockConflict(s)) {
    return Status::IoError("data dir " + options.path +
                           " is in use by another process (or already open in this one); "
                           "stop it or choose another data dir (" + s.ToString() + ")");
  }
  GPOOL_RETURN_IF_ERROR(FromLevelDb(s, options.path, "open"));

  std::unique_ptr<LevelDbStore> store(
      new LevelDbStore(options.path, std::move(cache), std::move(filter)));
  store->db_.reset(raw);
  return store;
}

LevelDbStore::LevelDbStore(std::string path, std::unique_ptr<leveldb::Cache> cache,
                           std::unique_ptr<const leveldb::FilterPolicy> filter)
    : path_(std::move(path)), cache_(std::move(cache)), filter_(std::move(filter)) {}

LevelDbStore::~LevelDbStore() = default;

Result<std::optional<std::string>> LevelDbStore::Get(std::string_view key) {
  std::string value;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  GPOOL_RETURN_IF_ERROR(FromLevelDb(s, path_, "get"));
  return std::optional<std::string>(std::move(value));
}

uint64_t LevelDbStore::ApproximateMemoryUsage() const {
  std::string value;
  if (!db_->GetProperty("leveldb.approximate-memory-usage", &value)) return 0;
  return std::strtoull(value.c_str(), nullptr, 10);
}

Status LevelDbStore::Write(const WriteBatch& batch, const WriteOptions& opts) {
  leveldb::WriteBatch native;
  for (const WriteBatch::Op& op : batch.ops()) {
    if (op.type == WriteBatch::OpType::kPut) {
      native.Put(op.key, op.value);
    } else {
      native.Delete(op.key);
    }
  }
  leveldb::WriteOptions native_opts;
  native_opts.sync = opts.sync;
  return FromLevelDb(db_->Write(native_opts, &native), path_, "write");
}

std::unique_ptr<KvIterator> LevelDbStore::NewIterator() {
  return std::make_unique<LevelDbIterator>(db_->NewIterator(leveldb::ReadOptions()));
}

}  // namespace gpool::storage
