// wire::Bytes: a string whose contents are raw bytes, not text. Apart from
// wire.h so that messages can hold it without parsing msgpack.
#pragma once

#include <string>
#include <utility>

namespace gpool::wire {

// Raw bytes (log contents, opaque payloads) that travel as msgpack bin, so
// clients never have to decode them as UTF-8. Reads accept str or bin.
struct Bytes : std::string {
  Bytes() = default;
  Bytes(std::string s) : std::string(std::move(s)) {}  // NOLINT: implicit by design
  Bytes(const char* s) : std::string(s) {}             // NOLINT: implicit by design
  using std::string::operator=;
};

}  // namespace gpool::wire
