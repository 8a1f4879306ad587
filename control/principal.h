// Principal: who sent a frame, as the transport authenticated it.
//
// With CurveZMQ on, the coordinator's ZAP handler admits a connection and
// names it in the ZAP reply's User-Id, which libzmq attaches to every frame
// of that connection; the gateway and the node registry decide from that
// name alone, never from a field the sender fills in (Header.sender, a job
// spec's user). Without CurveZMQ (--insecure) every frame is kInsecure and
// the old token rules apply.
//
// User-Id wire form: "<kind>|<name>|<public key, Z85>". '|' is neither a Z85
// character nor allowed in user, node or replica names.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpool::control {

struct Principal {
  enum class Kind {
    kInsecure,   // no CurveZMQ: the transport vouches for nothing
    kUser,       // a registered user's key
    kNode,       // a worker key bound to node `name`
    kNewNode,    // a worker key bound to no node yet (admission or first-use enrolment)
    kReplica,    // a replica of the committed configuration
    kBootstrap,  // any client key while the cluster has no admin yet
    // A bound or running task's exec key (issue 48): name is its task id
    // ("17.0", "17.0#2", security/task_exec_key.h); it speaks for that
    // task's job while that attempt holds its binding.
    kTask,
    // An API token on the HTTP port (issue 48): name its owner, key its id.
    // Made in-process by the HTTP port only; never parsed from a User-Id.
    kToken,
  };
  Kind kind = Kind::kInsecure;
  std::string name;
  std::string key;

  // "" (no User-Id: the connection had no ZAP handshake) is kInsecure;
  // anything else not of the wire form is nullopt, which callers refuse.
  static std::optional<Principal> Parse(std::string_view user_id);
  std::string UserId() const;
  bool operator==(const Principal&) const = default;
};

std::string_view KindName(Principal::Kind kind);

}  // namespace gpool::control
