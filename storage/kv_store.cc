#include "storage/kv_store.h"

namespace gpool::storage {

void WriteBatch::Put(std::string_view key, std::string_view value) {
  ops_.push_back(Op{OpType::kPut, std::string(key), std::string(value)});
  bytes_ += key.size() + value.size();
}

void WriteBatch::Delete(std::string_view key) {
  ops_.push_back(Op{OpType::kDelete, std::string(key), std::string()});
  bytes_ += key.size();
}

void WriteBatch::Clear() {
  ops_.clear();
  bytes_ = 0;
}

Status ScanPrefix(KvStore& store, std::string_view prefix,
                  const std::function<bool(std::string_view key, std::string_view value)>& visit) {
  std::unique_ptr<KvIterator> it = store.NewIterator();
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    std::string_view key = it->key();
    if (!key.starts_with(prefix)) break;
    if (!visit(key, it->value())) break;
  }
  return it->status();
}

}  // namespace gpool::storage
