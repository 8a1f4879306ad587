// CurveZMQ key pairs and the files that hold them.
//
// Every party of a secured cluster (each coordinator replica, each worker
// node, each user) has its own Curve25519 key pair, written by
// `gpool admin keygen --out PREFIX` as two files:
//   PREFIX.key  the secret file, mode 0600: both keys, Z85
//   PREFIX.pub  the public file: the public key only, handed to whoever must
//               admit the key (the coordinator's, to workers and clients).
// Format, one `name = "value"` per line, '#' comments (close to CZMQ's zcert,
// so an operator can read it):
//   public-key = "<40 Z85 characters>"
//   secret-key = "<40 Z85 characters>"     (secret file only)
//
// A secret file that anyone but its owner can read is refused, as ssh does:
// a key that leaked is no longer an identity.
//
// Thread-safety: free functions over the file system; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool::security {

inline constexpr size_t kZ85KeyChars = 40;  // a 32-byte key in Z85

struct KeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85; empty in a public-only pair
  bool operator==(const KeyPair&) const = default;
};

// Whether libzmq was built with CURVE (libsodium): without it nothing here
// can work, and a secured process refuses to start.
bool CurveAvailable();

// A fresh key pair (zmq_curve_keypair) whose secret's Z85 text holds no
// '%': it can be sent as an HTTP bearer credential verbatim (HTTP servers
// built on cpp-httplib 0.11 percent-decode header values). Unavailable
// without CURVE.
Result<KeyPair> GenerateKeyPair();

// The pair whose secret key is `secret_key` (zmq_curve_public derives the
// public half). InvalidArgument: not a Z85 key; Unavailable without CURVE.
Result<KeyPair> KeyPairOfSecret(std::string_view secret_key);

// 40 characters of the Z85 alphabet that decode to 32 bytes.
bool IsZ85Key(std::string_view key);

// Writes the secret file (mode 0600, created anew: AlreadyExists if the path
// exists, so a keygen never overwrites an identity) and, with the same
// checks, the public file. IoError on a failed write.
// kEphemeral skips the fsync: for a key that dies with its process (an rGPU
// session server's, drawn per session), whose loss in a crash costs
// nothing and whose fsync cost every session open tens of milliseconds.
enum class Durability { kSynced, kEphemeral };
Status WriteSecretKeyFile(const std::string& path, const KeyPair& pair, Durability durability = Durability::kSynced);
Status WritePublicKeyFile(const std::string& path, std::string_view public_key);

// Reads a secret file. NotFound: cannot be opened; FailedPrecondition: not a
// regular file, or readable or writable by group or others (the message says
// chmod 600); InvalidArgument: malformed, a key missing, or a secret key
// whose public key is not the one written beside it. Every message names
// the path.
Result<KeyPair> ReadSecretKeyFile(const std::string& path);

// Reads a public key: a public file, a secret file (its public key; the
// secret is not needed, so its mode is not checked here), or a file holding
// just the 40 Z85 characters. NotFound / InvalidArgument as above.
Result<std::string> ReadPublicKeyFile(const std::string& path);

}  // namespace gpool::security
