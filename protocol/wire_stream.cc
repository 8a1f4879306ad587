#include "protocol/wire_stream.h"

namespace gpool::wire {

// A named namespace: the unity build puts this file beside wire.cc.
namespace wire_stream_detail {

// Finds where a value ends without building it: msgpack::parse with a
// visitor that allocates nothing, whatever sizes the bytes declare.
class ValueEnd : public msgpack::null_visitor {
 public:
  void parse_error(size_t, size_t) { invalid = true; }
  void insufficient_bytes(size_t, size_t) { truncated = true; }
  bool invalid = false;
  bool truncated = false;
};

uint32_t BigEndian(const unsigned char* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace wire_stream_detail

ValueStream::ValueStream(std::string_view bytes, const DecodeLimits& limits) : bytes_(bytes), limits_(limits) {}

Status ValueStream::Truncated(std::string_view path) const {
  return Status::Malformed(std::string(path) + ": truncated msgpack: the bytes end at " + std::to_string(bytes_.size()) +
                           " in the middle of a value");
}

bool ValueStream::NextIsNil() const {
  return offset_ < bytes_.size() && static_cast<unsigned char>(bytes_[offset_]) == 0xc0;
}

Result<uint32_t> ValueStream::BeginMap(std::string_view path) {
  if (offset_ >= bytes_.size()) return Truncated(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data()) + offset_;
  const size_t left = bytes_.size() - offset_;
  size_t header = 1;
  uint32_t n = 0;
  if ((p[0] & 0xf0) == 0x80) {
    n = p[0] & 0x0f;
  } else if (p[0] == 0xde || p[0] == 0xdf) {
    header = p[0] == 0xde ? 3 : 5;
    if (left < header) return Truncated(path);
    n = wire_stream_detail::BigEndian(p + 1, header - 1);
  } else {
    return Status::Malformed(std::string(path) + ": expected a map");
  }
  if (n > limits_.max_container_elements) {
    return Status::ResourceExhausted("msgpack container or string exceeds a limit: " + std::string(path) +
                                     " is a map of " + std::to_string(n) + " entries");
  }
  offset_ += header;
  return n;
}

Result<uint32_t> ValueStream::BeginArray(std::string_view path) {
  if (offset_ >= bytes_.size()) return Truncated(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data()) + offset_;
  const size_t left = bytes_.size() - offset_;
  size_t header = 1;
  uint32_t n = 0;
  if ((p[0] & 0xf0) == 0x90) {
    n = p[0] & 0x0f;
  } else if (p[0] == 0xdc || p[0] == 0xdd) {
    header = p[0] == 0xdc ? 3 : 5;
    if (left < header) return Truncated(path);
    n = wire_stream_detail::BigEndian(p + 1, header - 1);
  } else {
    return Status::Malformed(std::string(path) + ": expected an array");
  }
  if (n > limits_.max_container_elements) {
    return Status::ResourceExhausted("msgpack container or string exceeds a limit: " + std::string(path) +
                                     " is an array of " + std::to_string(n) + " elements");
  }
  offset_ += header;
  return n;
}

Result<std::string_view> ValueStream::Key(std::string_view path) {
  if (offset_ >= bytes_.size()) return Truncated(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data()) + offset_;
  const size_t left = bytes_.size() - offset_;
  size_t header = 1;
  uint32_t n = 0;
  if ((p[0] & 0xe0) == 0xa0) {
    n = p[0] & 0x1f;
  } else if (p[0] >= 0xd9 && p[0] <= 0xdb) {
    header = 1 + (size_t{1} << (p[0] - 0xd9));  // str8, str16, str32
    if (left < header) return Truncated(path);
    n = wire_stream_detail::BigEndian(p + 1, header - 1);
  } else {
    return Status::Malformed(std::string(path) + ": map keys must be strings");
  }
  if (n > limits_.max_string_bytes) {
    return Status::ResourceExhausted("msgpack container or string exceeds a limit: a key of " + std::to_string(n) +
                                     " bytes in " + std::string(path));
  }
  if (left - header < n) return Truncated(path);
  offset_ += header + n;
  return bytes_.substr(offset_ - n, n);
}

Result<size_t> ValueStream::ValueLength(std::string_view path) const {
  if (offset_ >= bytes_.size()) return Truncated(path);
  wire_stream_detail::ValueEnd end;
  size_t off = 0;
  const bool whole = msgpack::parse(bytes_.data() + offset_, bytes_.size() - offset_, off, end);
  if (end.invalid) return Status::Malformed(std::string(path) + ": invalid msgpack: an unused type byte");
  if (!whole || end.truncated) return Truncated(path);
  return off;
}

Result<msgpack::object_handle> ValueStream::Next(std::string_view path) {
  GPOOL_ASSIGN_OR_RETURN(size_t length, ValueLength(path));
  auto handle = UnpackOne(bytes_.substr(offset_, length), limits_);
  if (!handle.ok()) return handle.status().WithContext(std::string(path));
  offset_ += length;
  return handle;
}

Status ValueStream::Skip(std::string_view path) {
  GPOOL_ASSIGN_OR_RETURN(size_t length, ValueLength(path));
  offset_ += length;
  return Status::Ok();
}

}  // namespace gpool::wire
