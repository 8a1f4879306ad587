#include "storage/key_encoding.h"

namespace gpool::storage {
namespace {

constexpr char kEscape = '\x00';
constexpr char kEscapedZero = '\xff';
constexpr char kTerminator = '\x01';

}  // namespace

void AppendU64(std::string* out, uint64_t value) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  out->append(buf, sizeof(buf));
}

Result<uint64_t> ReadU64(std::string_view* in) {
  if (in->size() < 8) {
    return Status::Malformed("u64 needs 8 bytes, have " + std::to_string(in->size()));
  }
  uint64_t value = 0;
  for (size_t i = 0; i < 8; ++i) {
    value = (value << 8) | static_cast<uint8_t>((*in)[i]);
  }
  in->remove_prefix(8);
  return value;
}

void AppendOrderedString(std::string* out, std::string_view value) {
  for (char c : value) {
    out->push_back(c);
    if (c == kEscape) out->push_back(kEscapedZero);
  }
  out->push_back(kEscape);
  out->push_back(kTerminator);
}

Result<std::string> ReadOrderedString(std::string_view* in) {
  std::string value;
  for (size_t i = 0; i < in->size(); ++i) {
    char c = (*in)[i];
    if (c != kEscape) {
      value.push_back(c);
      continue;
    }
    if (i + 1 == in->size()) return Status::Malformed("string ends inside an escape");
    char next = (*in)[i + 1];
    if (next == kTerminator) {
      in->remove_prefix(i + 2);
      return value;
    }
    if (next != kEscapedZero) return Status::Malformed("string has a bad escape byte");
    value.push_back(kEscape);
    ++i;
  }
  return Status::Malformed("string has no terminator");
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string out(prefix);
  while (!out.empty()) {
    auto last = static_cast<uint8_t>(out.back());
    if (last != 0xff) {
      out.back() = static_cast<char>(last + 1);
      return out;
    }
    out.pop_back();
  }
  return out;
}

Status KeyDecoder::ExpectPrefix(std::string_view prefix) {
  if (!rest_.starts_with(prefix)) return Error("expected prefix \"" + EscapeKey(prefix) + "\"");
  rest_.remove_prefix(prefix.size());
  return Status::Ok();
}

Result<uint64_t> KeyDecoder::U64() {
  Result<uint64_t> value = ReadU64(&rest_);
  if (!value.ok()) return Error(value.status().message());
  return value;
}

Result<std::string> KeyDecoder::String() {
  Result<std::string> value = ReadOrderedString(&rest_);
  if (!value.ok()) return Error(value.status().message());
  return value;
}

Status KeyDecoder::Done() const {
  if (rest_.empty()) return Status::Ok();
  return Error(std::to_string(rest_.size()) + " unexpected trailing bytes");
}

Status KeyDecoder::Error(std::string_view what) const {
  std::string message = "key \"" + EscapeKey(key_) + "\" at byte " +
                        std::to_string(key_.size() - rest_.size()) + ": ";
  message += what;
  return Status::Malformed(std::move(message));
}

std::string EscapeKey(std::string_view key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    auto b = static_cast<uint8_t>(c);
    if (b >= 0x20 && b < 0x7f && c != '\\' && c != '"') {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xf]);
    }
  }
  return out;
}

}  // namespace gpool::storage
