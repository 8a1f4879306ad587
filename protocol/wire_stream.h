// ValueStream: reads one large MessagePack value a piece at a time (issue 49).
//
// UnpackFromString builds the msgpack object tree of the whole value before
// anything is read from it: for a state image that tree (24 bytes an object,
// 48 a map entry, every string copied) is several times the image, and it is
// alive beside the image and the decoded records (issue 49: restarts peaked
// at several times the replica's steady RSS). A ValueStream
// instead walks the outer containers itself (a map's or an array's header,
// a key) and unpacks only one inner value at a time, each into a zone of its
// own that is freed as soon as it is read, so what decoding holds beyond its
// result is bounded by the largest single inner value.
//
// Every inner value goes through UnpackOne and its limits (no allocation
// from a declared size the bytes do not hold), and every failure is a typed
// Status that names where: Malformed for bytes that are not msgpack, are
// truncated or are of the wrong type, ResourceExhausted past a limit. The
// caller decides what it keeps only once the whole value decoded, so a bad
// image changes nothing.
//
// Thread-safety: none; one thread per instance. The bytes must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"
#include "protocol/wire.h"

namespace gpool::wire {

class ValueStream {
 public:
  ValueStream(std::string_view bytes, const DecodeLimits& limits);

  // How far reading has got: every byte before it is decoded and will not be
  // looked at again (a caller may drop them from memory).
  size_t offset() const { return offset_; }
  // Whether every byte was read.
  bool done() const { return offset_ == bytes_.size(); }
  // Whether the next value is nil (an absent optional field).
  bool NextIsNil() const;

  // The header of a map (its number of key-value pairs) or an array (its
  // number of elements); `path` names the value in errors. The elements are
  // read next, each with Key/Read/Skip or another Begin.
  Result<uint32_t> BeginMap(std::string_view path);
  Result<uint32_t> BeginArray(std::string_view path);
  // A map key, which must be a string; a view into the bytes.
  Result<std::string_view> Key(std::string_view path);

  // The next whole value, unpacked into its own zone (freed when the handle
  // is), within the limits.
  Result<msgpack::object_handle> Next(std::string_view path);
  // The next whole value read as a record (ObjectReader::ReadObject), its
  // errors under `path` ("value.jobs[3]").
  template <Readable T>
  Status Read(std::string_view path, T* out) {
    GPOOL_ASSIGN_OR_RETURN(msgpack::object_handle handle, Next(path));
    auto read = ObjectReader::ReadObject<T>(handle.get(), path);
    if (!read.ok()) return read.status();
    *out = std::move(read).value();
    return Status::Ok();
  }
  // Steps over the next whole value without building it.
  Status Skip(std::string_view path);

 private:
  // The length of the whole value at offset_, checked to be complete.
  Result<size_t> ValueLength(std::string_view path) const;
  Status Truncated(std::string_view path) const;

  std::string_view bytes_;
  DecodeLimits limits_;
  size_t offset_ = 0;
};

}  // namespace gpool::wire
