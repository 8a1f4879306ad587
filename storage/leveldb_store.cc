#include "storage/leveldb_store.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/helpers/memenv.h>
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
  std::unique_ptr<LevelDbStore> store(new LevelDbStore(options));
  GPOOL_RETURN_IF_ERROR(store->OpenDb());
  return store;
}

LevelDbStore::LevelDbStore(const LevelDbOptions& options)
    : options_(options), path_(options.path), cache_(leveldb::NewLRUCache(options.block_cache_bytes)) {
  if (options.bloom_bits_per_key > 0) filter_.reset(leveldb::NewBloomFilterPolicy(options.bloom_bits_per_key));
}

LevelDbStore::~LevelDbStore() { Close(); }

void LevelDbStore::Close() {
  db_.reset();
  memory_env_.reset();
  if (lock_ != nullptr) {
    (void)leveldb::Env::Default()->UnlockFile(lock_);
    lock_ = nullptr;
  }
}

Status LevelDbStore::OpenDb() {
  leveldb::Options db_options;
  db_options.create_if_missing = options_.create_if_missing;
  db_options.block_cache = cache_.get();
  db_options.write_buffer_size = options_.write_buffer_bytes;
  db_options.filter_policy = filter_.get();

  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(db_options, path_, &raw);
  if (IsLockConflict(s)) {
    return Status::IoError("data dir " + path_ +
                           " is in use by another process (or already open in this one); "
                           "stop it or choose another data dir (" + s.ToString() + ")");
  }
  if (s.ok()) {
    db_.reset(raw);
    disk_error_ = Status::Ok();
    return Status::Ok();
  }
  Status disk = FromLevelDb(s, path_, "open");
  // Only a database that exists can be copied; a missing or corrupt one is
  // not a full disk's doing.
  if (!options_.read_only_fallback || !s.IsIOError() ||
      !std::filesystem::exists(std::filesystem::path(path_) / "CURRENT")) {
    return disk;
  }
  Status copied = OpenMemoryCopy();
  if (!copied.ok()) return disk.WithContext("and its read-only copy failed too (" + copied.message() + ")");
  disk_error_ = disk;
  return Status::Ok();
}

Status LevelDbStore::OpenMemoryCopy() {
  leveldb::Env* disk = leveldb::Env::Default();
  // The copy must not be written behind another process's back, nor the
  // disk by another process while this one serves the copy.
  leveldb::FileLock* lock = nullptr;
  leveldb::Status locked = disk->LockFile(path_ + "/LOCK", &lock);
  if (!locked.ok()) return FromLevelDb(locked, path_, "lock");
  std::unique_ptr<leveldb::Env> env(leveldb::NewMemEnv(disk));
  std::error_code ec;
  (void)env->CreateDir(path_);
  for (const auto& file : std::filesystem::directory_iterator(path_, ec)) {
    const std::string name = file.path().filename().string();
    // LevelDB's own text log and lock are not part of the database.
    if (!file.is_regular_file() || name == "LOCK" || name.starts_with("LOG")) continue;
    std::ifstream in(file.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      (void)disk->UnlockFile(lock);
      return Status::IoError("reading " + file.path().string() + " into memory failed");
    }
    leveldb::WritableFile* raw = nullptr;
    leveldb::Status s = env->NewWritableFile(file.path().string(), &raw);
    std::unique_ptr<leveldb::WritableFile> out(raw);
    if (s.ok()) s = out->Append(bytes);
    if (s.ok()) s = out->Close();
    if (!s.ok()) {
      (void)disk->UnlockFile(lock);
      return FromLevelDb(s, path_, "copy into memory");
    }
  }
  if (ec) {
    (void)disk->UnlockFile(lock);
    return Status::IoError("listing " + path_ + ": " + ec.message());
  }
  leveldb::Options db_options;
  db_options.create_if_missing = false;
  db_options.env = env.get();
  db_options.block_cache = cache_.get();
  db_options.write_buffer_size = options_.write_buffer_bytes;
  db_options.filter_policy = filter_.get();
  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(db_options, path_, &raw);
  if (!s.ok()) {
    (void)disk->UnlockFile(lock);
    return FromLevelDb(s, path_, "open of the copy in memory");
  }
  memory_env_ = std::move(env);
  lock_ = lock;
  db_.reset(raw);
  return Status::Ok();
}

Status LevelDbStore::Reopen() {
  Close();
  GPOOL_RETURN_IF_ERROR(OpenDb());  // neither the disk nor a copy: every call fails until the next Reopen
  return read_only() ? disk_error_ : Status::Ok();
}

Status LevelDbStore::Closed() const {
  return Status::IoError("leveldb " + path_ + " is closed: reopening it failed");
}

Result<std::optional<std::string>> LevelDbStore::Get(std::string_view key) {
  if (!db_) return Closed();
  std::string value;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  GPOOL_RETURN_IF_ERROR(FromLevelDb(s, path_, "get"));
  return std::optional<std::string>(std::move(value));
}

uint64_t LevelDbStore::ApproximateMemoryUsage() const {
  std::string value;
  if (!db_ || !db_->GetProperty("leveldb.approximate-memory-usage", &value)) return 0;
  return std::strtoull(value.c_str(), nullptr, 10);
}

Status LevelDbStore::Write(const WriteBatch& batch, const WriteOptions& opts) {
  if (!db_) return Closed();
  if (read_only()) {
    return Status::IoError("leveldb write in " + path_ + " refused: serving a read-only copy in memory since " +
                           "the disk could not be opened (" + disk_error_.message() + ")");
  }
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
  if (!db_) return std::make_unique<LevelDbIterator>(leveldb::NewErrorIterator(leveldb::Status::IOError(path_, "closed")));
  return std::make_unique<LevelDbIterator>(db_->NewIterator(leveldb::ReadOptions()));
}

}  // namespace gpool::storage
