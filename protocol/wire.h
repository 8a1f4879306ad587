// Low-level MessagePack reading and writing for the gpool wire protocol.
//
// Every message body is a msgpack map with string keys. Writers emit maps;
// ObjectReader reads fields out of a decoded map without trusting it: a
// missing required field, a wrong type or an out-of-range integer records a
// kMalformed status naming the field path ("spec.tasks[1].replicas"), and
// reading stops at the first error. Unknown keys are ignored so newer peers
// can add optional fields without breaking older ones.
//
// Thread-safety: none; each instance belongs to one thread.
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <msgpack.hpp>

#include "protocol/base/bytes.h"
#include "protocol/base/enum_names.h"
#include "protocol/base/ids.h"
#include "protocol/base/status.h"

namespace gpool::wire {

class Packer;
class ObjectReader;

// A struct that knows how to write itself as a msgpack map.
template <typename T>
concept Packable = requires(const T& t, Packer& p) { t.Pack(p); };

// A struct that can read itself from a map; it fills the fields it knows.
template <typename T>
concept Unpackable = requires(T& t, ObjectReader& r) { t.Unpack(r); };

// A struct that lists its fields once, in `template <class V> void Fields(V& v)`,
// calling v.Required(key, member) or v.Optional(key, member) for each. The
// same list drives packing and reading, so the two can never disagree.
struct FieldCounter {
  uint32_t count = 0;
  template <typename T>
  void Required(std::string_view, const T&) { ++count; }
  template <typename T>
  void Optional(std::string_view, const T&) { ++count; }
};
template <typename T>
concept Visitable = requires(T& t, FieldCounter& c) { t.Fields(c); };

template <typename T>
concept Readable = Unpackable<T> || Visitable<T>;

class Packer {
 public:
  explicit Packer(msgpack::sbuffer& buffer) : pk_(buffer) {}

  void BeginMap(uint32_t fields) { pk_.pack_map(fields); }
  void BeginArray(uint32_t size) { pk_.pack_array(size); }
  void Key(std::string_view key) { Value(key); }

  void Value(std::string_view v) {
    pk_.pack_str(static_cast<uint32_t>(v.size()));
    pk_.pack_str_body(v.data(), static_cast<uint32_t>(v.size()));
  }
  void Value(const std::string& v) { Value(std::string_view(v)); }
  void Value(const Bytes& v) {
    pk_.pack_bin(static_cast<uint32_t>(v.size()));
    pk_.pack_bin_body(v.data(), static_cast<uint32_t>(v.size()));
  }
  void Value(const char* v) { Value(std::string_view(v)); }
  void Value(bool v) { v ? pk_.pack_true() : pk_.pack_false(); }
  void Value(uint64_t v) { pk_.pack_uint64(v); }
  void Value(uint32_t v) { pk_.pack_uint32(v); }
  void Value(int64_t v) { pk_.pack_int64(v); }
  void Value(int32_t v) { pk_.pack_int32(v); }
  void Nil() { pk_.pack_nil(); }
  // Strong ids travel as their value.
  template <typename Tag, typename Rep>
  void Value(const StrongId<Tag, Rep>& id) {
    Value(id.value());
  }
  // Enums travel as their number: stored codes must keep their values.
  template <typename E>
    requires(std::is_enum_v<E> && !NamedEnum<E>)
  void Value(E v) {
    Value(static_cast<uint32_t>(v));
  }
  // Named enums (base/enum_names.h) travel as their name, byte for byte the
  // string the field held before it was an enum.
  template <NamedEnum E>
  void Value(E v) {
    Value(NameOf(v));
  }

  // Task ids travel as {"job": u64, "index": u32, "attempt": u32}.
  void Value(const TaskId& id) {
    BeginMap(3);
    Field("job", id.job.value());
    Field("index", id.index);
    Field("attempt", id.attempt);
  }

  template <Packable T>
  void Value(const T& v) {
    v.Pack(*this);
  }
  template <Visitable T>
    requires(!Packable<T>)
  void Value(const T& v);
  template <typename T>
  void Value(const std::vector<T>& values) {
    BeginArray(static_cast<uint32_t>(values.size()));
    for (const auto& v : values) Value(v);
  }
  template <typename V>
  void Value(const std::map<std::string, V>& values) {
    BeginMap(static_cast<uint32_t>(values.size()));
    for (const auto& [k, v] : values) {
      Key(k);
      Value(v);
    }
  }

  template <typename T>
  void Field(std::string_view key, const T& value) {
    Key(key);
    Value(value);
  }

 private:
  msgpack::packer<msgpack::sbuffer> pk_;
};

// Where a value sits in a decoded message ("body.tasks[2].name"), for error
// messages. Built lazily: a path is a chain of (parent, key or index) links
// on the stack and becomes a string only when an error names it, so decoding
// a valid message allocates nothing for paths. A FieldPath must not outlive
// the parent it was made from (readers only pass them down the stack).
class FieldPath {
 public:
  explicit FieldPath(std::string_view root = {}) : name_(root) {}
  FieldPath Key(std::string_view key) const { return FieldPath(this, key, kNoIndex); }
  FieldPath Index(size_t index) const { return FieldPath(this, {}, index); }
  std::string str() const;

 private:
  static constexpr size_t kNoIndex = static_cast<size_t>(-1);
  FieldPath(const FieldPath* parent, std::string_view name, size_t index)
      : parent_(parent), name_(name), index_(index) {}
  void Append(std::string& out) const;

  const FieldPath* parent_ = nullptr;
  std::string_view name_;
  size_t index_ = kNoIndex;
};

class ObjectReader {
 public:
  // `object` must outlive the reader. `path` prefixes error messages.
  ObjectReader(const msgpack::object& object, std::string path);
  ObjectReader(const msgpack::object& object, const FieldPath& path);
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  template <typename T>
  void Required(std::string_view key, T* out) {
    if (!status_.ok()) return;
    const msgpack::object* field = Find(key);
    if (field == nullptr) {
      status_ = Status::Malformed(path_.Key(key).str() + ": required field is missing");
      return;
    }
    status_ = Read(*field, path_.Key(key), out);
  }

  // Leaves *out untouched when the key is absent or nil.
  template <typename T>
  void Optional(std::string_view key, T* out) {
    if (!status_.ok()) return;
    const msgpack::object* field = Find(key);
    if (field == nullptr || field->type == msgpack::type::NIL) return;
    status_ = Read(*field, path_.Key(key), out);
  }

  bool Has(std::string_view key) const { return Find(key) != nullptr; }
  const Status& status() const { return status_; }
  const FieldPath& path() const { return path_; }
  void Fail(Status status) {
    if (status_.ok()) status_ = std::move(status);
  }

  // Reads a whole value of type T from `object` (used for the envelope body).
  template <Readable T>
  static Result<T> ReadObject(const msgpack::object& object, std::string_view path) {
    T out{};
    Status s = Read(object, FieldPath(path), &out);
    if (!s.ok()) return s;
    return out;
  }

 private:
  const msgpack::object* Find(std::string_view key) const;

  static Status Read(const msgpack::object& o, const FieldPath& path, uint64_t* out);
  static Status Read(const msgpack::object& o, const FieldPath& path, uint32_t* out);
  static Status Read(const msgpack::object& o, const FieldPath& path, int64_t* out);
  static Status Read(const msgpack::object& o, const FieldPath& path, int32_t* out);
  static Status Read(const msgpack::object& o, const FieldPath& path, bool* out);
  static Status Read(const msgpack::object& o, const FieldPath& path, std::string* out);
  static Status Read(const msgpack::object& o, const FieldPath& path, TaskId* out);

  template <Readable T>
  static Status Read(const msgpack::object& o, const FieldPath& path, T* out);

  template <typename Tag, typename Rep>
  static Status Read(const msgpack::object& o, const FieldPath& path, StrongId<Tag, Rep>* out) {
    Rep v{};
    Status s = Read(o, path, &v);
    if (s.ok()) *out = StrongId<Tag, Rep>(std::move(v));
    return s;
  }

  // Any number that fits: an enum read back may hold a value this build does
  // not name (written by a newer one), and its users say so.
  template <typename E>
    requires(std::is_enum_v<E> && !NamedEnum<E>)
  static Status Read(const msgpack::object& o, const FieldPath& path, E* out) {
    uint32_t v = 0;
    Status s = Read(o, path, &v);
    if (s.ok()) *out = static_cast<E>(v);
    return s;
  }

  // A named enum is decoded here, once: the string must be one of its names,
  // else InvalidArgument naming the field and the value, so nothing past the
  // decoder ever sees a value it does not know.
  template <NamedEnum E>
  static Status Read(const msgpack::object& o, const FieldPath& path, E* out) {
    std::string name;  // read as the string field was, bin included
    GPOOL_RETURN_IF_ERROR(Read(o, path, &name));
    const std::optional<E> value = EnumFromName<E>(name);
    if (!value) return Status::InvalidArgument(NotANameOf<E>(path.str(), name));
    *out = *value;
    return Status::Ok();
  }

  template <typename T>
  static Status Read(const msgpack::object& o, const FieldPath& path, std::vector<T>* out) {
    if (o.type != msgpack::type::ARRAY) return Status::Malformed(path.str() + ": expected an array");
    out->clear();
    out->reserve(o.via.array.size);
    for (uint32_t i = 0; i < o.via.array.size; ++i) {
      T item{};
      Status s = Read(o.via.array.ptr[i], path.Index(i), &item);
      if (!s.ok()) return s;
      out->push_back(std::move(item));
    }
    return Status::Ok();
  }

  template <typename V>
  static Status Read(const msgpack::object& o, const FieldPath& path, std::map<std::string, V>* out) {
    if (o.type != msgpack::type::MAP) return Status::Malformed(path.str() + ": expected a map");
    out->clear();
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const auto& kv = o.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR) return Status::Malformed(path.str() + ": map keys must be strings");
      std::string key(kv.key.via.str.ptr, kv.key.via.str.size);
      V value{};
      Status s = Read(kv.val, path.Key(key), &value);
      if (!s.ok()) return s;
      (*out)[key] = std::move(value);
    }
    return Status::Ok();
  }

  const msgpack::object* object_;
  std::string root_;  // owns the root name when constructed from a string
  FieldPath path_;
  Status status_;
};

struct FieldWriter {
  Packer& packer;
  template <typename T>
  void Required(std::string_view key, const T& value) { packer.Field(key, value); }
  template <typename T>
  void Optional(std::string_view key, const T& value) { packer.Field(key, value); }
};

struct FieldReader {
  ObjectReader& reader;
  template <typename T>
  void Required(std::string_view key, T& value) { reader.Required(key, &value); }
  template <typename T>
  void Optional(std::string_view key, T& value) { reader.Optional(key, &value); }
};

template <Visitable T>
  requires(!Packable<T>)
void Packer::Value(const T& v) {
  // Fields() is shared with reading and so not const; packing never mutates.
  auto& mutable_v = const_cast<T&>(v);
  FieldCounter counter;
  mutable_v.Fields(counter);
  BeginMap(counter.count);
  FieldWriter writer{*this};
  mutable_v.Fields(writer);
}

template <Readable T>
Status ObjectReader::Read(const msgpack::object& o, const FieldPath& path, T* out) {
  ObjectReader nested(o, path);
  if (!nested.status().ok()) return nested.status();
  if constexpr (Unpackable<T>) {
    out->Unpack(nested);
  } else {
    FieldReader reader{nested};
    out->Fields(reader);
  }
  return nested.status();
}

// Packs a value into a byte string.
template <typename T>
std::string PackToString(const T& value) {
  msgpack::sbuffer buffer;
  Packer packer(buffer);
  packer.Value(value);
  return std::string(buffer.data(), buffer.size());
}

// Decodes exactly one msgpack object from `bytes`, enforcing size limits and
// rejecting trailing bytes, then reads it as T.
struct DecodeLimits {
  size_t max_frame_bytes = 16 * 1024 * 1024;
  size_t max_container_elements = 1 << 20;
  size_t max_string_bytes = 8 * 1024 * 1024;
  size_t max_depth = 32;
};
Result<msgpack::object_handle> UnpackOne(std::string_view bytes, const DecodeLimits& limits);

template <Readable T>
Result<T> UnpackFromString(std::string_view bytes, const DecodeLimits& limits = {}) {
  auto handle = UnpackOne(bytes, limits);
  if (!handle.ok()) return handle.status();
  return ObjectReader::ReadObject<T>(handle->get(), "value");
}

}  // namespace gpool::wire
