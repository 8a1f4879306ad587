#include "protocol/wire.h"

#include <limits>

namespace gpool::wire {

void FieldPath::Append(std::string& out) const {
  if (parent_ != nullptr) parent_->Append(out);
  if (index_ != kNoIndex) {
    out += "[" + std::to_string(index_) + "]";
    return;
  }
  if (name_.empty()) return;
  if (!out.empty()) out += '.';
  out += name_;
}

std::string FieldPath::str() const {
  std::string out;
  Append(out);
  return out;
}

ObjectReader::ObjectReader(const msgpack::object& object, std::string path)
    : object_(&object), root_(std::move(path)), path_(root_) {
  if (object.type != msgpack::type::MAP) {
    status_ = Status::Malformed((root_.empty() ? std::string("message") : root_) + ": expected a map");
  }
}

ObjectReader::ObjectReader(const msgpack::object& object, const FieldPath& path) : object_(&object), path_(path) {
  if (object.type != msgpack::type::MAP) {
    const std::string where = path_.str();
    status_ = Status::Malformed((where.empty() ? std::string("message") : where) + ": expected a map");
  }
}

const msgpack::object* ObjectReader::Find(std::string_view key) const {
  if (object_->type != msgpack::type::MAP) return nullptr;
  const auto& map = object_->via.map;
  for (uint32_t i = 0; i < map.size; ++i) {
    const auto& k = map.ptr[i].key;
    if (k.type == msgpack::type::STR && std::string_view(k.via.str.ptr, k.via.str.size) == key) {
      return &map.ptr[i].val;
    }
  }
  return nullptr;
}


namespace {

const char* TypeName(msgpack::type::object_type t) {
  switch (t) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER: return "unsigned integer";
    case msgpack::type::NEGATIVE_INTEGER: return "negative integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "string";
    case msgpack::type::BIN: return "binary";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
  }
  return "unknown";
}

Status WrongType(const FieldPath& path, const char* expected, const msgpack::object& o) {
  return Status::Malformed(path.str() + ": expected " + expected + ", got " + TypeName(o.type));
}

Status ReadUnsigned(const msgpack::object& o, const FieldPath& path, uint64_t max, uint64_t* out) {
  if (o.type == msgpack::type::NEGATIVE_INTEGER) {
    return Status::Malformed(path.str() + ": must not be negative, got " + std::to_string(o.via.i64));
  }
  if (o.type != msgpack::type::POSITIVE_INTEGER) return WrongType(path, "unsigned integer", o);
  if (o.via.u64 > max) {
    return Status::Malformed(path.str() + ": " + std::to_string(o.via.u64) + " is out of range (max " +
                             std::to_string(max) + ")");
  }
  *out = o.via.u64;
  return Status::Ok();
}

Status ReadSigned(const msgpack::object& o, const FieldPath& path, int64_t min, int64_t max, int64_t* out) {
  int64_t v = 0;
  if (o.type == msgpack::type::POSITIVE_INTEGER) {
    if (o.via.u64 > static_cast<uint64_t>(max)) {
      return Status::Malformed(path.str() + ": " + std::to_string(o.via.u64) + " is out of range");
    }
    v = static_cast<int64_t>(o.via.u64);
  } else if (o.type == msgpack::type::NEGATIVE_INTEGER) {
    v = o.via.i64;
  } else {
    return WrongType(path, "integer", o);
  }
  if (v < min || v > max) return Status::Malformed(path.str() + ": " + std::to_string(v) + " is out of range");
  *out = v;
  return Status::Ok();
}

}  // namespace

Status ObjectReader::Read(const msgpack::object& o, const FieldPath& path, uint64_t* out) {
  return ReadUnsigned(o, path, std::numeric_limits<uint64_t>::max(), out);
}

Status ObjectReader::Read(const msgpack::object& o, const FieldPath& path, uint32_t* out) {
  uint64_t v = 0;
  GPOOL_RETURN_IF_ERROR(ReadUnsigned(o, path, std::numeric_limits<uint32_t>::max(), &v));
  *out = static_cast<uint32_t>(v);
  return Status::Ok();
}

Status ObjectReader::Read(const msgpack::object& o, const FieldPath& path, int64_t* out) {
  return ReadSigned(o, path, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), out);
}

Status ObjectReader::Read(const msgpack::object& o, const FieldPath& path, int32_t* out) {
  int64_t v = 0;
  GPOOL_RETURN_IF_ERROR(
      ReadSigned(o, path, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), &v));
  *out = static_cast<int32_t>(v);
  return Status::Ok();
}

Status ObjectReader::Read(const msgpack::object& o, const FieldPath& path, bool* out) {
  if (o.type != msgpack::type::BOOLEAN) return WrongType(path, "bool", o);
  *out = o.via.boolean;
  return Status::Ok();
}

Status ObjectReader::Read(const msgpack::object& o, const FieldPath& path, std::string* out) {
  // Binary is accepted where a string is expected: log bytes and opaque
  // payloads need not be UTF-8.
  if (o.type == msgpack::type::STR) {
    out->assign(o.via.str.ptr, o.via.str.size);
  } else if (o.type == msgpack::type::BIN) {
    out->assign(o.via.bin.ptr, o.via.bin.size);
  } else {
    return WrongType(path, "string", o);
  }
  return Status::Ok();
}

Status ObjectReader::Read(const msgpack::object& o, const FieldPath& path, TaskId* out) {
  ObjectReader r(o, path);
  uint64_t job = 0;
  r.Required("job", &job);
  r.Required("index", &out->index);
  r.Optional("attempt", &out->attempt);
  out->job = JobId(job);
  return r.status();
}

namespace {

// The first of UnpackOne's two passes: walks the frame without building
// anything and says whether it holds one whole msgpack value within the
// limits. msgpack's unpacker allocates a container's declared size before it
// reads a single element, so without this a 5-byte array32 header declaring
// 2^20 elements costs 24 MB, and 30 nested ones 1.4 GB, from a 150-byte
// frame (found by fuzz/: most fuzzing time went to those allocations). A
// frame that passes holds every element it declares, so the unpacker's
// allocations are bounded by the frame's size.
class FrameCheck : public msgpack::null_visitor {
 public:
  explicit FrameCheck(const DecodeLimits& limits) : limits_(limits) {}
  const Status& status() const { return status_; }

  bool visit_str(const char*, uint32_t size) { return String(size); }
  bool visit_bin(const char*, uint32_t size) { return String(size); }
  bool visit_ext(const char*, uint32_t size) { return String(size); }
  bool start_array(uint32_t n) { return Container(n); }
  bool start_map(uint32_t n) { return Container(n); }
  bool end_array() { return Leave(); }
  bool end_map() { return Leave(); }
  void parse_error(size_t, size_t) {
    if (status_.ok()) status_ = Status::Malformed("invalid msgpack: an unused type byte");
  }
  void insufficient_bytes(size_t, size_t) {
    if (status_.ok()) status_ = Status::Malformed("truncated msgpack: frame ended in the middle of a value");
  }

 private:
  bool String(uint32_t size) {
    if (size <= limits_.max_string_bytes) return true;
    status_ = Status::ResourceExhausted("msgpack container or string exceeds a limit: a string of " +
                                        std::to_string(size) + " bytes");
    return false;
  }
  bool Container(uint32_t n) {
    if (n > limits_.max_container_elements) {
      status_ = Status::ResourceExhausted("msgpack container or string exceeds a limit: a container of " +
                                          std::to_string(n) + " elements");
      return false;
    }
    if (++depth_ > limits_.max_depth) {
      status_ = Status::ResourceExhausted("msgpack nesting exceeds the depth limit");
      return false;
    }
    return true;
  }
  bool Leave() {
    --depth_;
    return true;
  }

  const DecodeLimits& limits_;
  size_t depth_ = 0;
  Status status_;
};

}  // namespace

Result<msgpack::object_handle> UnpackOne(std::string_view bytes, const DecodeLimits& limits) {
  if (bytes.size() > limits.max_frame_bytes) {
    return Status::ResourceExhausted("frame of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
                                     std::to_string(limits.max_frame_bytes) + " bytes");
  }
  if (bytes.empty()) return Status::Malformed("empty frame");
  FrameCheck check(limits);
  size_t checked = 0;
  bool whole = msgpack::parse(bytes.data(), bytes.size(), checked, check);
  if (!check.status().ok()) return check.status();
  if (!whole) return Status::Malformed("invalid msgpack");
  msgpack::unpack_limit limit(limits.max_container_elements, limits.max_container_elements,
                              limits.max_string_bytes, limits.max_string_bytes, limits.max_string_bytes,
                              limits.max_depth);
  size_t offset = 0;
  msgpack::object_handle handle;
  try {
    msgpack::unpack(handle, bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
  } catch (const msgpack::insufficient_bytes&) {
    return Status::Malformed("truncated msgpack: frame ended in the middle of a value");
  } catch (const msgpack::depth_size_overflow&) {
    return Status::ResourceExhausted("msgpack nesting exceeds the depth limit");
  } catch (const msgpack::size_overflow& e) {
    return Status::ResourceExhausted(std::string("msgpack container or string exceeds a limit: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("msgpack value too large to allocate");
  } catch (const std::exception& e) {
    return Status::Malformed(std::string("invalid msgpack: ") + e.what());
  }
  if (offset != bytes.size()) {
    return Status::Malformed(std::to_string(bytes.size() - offset) + " trailing bytes after the message");
  }
  return handle;
}

}  // namespace gpool::wire
