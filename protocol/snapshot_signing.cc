#include "protocol/snapshot_signing.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "protocol/base/sha256.h"
#include "protocol/base/write_all.h"

namespace gpool {
namespace snapshot_signing_detail {

constexpr size_t kEd25519KeyBytes = 32;
constexpr size_t kEd25519SignatureBytes = 64;
// A PEM Ed25519 key is ~120 bytes; anything far larger is not one.
constexpr size_t kMaxKeyFileBytes = 16 * 1024;

// OpenSSL's reason for the last failure, for the message of a Status.
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  std::array<char, 256> text{};
  ERR_error_string_n(code, text.data(), text.size());
  return text.data();
}

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

std::shared_ptr<evp_pkey_st> Own(EVP_PKEY* key) { return std::shared_ptr<evp_pkey_st>(key, EVP_PKEY_free); }

// No passphrase prompt on a terminal: an encrypted key is refused instead.
int RefusePassphrase(char*, int, int, void*) { return -1; }

std::string ToHex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}

bool FromHex(std::string_view hex, unsigned char* out, size_t size) {
  if (hex.size() != size * 2) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < size; ++i) {
    const int high = nibble(hex[2 * i]);
    const int low = nibble(hex[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<unsigned char>(high << 4 | low);
  }
  return true;
}

// A key file's text; `secret` files must be private to their owner, as ssh
// and the CurveZMQ key files (security/keys.h) require.
Result<std::string> ReadKeyFile(const std::string& path, bool secret) {
  const char* what = secret ? "snapshot signing key file " : "snapshot verify key file ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return Status::NotFound(std::string("no ") + what + path);
    return Status::IoError(std::string("cannot open ") + what + path + ": " + std::strerror(error));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::FailedPrecondition(std::string(what) + path + " is not a regular file");
  }
  if (secret && (st.st_mode & 077) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::FailedPrecondition(std::string(what) + path + " has mode " + mode +
                                      ": group or others may read it; chmod 600 " + path + " (or make a new key)");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxKeyFileBytes) {
    ::close(fd);
    return Status::InvalidArgument(std::string(what) + path + " is " + std::to_string(st.st_size) +
                                   " bytes: not a PEM Ed25519 key");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got != text.size()) return Status::IoError(std::string("cannot read ") + what + path);
  return text;
}

// Creates `path` with `mode` and writes `text`; AlreadyExists if it exists.
Status WriteNewKeyFile(const std::string& path, mode_t mode, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    const int error = errno;
    if (error == EEXIST) return Status::AlreadyExists(path + " exists: a key is never overwritten; move it aside");
    return Status::IoError("cannot create " + path + ": " + std::strerror(error));
  }
  // Whatever the umask: the private key 0600, the public key 0644.
  bool ok = ::fchmod(fd, mode) == 0;
  ok = ok && WriteAll(fd, text);
  ok = ok && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return Status::IoError("cannot write " + path + " (disk full?)");
  }
  return Status::Ok();
}

std::string WritePem(EVP_PKEY* key, bool secret) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio) return "";
  const int ok = secret ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                        : PEM_write_bio_PUBKEY(bio.get(), key);
  if (ok != 1) return "";
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string();
}

}  // namespace snapshot_signing_detail

namespace ssd = snapshot_signing_detail;

SnapshotKey::SnapshotKey(std::shared_ptr<evp_pkey_st> key, bool can_sign)
    : key_(std::move(key)), can_sign_(can_sign) {
  std::array<unsigned char, ssd::kEd25519KeyBytes> raw{};
  size_t size = raw.size();
  if (EVP_PKEY_get_raw_public_key(key_.get(), raw.data(), &size) == 1 && size == raw.size()) {
    key_id_ = Sha256::Of(std::string_view(reinterpret_cast<const char*>(raw.data()), size))
                  .substr(0, kSnapshotKeyIdChars);
  }
}

Result<SnapshotKey> SnapshotKey::Generate() {
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr),
                                                                  EVP_PKEY_CTX_free);
  EVP_PKEY* key = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &key) != 1) {
    return Status::Internal("generating an Ed25519 key: " + ssd::OpenSslError());
  }
  return SnapshotKey(ssd::Own(key), true);
}

Result<SnapshotKey> SnapshotKey::ReadPrivate(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(std::string text, ssd::ReadKeyFile(path, /*secret=*/true));
  ssd::BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, ssd::RefusePassphrase, nullptr) : nullptr;
  if (key == nullptr) {
    ERR_clear_error();
    return Status::InvalidArgument("snapshot signing key file " + path +
                                   " holds no unencrypted PEM private key (make one with "
                                   "'gpool admin snapshot keygen --out PREFIX')");
  }
  auto owned = ssd::Own(key);
  if (EVP_PKEY_id(key) != EVP_PKEY_ED25519) {
    return Status::InvalidArgument("snapshot signing key file " + path + " holds a " +
                                   OBJ_nid2sn(EVP_PKEY_id(key)) + " key, not an Ed25519 one");
  }
  return SnapshotKey(std::move(owned), true);
}

Result<SnapshotKey> SnapshotKey::ReadPublic(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(std::string text, ssd::ReadKeyFile(path, /*secret=*/false));
  if (text.find("PRIVATE KEY-----") != std::string::npos) {
    return Status::InvalidArgument("snapshot verify key file " + path +
                                   " holds a private key: give its public half (the .pub file "
                                   "'gpool admin snapshot keygen' wrote beside it)");
  }
  ssd::BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  EVP_PKEY* key = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, ssd::RefusePassphrase, nullptr) : nullptr;
  if (key == nullptr) {
    ERR_clear_error();
    return Status::InvalidArgument("snapshot verify key file " + path + " holds no PEM public key");
  }
  auto owned = ssd::Own(key);
  if (EVP_PKEY_id(key) != EVP_PKEY_ED25519) {
    return Status::InvalidArgument("snapshot verify key file " + path + " holds a " +
                                   OBJ_nid2sn(EVP_PKEY_id(key)) + " key, not an Ed25519 one");
  }
  return SnapshotKey(std::move(owned), false);
}

std::string SnapshotKey::PublicPem() const { return ssd::WritePem(key_.get(), false); }

Result<std::string> SnapshotKey::PrivatePem() const {
  if (!can_sign_) return Status::FailedPrecondition("a snapshot verify key has no private half");
  std::string pem = ssd::WritePem(key_.get(), true);
  if (pem.empty()) return Status::Internal("encoding the snapshot signing key: " + ssd::OpenSslError());
  return pem;
}

Result<std::string> SnapshotKey::Sign(std::string_view message) const {
  if (!can_sign_) return Status::FailedPrecondition("a snapshot verify key (a .pub file) cannot sign");
  ssd::MdCtxPtr ctx(EVP_MD_CTX_new());
  std::array<unsigned char, ssd::kEd25519SignatureBytes> signature{};
  size_t size = signature.size();
  // Ed25519 hashes internally: no digest is named, and it signs in one call.
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), signature.data(), &size, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1 ||
      size != signature.size()) {
    return Status::Internal("signing with the snapshot key: " + ssd::OpenSslError());
  }
  return ssd::ToHex(signature.data(), size);
}

bool SnapshotKey::Verify(std::string_view message, std::string_view signature_hex) const {
  std::array<unsigned char, ssd::kEd25519SignatureBytes> signature{};
  if (!ssd::FromHex(signature_hex, signature.data(), signature.size())) return false;
  ssd::MdCtxPtr ctx(EVP_MD_CTX_new());
  const bool valid = ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) == 1 &&
                     EVP_DigestVerify(ctx.get(), signature.data(), signature.size(),
                                      reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  ERR_clear_error();
  return valid;
}

Status WriteSnapshotKeyFiles(const SnapshotKey& key, const std::string& prefix) {
  const std::string path = prefix + ".key";
  const std::string public_path = prefix + ".pub";
  struct stat st {};
  // Neither is written when either exists: a new private key beside an old
  // public one would sign files its own .pub does not verify.
  if (::lstat(public_path.c_str(), &st) == 0) {
    return Status::AlreadyExists(public_path + " exists: a key is never overwritten; move it aside");
  }
  GPOOL_ASSIGN_OR_RETURN(std::string private_pem, key.PrivatePem());
  const std::string public_pem = key.PublicPem();
  if (public_pem.empty()) return Status::Internal("encoding the snapshot verify key: " + ssd::OpenSslError());
  GPOOL_RETURN_IF_ERROR(ssd::WriteNewKeyFile(path, 0600, private_pem));
  if (Status written = ssd::WriteNewKeyFile(public_path, 0644, public_pem); !written.ok()) {
    ::unlink(path.c_str());
    return written;
  }
  return Status::Ok();
}

Result<std::string> SignSnapshotDigest(const SnapshotKey& key, std::string_view file_sha256) {
  GPOOL_ASSIGN_OR_RETURN(std::string signature, key.Sign(SnapshotSignedMessage(file_sha256)));
  return EncodeSnapshotFileTrailer(key.key_id(), signature);
}

Result<std::string> EncodeSignedSnapshotFile(const SnapshotFileHeader& header, std::string_view image,
                                             const SnapshotKey& key) {
  std::string out = EncodeSnapshotFilePrefix(header, 3);
  out += image;
  const std::string digest = Sha256::Of(out);
  out += digest;
  GPOOL_ASSIGN_OR_RETURN(std::string trailer, SignSnapshotDigest(key, digest));
  return out + trailer;
}

Status CheckSnapshotSignature(const SnapshotFileHeader& header, const SnapshotKey* verify_key,
                              std::string_view path) {
  if (verify_key == nullptr) return Status::Ok();
  const std::string file(path);
  if (header.version < 3 || header.signature.empty()) {
    return Status::Unauthenticated(file + " is not signed (format " + std::to_string(header.version) +
                                   ") and a verify key was given (key " + verify_key->key_id() +
                                   "): save it again with --sign-key; nothing was restored");
  }
  if (header.key_id != verify_key->key_id()) {
    return Status::Unauthenticated(file + " is signed by key " + header.key_id + ", not by the verify key " +
                                   verify_key->key_id() + "; nothing was restored");
  }
  if (header.file_sha256.empty() || !verify_key->Verify(SnapshotSignedMessage(header.file_sha256), header.signature)) {
    return Status::Unauthenticated(file + ": the signature of key " + header.key_id +
                                   " does not verify: the file changed after it was signed, or the signature "
                                   "is forged; nothing was restored");
  }
  return Status::Ok();
}

}  // namespace gpool
