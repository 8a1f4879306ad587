// SHA-256 over a stream of bytes (libsodium's, which libzmq's CurveZMQ
// already brings), as lowercase hex: what snapshot files and exports are
// checked by, so a damaged or truncated backup is refused before a
// coordinator is built from it.
//
// Thread-safety: an object is used by one thread at a time.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace gpool {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  // The digest of everything updated so far, as 64 hex digits. Call once.
  std::string HexDigest();

  static std::string Of(std::string_view bytes);

 private:
  // crypto_hash_sha256_state, kept opaque so includers need no sodium.h.
  alignas(16) std::array<unsigned char, 128> state_;
};

}  // namespace gpool
