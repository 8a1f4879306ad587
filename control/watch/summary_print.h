// A watch summary's fingerprint taken from its fields, without encoding it
// (issue 49). The change feed renders every job and node a command can
// change and keeps those whose summary differs from the last one recorded;
// hashing the msgpack encoding for that cost it more than the plan's own
// apply. This walks the same field list (Fields()) the encoder walks, so a
// field added to a summary is part of its print. Types without a field
// list fall back to their encoding's hash.
//
// Like Fingerprint() (protocol/fingerprint.h), it is a 64-bit hash: two
// different summaries share a print with negligible odds.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "protocol/wire.h"

namespace gpool::control {

template <typename T>
concept SummaryPrintScalar = std::is_integral_v<T> || std::is_enum_v<T>;

class SummaryPrinter {
 public:
  template <typename T>
  void Required(std::string_view, const T& value) {
    Add(value);
  }
  template <typename T>
  void Optional(std::string_view, const T& value) {
    Add(value);
  }
  size_t print() const { return print_; }

  void Add(const std::string& value) { Mix(std::hash<std::string_view>{}(value)); }
  void Add(bool value) { Mix(value ? 0x51 : 0x50); }
  template <SummaryPrintScalar T>
  void Add(T value) {
    Mix(std::hash<T>{}(value));
  }
  template <typename T>
  void Add(const std::vector<T>& values) {
    Mix(values.size());
    for (const auto& value : values) Add(value);
  }
  template <typename V>
  void Add(const std::map<std::string, V>& values) {
    Mix(values.size());
    for (const auto& [key, value] : values) {
      Add(key);
      Add(value);
    }
  }
  template <wire::Visitable T>
    requires(!wire::Packable<T>)
  void Add(const T& value) {
    Mix(0x7b);  // where a nested value starts, so fields cannot shift across it
    const_cast<T&>(value).Fields(*this);  // Fields() is shared with reading; printing never mutates
  }
  // Anything else (a custom Pack, a strong id): its encoding's hash.
  template <typename T>
    requires(!SummaryPrintScalar<T> && (!wire::Visitable<T> || wire::Packable<T>))
  void Add(const T& value) {
    msgpack::sbuffer buffer(64);
    wire::Packer packer(buffer);
    packer.Value(value);
    Mix(std::hash<std::string_view>{}(std::string_view(buffer.data(), buffer.size())));
  }

 private:
  void Mix(size_t value) { print_ ^= value + 0x9e3779b97f4a7c15ULL + (print_ << 6) + (print_ >> 2); }
  size_t print_ = 0xcbf29ce484222325ULL;
};

template <typename T>
size_t SummaryPrint(const T& summary) {
  SummaryPrinter printer;
  printer.Add(summary);
  return printer.print();
}

}  // namespace gpool::control
