#include "protocol/labels_digest.h"

#include <string_view>

namespace gpool {
namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t MixBytes(uint64_t hash, std::string_view bytes) {
  // The length first, so ("ab", "c") and ("a", "bc") differ.
  uint64_t size = bytes.size();
  for (int i = 0; i < 8; ++i, size >>= 8) hash = (hash ^ (size & 0xFF)) * kFnvPrime;
  for (const char c : bytes) hash = (hash ^ static_cast<unsigned char>(c)) * kFnvPrime;
  return hash;
}

}  // namespace

uint64_t LabelsDigest(const std::map<std::string, std::string>& labels) {
  uint64_t hash = kFnvOffset;
  for (const auto& [key, value] : labels) hash = MixBytes(MixBytes(hash, key), value);
  return hash == 0 ? 1 : hash;
}

}  // namespace gpool
