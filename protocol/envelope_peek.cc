#include "protocol/envelope_peek.h"

#include <cstddef>

namespace gpool {
namespace {

// A cursor over the frame's bytes; every read fails (nullopt) past the end.
class PeekCursor {
 public:
  explicit PeekCursor(std::string_view bytes) : bytes_(bytes) {}

  std::optional<uint64_t> BigEndian(size_t width) {
    if (bytes_.size() - at_ < width) return std::nullopt;
    uint64_t value = 0;
    for (size_t i = 0; i < width; ++i) value = (value << 8) | static_cast<uint8_t>(bytes_[at_ + i]);
    at_ += width;
    return value;
  }
  std::optional<uint8_t> Byte() {
    auto b = BigEndian(1);
    if (!b) return std::nullopt;
    return static_cast<uint8_t>(*b);
  }
  // A map's entry count.
  std::optional<uint64_t> MapSize() {
    auto tag = Byte();
    if (!tag) return std::nullopt;
    if ((*tag & 0xf0) == 0x80) return *tag & 0x0f;
    if (*tag == 0xde) return BigEndian(2);
    if (*tag == 0xdf) return BigEndian(4);
    return std::nullopt;
  }
  // A string (nullopt when the next item is none).
  std::optional<std::string_view> Str() {
    auto tag = Byte();
    if (!tag) return std::nullopt;
    std::optional<uint64_t> size;
    if ((*tag & 0xe0) == 0xa0) size = *tag & 0x1f;
    else if (*tag == 0xd9) size = BigEndian(1);
    else if (*tag == 0xda) size = BigEndian(2);
    else if (*tag == 0xdb) size = BigEndian(4);
    if (!size || bytes_.size() - at_ < *size) return std::nullopt;
    std::string_view out = bytes_.substr(at_, *size);
    at_ += *size;
    return out;
  }
  // An unsigned integer (nullopt when the next item is none).
  std::optional<uint64_t> Uint() {
    auto tag = Byte();
    if (!tag) return std::nullopt;
    if (*tag < 0x80) return *tag;
    if (*tag >= 0xcc && *tag <= 0xcf) return BigEndian(size_t{1} << (*tag - 0xcc));
    return std::nullopt;
  }
  // Skips a header value before "id": an unsigned integer or a string.
  bool SkipScalar() {
    const size_t start = at_;
    if (Uint()) return true;
    at_ = start;
    if (Str()) return true;
    at_ = start;
    return false;
  }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace

std::optional<uint64_t> PeekRequestId(std::string_view frame) {
  PeekCursor cursor(frame);
  auto entries = cursor.MapSize();
  if (!entries) return std::nullopt;
  for (uint64_t i = 0; i < *entries; ++i) {
    auto key = cursor.Str();
    if (!key) return std::nullopt;
    if (*key == "id") return cursor.Uint();
    if (!cursor.SkipScalar()) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace gpool
