// The envelope every gpool frame travels in, and the codec for it.
//
// Wire form: one msgpack map per ZeroMQ frame:
//   {"v": 1, "type": "SubmitJob", "id": 7, "from": "cli-4f2a", "epoch": 3,
//    "token": "...", "body": {...}}
// Decoding never trusts its input: oversize frames, invalid or truncated
// msgpack, trailing bytes, wrong field types, missing fields, unknown message
// types and unsupported versions each come back as a typed Status.
//
// Thread-safety: Envelope is an immutable value once decoded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "protocol/message_type.h"
#include "protocol/wire.h"

namespace gpool {

inline constexpr uint32_t kProtocolVersion = 1;

struct Header {
  uint32_t version = kProtocolVersion;
  MessageType type = MessageType::kAck;
  uint64_t request_id = 0;  // chosen by the requester; echoed in the reply
  std::string sender;       // free-form id of the sending process, for logs
  uint64_t epoch = 0;       // leader epoch (term) for coordinator -> worker commands
  std::string token;        // shared secret when the cluster is configured with one
};

class Envelope {
 public:
  const Header& header() const { return header_; }
  MessageType type() const { return header_.type; }

  // Reads the body as T; an envelope of another type is a kMalformed error.
  template <wire::Readable T>
  Result<T> Body() const {
    if (header_.type != T::kType) {
      return Status::Malformed("expected a " + std::string(MessageTypeName(T::kType)) + " body, got " +
                               std::string(MessageTypeName(header_.type)));
    }
    return wire::ObjectReader::ReadObject<T>(*body_, "body");
  }

 private:
  friend Result<Envelope> DecodeEnvelope(std::string_view, const wire::DecodeLimits&);
  Header header_;
  std::shared_ptr<msgpack::object_handle> handle_;
  const msgpack::object* body_ = nullptr;
};

Result<Envelope> DecodeEnvelope(std::string_view bytes, const wire::DecodeLimits& limits = {});

// The smallest frame every gpool endpoint reads whole. An endpoint answers a
// frame over its own limit (--max-frame-bytes) with a typed
// ResourceExhausted, which it can only do for a frame it has read; a frame
// past the socket's ZMQ_MAXMSGSIZE is dropped by ZeroMQ with the connection,
// without a word, and its sender sees nothing but a time-out (a 16 MiB spec
// used to wait out every retry, 23-30 s, for "did not answer"). So endpoints
// never set ZMQ_MAXMSGSIZE below this, and clients never send a larger frame
// (they refuse it themselves, with ResourceExhausted).
inline constexpr size_t kMinReadableFrameBytes = size_t{64} << 20;

// Encodes `body` with `header`; header.type is taken from T.
template <typename T>
std::string EncodeEnvelope(Header header, const T& body) {
  header.type = T::kType;
  msgpack::sbuffer buffer;
  wire::Packer p(buffer);
  p.BeginMap(7);
  p.Field("v", header.version);
  p.Field("type", MessageTypeName(header.type));
  p.Field("id", header.request_id);
  p.Field("from", header.sender);
  p.Field("epoch", header.epoch);
  p.Field("token", header.token);
  p.Field("body", body);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace gpool
