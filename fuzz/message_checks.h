// What a coordinator or worker does with a message body right after
// decoding it, before any state sees it: the semantic validators. They run
// on attacker-chosen values too, so the message targets call them on every
// body that decodes, and check that the body survives a re-encode.
#pragma once

#include <string>
#include <string_view>

#include "fuzz/check.h"
#include "protocol/base/endpoint.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/validate.h"
#include "protocol/wire.h"

namespace gpool::fuzz {

inline void Validate(const SubmitJob& m) { (void)ValidateJobSpec(m.spec); }
inline void Validate(const RegisterNode& m) { (void)ValidateNodeSpec(m.node); }
inline void Validate(const UpdateNode& m) { (void)ValidateUpdateNode(m); }
inline void Validate(const UpdateQueue& m) { (void)ValidateUpdateQueue(m); }
inline void Validate(const ErrorReply& m) { (void)m.ToStatus(); }
inline void Validate(const ChangeReplicas& m) {
  (void)ValidateConnectEndpoint(m.peer_address, "peer_address");
  (void)ValidateConnectEndpoint(m.client_address, "client_address");
}
template <typename T>
void Validate(const T&) {}

// A decoded body packs and decodes again: what one side accepted, the other
// side (or a stored copy) can read back.
template <typename T>
void CheckRoundTrip(const T& body) {
  std::string packed = wire::PackToString(body);
  auto again = wire::UnpackFromString<T>(packed);
  FUZZ_CHECK(again.ok(), std::string(MessageTypeName(T::kType)) + " did not decode after re-encoding: " +
                             again.status().ToString());
}

}  // namespace gpool::fuzz
