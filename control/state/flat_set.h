// FlatSet and FlatMap: sorted vectors with the small part of std::set's and
// std::map's interface the state records use.
//
// A node holds a handful of tasks (a few per GPU), so a sorted vector beats a
// tree there in every way that matters at 100,000 tasks: 16 to 24 bytes an
// element instead of a 64-byte tree node, one allocation per node instead of
// one per element, and lookups over contiguous memory. Inserting and erasing
// are linear in the size, which is a few elements here; do not use them for
// cluster-wide collections.
//
// Iterators and references are invalidated by insert and erase, as with
// std::vector. Thread-safety: none (plain values).
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace gpool::state {

template <typename T>
class FlatSet {
 public:
  using const_iterator = typename std::vector<T>::const_iterator;

  FlatSet() = default;
  template <typename It>
  FlatSet(It first, It last) : items_(first, last) {
    std::sort(items_.begin(), items_.end());
    items_.erase(std::unique(items_.begin(), items_.end()), items_.end());
  }

  // Returns whether it was added (false: already there).
  bool insert(const T& value) {
    auto it = std::lower_bound(items_.begin(), items_.end(), value);
    if (it != items_.end() && *it == value) return false;
    items_.insert(it, value);
    return true;
  }
  // Returns how many were removed (0 or 1).
  size_t erase(const T& value) {
    auto it = std::lower_bound(items_.begin(), items_.end(), value);
    if (it == items_.end() || !(*it == value)) return 0;
    items_.erase(it);
    if (items_.empty()) items_.shrink_to_fit();  // an idle node holds nothing
    return 1;
  }
  size_t count(const T& value) const { return std::binary_search(items_.begin(), items_.end(), value) ? 1 : 0; }
  void reserve(size_t n) { items_.reserve(n); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_ = {}; }
  bool operator==(const FlatSet&) const = default;

 private:
  std::vector<T> items_;  // sorted, unique
};

template <typename K, typename V>
class FlatMap {
 public:
  using value_type = std::pair<K, V>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  iterator find(const K& key) {
    auto it = LowerBound(key);
    return it != items_.end() && it->first == key ? it : items_.end();
  }
  const_iterator find(const K& key) const {
    auto it = std::lower_bound(items_.begin(), items_.end(), key,
                               [](const value_type& item, const K& k) { return item.first < k; });
    return it != items_.end() && it->first == key ? it : items_.end();
  }
  V& operator[](const K& key) {
    auto it = LowerBound(key);
    if (it == items_.end() || it->first != key) it = items_.insert(it, value_type{key, V{}});
    return it->second;
  }
  size_t count(const K& key) const { return find(key) != items_.end() ? 1 : 0; }
  void reserve(size_t n) { items_.reserve(n); }
  void erase(iterator it) {
    items_.erase(it);
    if (items_.empty()) items_.shrink_to_fit();
  }
  size_t erase(const K& key) {
    auto it = find(key);
    if (it == items_.end()) return 0;
    erase(it);
    return 1;
  }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_ = {}; }
  bool operator==(const FlatMap&) const = default;

 private:
  iterator LowerBound(const K& key) {
    return std::lower_bound(items_.begin(), items_.end(), key,
                            [](const value_type& item, const K& k) { return item.first < k; });
  }

  std::vector<value_type> items_;  // sorted by key, keys unique
};

}  // namespace gpool::state
