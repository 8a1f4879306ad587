#include "storage/testing/memory_store.h"

namespace gpool::storage {

class MemoryStore::Iterator final : public KvIterator {
 public:
  Iterator(MemoryStore* store, std::shared_ptr<const Map> snapshot)
      : store_(store), snapshot_(std::move(snapshot)), it_(snapshot_->end()) {}
  ~Iterator() override { store_->ReleaseSnapshot(&snapshot_); }

  void Seek(std::string_view target) override { it_ = snapshot_->lower_bound(target); }
  void SeekToFirst() override { it_ = snapshot_->begin(); }
  void SeekToLast() override {
    it_ = snapshot_->empty() ? snapshot_->end() : std::prev(snapshot_->end());
  }
  bool Valid() const override { return it_ != snapshot_->end(); }
  void Next() override { ++it_; }
  void Prev() override {
    // Stepping back from the first key leaves the iterator invalid, as LevelDB does.
    it_ = it_ == snapshot_->begin() ? snapshot_->end() : std::prev(it_);
  }
  std::string_view key() const override { return it_->first; }
  std::string_view value() const override { return it_->second; }
  Status status() const override { return Status::Ok(); }

 private:
  MemoryStore* store_;
  std::shared_ptr<const Map> snapshot_;
  Map::const_iterator it_;
};

MemoryStore::MemoryStore() : data_(std::make_shared<Map>()) {}
MemoryStore::~MemoryStore() = default;

MemoryStore::Map& MemoryStore::MutableData() {
  // Shares are only taken and dropped under mu_, so a count of 1 here means
  // no iterator can still be reading the map.
  if (data_.use_count() > 1) data_ = std::make_shared<Map>(*data_);
  return *data_;
}

Result<std::optional<std::string>> MemoryStore::Get(std::string_view key) {
  std::lock_guard lock(mu_);
  auto it = data_->find(key);
  if (it == data_->end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

Status MemoryStore::Write(const WriteBatch& batch, const WriteOptions& opts) {
  std::lock_guard lock(mu_);
  if (fail_writes_ > 0) {
    --fail_writes_;
    return Status::IoError("memory store: injected write failure");
  }
  Map& data = MutableData();
  for (const WriteBatch::Op& op : batch.ops()) {
    auto it = data.find(op.key);
    if (!opts.sync) {
      undo_.emplace_back(op.key, it == data.end() ? std::nullopt
                                                  : std::optional<std::string>(it->second));
    }
    if (op.type == WriteBatch::OpType::kPut) {
      if (it == data.end()) {
        data.emplace(op.key, op.value);
      } else {
        it->second = op.value;
      }
    } else if (it != data.end()) {
      data.erase(it);
    }
  }
  if (opts.sync) {
    undo_.clear();
    ++synced_writes_;
  }
  return Status::Ok();
}

std::unique_ptr<KvIterator> MemoryStore::NewIterator() {
  std::lock_guard lock(mu_);
  return std::make_unique<Iterator>(this, data_);
}

void MemoryStore::ReleaseSnapshot(std::shared_ptr<const Map>* snapshot) {
  std::lock_guard lock(mu_);
  snapshot->reset();
}

void MemoryStore::FailNextWrites(int n) {
  std::lock_guard lock(mu_);
  fail_writes_ = n <= 0 ? 0 : fail_writes_ + n;
}

void MemoryStore::DropUnsyncedWrites() {
  std::lock_guard lock(mu_);
  Map& data = MutableData();
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
    if (it->second.has_value()) {
      data[it->first] = *it->second;
    } else {
      data.erase(it->first);
    }
  }
  undo_.clear();
}

size_t MemoryStore::key_count() const {
  std::lock_guard lock(mu_);
  return data_->size();
}

uint64_t MemoryStore::synced_writes() const {
  std::lock_guard lock(mu_);
  return synced_writes_;
}

}  // namespace gpool::storage
