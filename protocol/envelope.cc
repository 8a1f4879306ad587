#include "protocol/envelope.h"
#include "protocol/message_type.h"

namespace gpool {

Result<Envelope> DecodeEnvelope(std::string_view bytes, const wire::DecodeLimits& limits) {
  auto handle = wire::UnpackOne(bytes, limits);
  if (!handle.ok()) return handle.status();

  Envelope env;
  env.handle_ = std::make_shared<msgpack::object_handle>(std::move(handle.value()));
  const msgpack::object& root = env.handle_->get();
  wire::ObjectReader r(root, "envelope");
  r.Required("v", &env.header_.version);
  if (!r.status().ok()) return r.status();
  if (env.header_.version != kProtocolVersion) {
    return Status::UnsupportedVersion("protocol version " + std::to_string(env.header_.version) +
                                      " is not supported (this side speaks " + std::to_string(kProtocolVersion) +
                                      ")");
  }
  std::string type_name;
  r.Required("type", &type_name);
  r.Required("id", &env.header_.request_id);
  r.Optional("from", &env.header_.sender);
  r.Optional("epoch", &env.header_.epoch);
  r.Optional("token", &env.header_.token);
  if (!r.status().ok()) return r.status();
  auto type = MessageTypeFromName(type_name);
  if (!type) {
    // Cap the echoed name: it is attacker-controlled.
    return Status::UnknownType("unknown message type '" + type_name.substr(0, 64) + "'");
  }
  env.header_.type = *type;

  const auto& map = root.via.map;
  for (uint32_t i = 0; i < map.size; ++i) {
    const auto& key = map.ptr[i].key;
    if (key.type == msgpack::type::STR && std::string_view(key.via.str.ptr, key.via.str.size) == "body") {
      env.body_ = &map.ptr[i].val;
    }
  }
  if (env.body_ == nullptr) return Status::Malformed("envelope.body: required field is missing");
  if (env.body_->type != msgpack::type::MAP) return Status::Malformed("envelope.body: expected a map");
  return env;
}

}  // namespace gpool
