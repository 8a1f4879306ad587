// Ed25519 keys that sign snapshot files (issue 48): whoever saves a backup
// with the private key (`gpool admin snapshot save --sign-key FILE`) writes
// a format 3 file (snapshot_file.h), and a restore given the public key
// (`gpool-coordinator --restore-snapshot ... --snapshot-verify-key FILE`)
// refuses any file that key did not sign, or that changed after it did.
//
// A key of its own, not the cluster's CurveZMQ admin key: CurveZMQ keys are
// X25519, which agrees keys and cannot sign. The keys are OpenSSL's (EVP),
// stored as PEM (PKCS#8 private key, SubjectPublicKeyInfo public key), so
// `openssl pkey` reads them. This is a library apart from gpool_protocol so
// that libcrypto is linked only into what signs or verifies (the CLI and the
// coordinator's restore), not into the worker and every other protocol user.
//
// A key's id is the first 16 hex digits of the SHA-256 of its raw 32-byte
// public key: a format 3 file names the key that signed it, so a restore can
// say "signed by another key" instead of only "the signature is wrong".
//
// Thread-safety: a SnapshotKey is immutable once made; copies share the key.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "protocol/base/status.h"
#include "protocol/snapshot_file.h"

// OpenSSL's EVP_PKEY, kept opaque so includers need no OpenSSL headers.
struct evp_pkey_st;

namespace gpool {

class SnapshotKey {
 public:
  // A new random key pair.
  static Result<SnapshotKey> Generate();
  // A private key file as WriteSnapshotKeyFiles writes it: NotFound, or
  // FailedPrecondition when group or others may read it, or InvalidArgument
  // when it holds no Ed25519 private key.
  static Result<SnapshotKey> ReadPrivate(const std::string& path);
  // A public key file (PREFIX.pub): it verifies and cannot sign. A private key
  // file is refused: the verifying hosts need never hold the signing key.
  static Result<SnapshotKey> ReadPublic(const std::string& path);

  bool can_sign() const { return can_sign_; }
  const std::string& key_id() const { return key_id_; }
  std::string PublicPem() const;
  // FailedPrecondition for a public-only key.
  Result<std::string> PrivatePem() const;

  // The 64-byte Ed25519 signature of `message`, as 128 hex digits.
  Result<std::string> Sign(std::string_view message) const;
  bool Verify(std::string_view message, std::string_view signature_hex) const;

 private:
  SnapshotKey(std::shared_ptr<evp_pkey_st> key, bool can_sign);

  std::shared_ptr<evp_pkey_st> key_;
  bool can_sign_ = false;
  std::string key_id_;
};

// Writes the private key to `prefix`.key (mode 0600) and the public key to
// `prefix`.pub (0644), as `gpool admin keygen` names a CurveZMQ pair;
// AlreadyExists, writing nothing, when either exists.
Status WriteSnapshotKeyFiles(const SnapshotKey& key, const std::string& prefix);

// The format 3 trailer (EncodeSnapshotFileTrailer) for a file whose digest
// is `file_sha256`: the key's id and its signature of SnapshotSignedMessage.
Result<std::string> SignSnapshotDigest(const SnapshotKey& key, std::string_view file_sha256);

// A whole format 3 file in memory: prefix, image, digest, trailer.
Result<std::string> EncodeSignedSnapshotFile(const SnapshotFileHeader& header, std::string_view image,
                                             const SnapshotKey& key);

// What a restore requires of a file read by ReadSnapshotFile (which checked
// its digest). Without a verify key: nothing. With one: Unauthenticated for
// a file that is not signed (format 1 or 2), one signed by another key, or
// one whose signature does not verify (edited and re-digested after signing,
// or forged); each message names `path` and says that nothing was restored.
Status CheckSnapshotSignature(const SnapshotFileHeader& header, const SnapshotKey* verify_key,
                              std::string_view path);

}  // namespace gpool
