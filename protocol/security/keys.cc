#include "protocol/security/keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <map>

#include <zmq.h>

#include "protocol/base/text.h"
#include "protocol/base/write_all.h"

namespace gpool::security {
namespace {

// Large enough for any key file a person writes, small enough that a wrong
// path (a log, a device) is refused without reading it all.
constexpr size_t kMaxKeyFileBytes = 4096;

std::string Errno() { return std::strerror(errno); }

// The whole file behind an open descriptor, at most kMaxKeyFileBytes.
Result<std::string> ReadAll(int fd, const std::string& path) {
  std::string content;
  std::array<char, 1024> buffer{};
  while (true) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError("reading key file " + path + ": " + Errno());
    }
    if (n == 0) return content;
    content.append(buffer.data(), static_cast<size_t>(n));
    if (content.size() > kMaxKeyFileBytes) {
      return Status::InvalidArgument("key file " + path + " is larger than " + std::to_string(kMaxKeyFileBytes) +
                                     " bytes: not a key file");
    }
  }
}

// `name = "value"` lines; '#' starts a comment line. A file of one bare Z85
// key is {"": key}.
Result<std::map<std::string, std::string>> ParseKeyFile(std::string_view content, const std::string& path) {
  std::map<std::string, std::string> fields;
  size_t line_no = 0;
  while (!content.empty()) {
    const size_t end = content.find('\n');
    std::string_view line = TrimSpace(content.substr(0, end));
    content = end == std::string_view::npos ? std::string_view() : content.substr(end + 1);
    ++line_no;
    // A bare key first: Z85 has '#' and '=' in its alphabet, so a key may
    // look like a comment or a field, but no comment or field is 40 Z85
    // characters ('"' and ' ' are not in it).
    if (IsZ85Key(line) && fields.empty()) {
      fields[""] = std::string(line);
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("key file " + path + " line " + std::to_string(line_no) +
                                     ": expected name = \"value\"");
    }
    const std::string name(TrimSpace(line.substr(0, eq)));
    std::string_view value = TrimSpace(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (!fields.emplace(name, std::string(value)).second) {
      return Status::InvalidArgument("key file " + path + ": " + name + " is given twice");
    }
  }
  return fields;
}

Result<std::string> KeyField(const std::map<std::string, std::string>& fields, const std::string& name,
                             const std::string& path) {
  auto it = fields.find(name);
  if (it == fields.end()) return Status::InvalidArgument("key file " + path + " has no " + name);
  if (!IsZ85Key(it->second)) {
    return Status::InvalidArgument("key file " + path + ": " + name + " is not a 40-character Z85 key");
  }
  return it->second;
}

Status WriteNewFile(const std::string& path, mode_t mode, const std::string& content, bool durable = true) {
  // O_EXCL: never replace an existing identity; O_NOFOLLOW: never write
  // through a link someone planted. fchmod: the umask must not widen nor
  // narrow what the file needs.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) return Status::AlreadyExists("key file " + path + " exists; not overwritten");
    return Status::IoError("cannot create key file " + path + ": " + Errno());
  }
  Status status;
  if (fchmod(fd, mode) != 0) status = Status::IoError("chmod " + path + ": " + Errno());
  if (status.ok() && !WriteAll(fd, content)) status = Status::IoError("writing key file " + path + ": " + Errno());
  if (status.ok() && durable && fsync(fd) != 0) status = Status::IoError("fsync " + path + ": " + Errno());
  close(fd);
  if (!status.ok()) unlink(path.c_str());
  return status;
}

}  // namespace

bool CurveAvailable() { return zmq_has("curve") != 0; }

bool IsZ85Key(std::string_view key) {
  if (key.size() != kZ85KeyChars) return false;
  const std::string copy(key);
  std::array<uint8_t, 32> decoded{};
  return zmq_z85_decode(decoded.data(), copy.c_str()) != nullptr;
}

Result<KeyPair> GenerateKeyPair() {
  if (!CurveAvailable()) return Status::Unavailable("libzmq was built without CURVE (libsodium)");
  std::array<char, kZ85KeyChars + 1> public_key{};
  std::array<char, kZ85KeyChars + 1> secret_key{};
  // Drawn again while the secret's text holds a '%' (38 % of draws; the
  // keys that remain are 2^255.3 of 2^256): a user's secret key is also
  // the HTTP bearer credential, and cpp-httplib 0.11 (Debian 12) percent-
  // decodes header values, so "%41" in a key arrived as "A" and the key
  // was refused (keys.h).
  for (int draw = 0;; ++draw) {
    if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
      return Status::Internal(std::string("zmq_curve_keypair: ") + zmq_strerror(zmq_errno()));
    }
    if (std::string_view(secret_key.data()).find('%') == std::string_view::npos) break;
    if (draw == 1000) return Status::Internal("zmq_curve_keypair: 1000 secret keys in a row held a '%'");
  }
  return KeyPair{public_key.data(), secret_key.data()};
}

Result<KeyPair> KeyPairOfSecret(std::string_view secret_key) {
  if (!IsZ85Key(secret_key)) return Status::InvalidArgument("not a Z85 secret key");
  const std::string secret(secret_key);
  std::array<char, kZ85KeyChars + 1> derived{};
  if (zmq_curve_public(derived.data(), secret.c_str()) != 0) {
    return Status::Unavailable(std::string("zmq_curve_public: ") + zmq_strerror(zmq_errno()));
  }
  return KeyPair{derived.data(), secret};
}

Status WriteSecretKeyFile(const std::string& path, const KeyPair& pair, Durability durability) {
  if (!IsZ85Key(pair.public_key) || !IsZ85Key(pair.secret_key)) {
    return Status::InvalidArgument("not a Z85 key pair; nothing written to " + path);
  }
  const std::string content =
      "# gpool CurveZMQ secret key file: keep it mode 0600, never copy it off this machine.\n"
      "public-key = \"" + pair.public_key + "\"\n"
      "secret-key = \"" + pair.secret_key + "\"\n";
  return WriteNewFile(path, 0600, content, durability == Durability::kSynced);
}

Status WritePublicKeyFile(const std::string& path, std::string_view public_key) {
  if (!IsZ85Key(public_key)) return Status::InvalidArgument("not a Z85 public key; nothing written to " + path);
  const std::string content = "# gpool CurveZMQ public key: hand it to whoever must admit this key.\n"
                              "public-key = \"" + std::string(public_key) + "\"\n";
  return WriteNewFile(path, 0644, content);
}

Result<KeyPair> ReadSecretKeyFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::NotFound("cannot open secret key file " + path + ": " + Errno());
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const std::string why = Errno();
    close(fd);
    return Status::IoError("stat " + path + ": " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::FailedPrecondition("secret key file " + path + " is not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    close(fd);
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::FailedPrecondition("secret key file " + path + " has mode " + mode +
                                      ": group or others may use it; chmod 600 " + path + " (or replace the key)");
  }
  auto content = ReadAll(fd, path);
  close(fd);
  if (!content.ok()) return content.status();
  GPOOL_ASSIGN_OR_RETURN(auto fields, ParseKeyFile(*content, path));
  KeyPair pair;
  GPOOL_ASSIGN_OR_RETURN(pair.public_key, KeyField(fields, "public-key", path));
  GPOOL_ASSIGN_OR_RETURN(pair.secret_key, KeyField(fields, "secret-key", path));
  // A secret key written beside another's public key would authenticate as
  // someone the operator did not mean: derive it and compare.
  auto derived = KeyPairOfSecret(pair.secret_key);
  if (!derived.ok() || derived->public_key != pair.public_key) {
    return Status::InvalidArgument("key file " + path + ": its public-key is not the secret-key's");
  }
  return pair;
}

Result<std::string> ReadPublicKeyFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::NotFound("cannot open public key file " + path + ": " + Errno());
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::FailedPrecondition("public key file " + path + " is not a regular file");
  }
  auto content = ReadAll(fd, path);
  close(fd);
  if (!content.ok()) return content.status();
  GPOOL_ASSIGN_OR_RETURN(auto fields, ParseKeyFile(*content, path));
  if (auto bare = fields.find(""); bare != fields.end()) return bare->second;
  return KeyField(fields, "public-key", path);
}

}  // namespace gpool::security
