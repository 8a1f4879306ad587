// The pieces of the wire protocol every channel shares: MessageType, which
// names each message struct (messages_*.h) in an Envelope, its wire names, and
// the replies usable on any channel (Ack, ErrorReply).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/base/status.h"
#include "protocol/message_type.h"
#include "protocol/types.h"

namespace gpool {

// --- Generic replies -------------------------------------------------------

struct Ack {
  static constexpr MessageType kType = MessageType::kAck;
  template <typename V>
  void Fields(V&) {}  // no fields: an empty map
};

struct ErrorReply {
  static constexpr MessageType kType = MessageType::kErrorReply;
  std::string code;     // a StatusCode name, e.g. "InvalidArgument"
  std::string message;  // human-readable; names the offending field where there is one
  std::string leader;   // for NotLeader: the client address of the leader, if known

  static ErrorReply FromStatus(const Status& status, std::string leader = {});
  Status ToStatus() const;
  template <typename V>
  void Fields(V& v) {
    v.Required("code", code);
    v.Required("message", message);
    v.Optional("leader", leader);
  }
};

}  // namespace gpool
