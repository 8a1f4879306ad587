// DeviceBits: one bit per device of a node (free, allowed for a task, ...),
// positions parallel to NodeView::gpus.
//
// Every work node of a session holds one (its whole-free devices) and the
// checks build masks for the nodes they look at. As std::vector<bool> each
// was a heap allocation, 100,000 of them made and freed per cycle at 100,000
// nodes. Nodes carry 8 or 16 devices (GPUs; Trainium, Ascend or Kunlun chips
// whose cores are counted inside a device), so up to 64 bits are held inline
// and cost no allocation; a node listing more devices spills all its bits
// to the heap, so any count works. Bits past size() are kept zero, so a
// count is a popcount. A value type; not thread-safe (like std::vector).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpool::scheduler {

class DeviceBits {
 public:
  // Devices held without a heap allocation.
  static constexpr size_t kInline = 64;

  DeviceBits() = default;
  explicit DeviceBits(size_t size, bool value = false) { Assign(size, value); }
  DeviceBits(const DeviceBits& other) { CopyFrom(other); }
  DeviceBits(DeviceBits&& other) noexcept : size_(other.size_), bits_(other.bits_) { other.Forget(); }
  DeviceBits& operator=(const DeviceBits& other) {
    if (this != &other) {
      Release();
      CopyFrom(other);
    }
    return *this;
  }
  DeviceBits& operator=(DeviceBits&& other) noexcept {
    if (this != &other) {
      Release();
      size_ = other.size_;
      bits_ = other.bits_;
      other.Forget();
    }
    return *this;
  }
  ~DeviceBits() { Release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool operator[](size_t i) const { return ((Words()[i / 64] >> (i % 64)) & 1u) != 0; }
  void Set(size_t i, bool value) {
    uint64_t& word = Words()[i / 64];
    const uint64_t bit = uint64_t{1} << (i % 64);
    word = value ? (word | bit) : (word & ~bit);
  }
  // `size` bits, all `value` (std::vector::assign).
  void Assign(size_t size, bool value) {
    Release();
    // Allocated before size_ says spilled: a throwing new leaves an empty mask.
    if (size > kInline) bits_.heap = new uint64_t[WordsFor(size)];
    size_ = static_cast<uint32_t>(size);
    uint64_t* words = Words();
    const size_t count = WordsFor(size_);
    for (size_t w = 0; w < count; ++w) words[w] = value ? ~uint64_t{0} : 0;
    ClearTail();
  }
  void PushBack(bool value) {
    if (size_ == kInline || (Spilled() && size_ % 64 == 0)) {
      // A new word past the inline one: move every word to a larger array.
      const size_t words = WordsFor(size_);
      auto* grown = new uint64_t[words + 1];
      std::memcpy(grown, Words(), words * sizeof(uint64_t));
      grown[words] = 0;
      if (Spilled()) delete[] bits_.heap;
      bits_.heap = grown;  // spilled from here on: size_ grows past kInline below
    }
    ++size_;
    Set(size_ - 1, value);
  }
  // How many bits are set.
  size_t Count() const {
    const uint64_t* words = Words();
    size_t count = 0;
    for (size_t w = 0; w < WordsFor(size_); ++w) count += static_cast<size_t>(std::popcount(words[w]));
    return count;
  }
  bool operator==(const DeviceBits& other) const {
    return size_ == other.size_ && std::equal(Words(), Words() + WordsFor(size_), other.Words());
  }

 private:
  static size_t WordsFor(size_t size) { return std::max<size_t>(1, (size + 63) / 64); }
  bool Spilled() const { return size_ > kInline; }
  uint64_t* Words() { return Spilled() ? bits_.heap : &bits_.word; }
  const uint64_t* Words() const { return Spilled() ? bits_.heap : &bits_.word; }
  // Bits past size_ in the last word stay zero (Count and == rely on it).
  void ClearTail() {
    if (size_ == 0) {
      bits_.word = 0;
    } else if (size_ % 64 != 0) {
      Words()[WordsFor(size_) - 1] &= (uint64_t{1} << (size_ % 64)) - 1;
    }
  }
  // Into an empty mask (size_ 0).
  void CopyFrom(const DeviceBits& other) {
    if (!other.Spilled()) {
      bits_.word = other.bits_.word;
    } else {
      bits_.heap = new uint64_t[WordsFor(other.size_)];  // before size_: a throwing new leaves an empty mask
      std::memcpy(bits_.heap, other.bits_.heap, WordsFor(other.size_) * sizeof(uint64_t));
    }
    size_ = other.size_;
  }
  void Release() {
    if (Spilled()) delete[] bits_.heap;
    Forget();
  }
  void Forget() {
    size_ = 0;
    bits_.word = 0;
  }

  uint32_t size_ = 0;
  // Devices 0-63 in `word` while size_ <= kInline; else every word on the heap.
  union Storage {
    uint64_t word;
    uint64_t* heap;
  } bits_{0};
};

}  // namespace gpool::scheduler
