// Validation of users, role grants and keys (UpdateUser, Bootstrap), shared
// by the CLI, the gateway and apply.
#pragma once

#include <string_view>

#include "protocol/base/status.h"
#include "protocol/messages_users.h"

namespace gpool {

inline constexpr size_t kMaxUserNameLength = 64;
inline constexpr size_t kMaxKeysPerUser = 16;
inline constexpr size_t kMaxRolesPerUser = 64;
inline constexpr size_t kZ85KeyLength = 40;  // a 32-byte CurveZMQ key in Z85

// A CurveZMQ public key as Z85 text: 40 characters of the Z85 alphabet.
bool IsZ85Key(std::string_view key);
bool IsRoleName(std::string_view role);
// Name [A-Za-z0-9._-], 1 to 64 bytes; keys Z85 and distinct; uid and gid -1
// or a Unix id; each grant a known role, with a queue exactly where the role
// is over one (queue-admin, member).
Status ValidateUserSpec(const UserSpec& spec);
// The op is known and carries what it changes.
Status ValidateUpdateUser(const UpdateUser& update);

}  // namespace gpool
