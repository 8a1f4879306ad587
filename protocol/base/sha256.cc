#include "protocol/base/sha256.h"

#include <sodium.h>

namespace gpool {

static_assert(sizeof(crypto_hash_sha256_state) <= 128, "Sha256::state_ too small for libsodium's state");

namespace {
crypto_hash_sha256_state* StateOf(std::array<unsigned char, 128>& bytes) {
  return reinterpret_cast<crypto_hash_sha256_state*>(bytes.data());
}
}  // namespace

Sha256::Sha256() {
  // Idempotent and thread-safe; SHA-256 itself needs no set-up, but libsodium
  // asks for it before any call.
  static const int initialised = sodium_init();
  (void)initialised;
  crypto_hash_sha256_init(StateOf(state_));
}

void Sha256::Update(std::string_view bytes) {
  crypto_hash_sha256_update(StateOf(state_), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(StateOf(state_), digest);
  char hex[crypto_hash_sha256_BYTES * 2 + 1];
  sodium_bin2hex(hex, sizeof(hex), digest, sizeof(digest));
  return std::string(hex, crypto_hash_sha256_BYTES * 2);
}

std::string Sha256::Of(std::string_view bytes) {
  Sha256 hash;
  hash.Update(bytes);
  return hash.HexDigest();
}

}  // namespace gpool
