// `gpool admin snapshot save|restore|info|keygen`: backups of the
// coordinator's state (docs/operations.md "Backup and restore").
//   save FILE     copies the leader's state out (ExportSnapshot, admins
//                 only) into a snapshot file (protocol/snapshot_file.h),
//                 written beside FILE and renamed over it once complete and
//                 checked, so a failed save leaves FILE as it was; with
//                 --sign-key, a signed (format 3) file;
//   restore FILE  writes a new data dir from it, by running
//                 `gpool-coordinator --restore-snapshot` (the data dir's
//                 layout is the coordinator's own), which checks the
//                 signature against --verify-key;
//   info FILE     checks a file (and its signature, with --verify-key) and
//                 says what it holds;
//   keygen        writes a snapshot signing key pair (--out PREFIX: .key
//                 and .pub; protocol/snapshot_signing.h), issue 48.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "client/cli_internal.h"
#include "client/usage_time.h"
#include "protocol/base/sha256.h"
#include "protocol/messages_snapshot.h"
#include "protocol/snapshot_file.h"
#include "protocol/snapshot_signing.h"

namespace gpool::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kSaveUsage[] = "admin snapshot save FILE [--sign-key PREFIX.key]";
constexpr char kRestoreUsage[] =
    "admin snapshot restore FILE --data-dir DIR [--peers ID=ENDPOINT,...] [--verify-key PREFIX.pub]";
constexpr char kInfoUsage[] = "admin snapshot info FILE [--verify-key PREFIX.pub]";
constexpr char kSnapshotKeygenUsage[] = "admin snapshot keygen --out PREFIX";
// Restarts of an export a leader change lost midway.
constexpr int kSaveAttempts = 3;
// Taking the image of a large state takes seconds on the leader: the first
// request waits at least this long, so a slow start is not resent as a second export.
constexpr int kStartTimeoutMs = 120'000;

// One export read to its end into `out` (after the file's prefix); the header
// it describes. NotFound when the leader lost the export midway. With
// `sign_key`, a format 3 file: its digest signed (issue 48).
Result<SnapshotFileHeader> CopyExport(Client& client, std::ofstream& out, const std::string& source,
                                      const SnapshotKey* sign_key) {
  GPOOL_ASSIGN_OR_RETURN(ExportSnapshotReply reply,
                         client.ExportSnapshot(gpool::ExportSnapshot{.max_bytes = kMaxSnapshotChunkBytes}));
  SnapshotFileHeader header;
  header.index = reply.index;
  header.term = reply.term;
  header.taken_ms = reply.taken_ms;
  header.state_bytes = reply.total_bytes;
  header.sha256 = reply.sha256;
  header.source = "replica " + reply.replica_id + " via " + source;
  const std::string prefix = EncodeSnapshotFilePrefix(header, sign_key != nullptr ? 3 : 2);
  out << prefix;
  Sha256 hash;
  Sha256 file_hash;  // format 2's digest: header and image together (issue 48, finding 7)
  file_hash.Update(prefix);
  uint64_t written = 0;
  while (true) {
    if (reply.offset != written) {
      return Status::Malformed("the coordinator sent the chunk at " + std::to_string(reply.offset) + ", not at " +
                               std::to_string(written));
    }
    out.write(reply.data.data(), static_cast<std::streamsize>(reply.data.size()));
    hash.Update(reply.data);
    file_hash.Update(reply.data);
    written += reply.data.size();
    if (written >= header.state_bytes || reply.data.empty()) break;
    GPOOL_ASSIGN_OR_RETURN(reply, client.ExportSnapshot(gpool::ExportSnapshot{reply.export_id, written,
                                                                               kMaxSnapshotChunkBytes}));
  }
  if (written != header.state_bytes) {
    return Status::Malformed("the export ended after " + std::to_string(written) + " of " +
                             std::to_string(header.state_bytes) + " bytes");
  }
  if (const std::string digest = hash.HexDigest(); digest != header.sha256) {
    return Status::Malformed("the copy's sha256 is " + digest + ", the coordinator's " + header.sha256);
  }
  header.file_sha256 = file_hash.HexDigest();
  out << header.file_sha256;
  if (sign_key != nullptr) {
    GPOOL_ASSIGN_OR_RETURN(std::string trailer, SignSnapshotDigest(*sign_key, header.file_sha256));
    out << trailer;
    header.version = 3;
    header.key_id = sign_key->key_id();
  }
  return header;
}

Status SyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot reopen " + path + " to sync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Status::IoError("cannot sync " + path);
}

// `verified`: the signature was checked against a verify key (info).
void PrintHeader(Session& s, const std::string& path, const SnapshotFileHeader& h, std::string_view what,
                 bool verified = false) {
  if (s.json) {
    s.out << "{\"file\":\"" << path << "\",\"index\":" << h.index << ",\"term\":" << h.term
          << ",\"taken_ms\":" << h.taken_ms << ",\"state_bytes\":" << h.state_bytes << ",\"sha256\":\"" << h.sha256
          << "\",\"source\":\"" << h.source << "\",\"format\":" << h.version << ",\"key_id\":\"" << h.key_id
          << "\",\"signature_verified\":" << (verified ? "true" : "false") << "}\n";
    return;
  }
  s.out << what << " " << path << ": the state at log index " << h.index << " (term " << h.term << "), taken "
        << FormatUtc(h.taken_ms) << " from " << (h.source.empty() ? "?" : h.source) << "; " << h.state_bytes
        << " bytes, sha256 " << h.sha256 << "\n";
  if (h.version < 2) {
    s.out << "note: " << path << " is format 1: its header is range-checked but not covered by the checksum; "
          << "save a new snapshot to get format 2\n";
  }
  if (!h.key_id.empty()) {
    s.out << "signed by snapshot key " << h.key_id
          << (verified ? " (signature verified)" : what == "saved" ? "" : " (signature not verified: no --verify-key)")
          << "\n";
  }
}

int RunSave(Session& s, const Invocation& inv, const std::string& path) {
  // The signing key first: a key that cannot sign fails before the leader
  // is asked for an image.
  std::optional<SnapshotKey> sign_key;
  if (inv.flags.count("sign-key")) {
    auto key = SnapshotKey::ReadPrivate(inv.flags["sign-key"].as<std::string>());
    if (!key.ok()) return s.Fail(key.status().WithContext("--sign-key"));
    sign_key = std::move(*key);
  }
  // Beside the target, so the rename is within one file system.
  const std::string partial = path + ".partial-" + std::to_string(::getpid());
  s.options.timeout_ms = std::max(s.options.timeout_ms, kStartTimeoutMs);
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  Result<SnapshotFileHeader> header = Status::Internal("not attempted");
  for (int attempt = 1; attempt <= kSaveAttempts; ++attempt) {
    // Issue 48: the file holds every job's environment (its secrets): 0600
    // whatever the caller's umask, made so before a byte is written.
    const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || ::fchmod(fd, 0600) != 0) {
      if (fd >= 0) ::close(fd);
      return s.Fail(Status::IoError("cannot write " + partial + " (mode 0600)"));
    }
    ::close(fd);
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) return s.Fail(Status::IoError("cannot write " + partial));
    header = CopyExport(**client, out, s.options.endpoints, sign_key ? &*sign_key : nullptr);
    out.close();
    if (header.ok() && !out) header = Status::IoError("writing " + partial + " failed (disk full?)");
    if (header.ok() || header.status().code() != StatusCode::kNotFound) break;
    s.err << "gpool: the export was lost midway (" << header.status().message() << "); starting again\n";
  }
  std::error_code ec;
  if (header.ok()) {
    if (Status synced = SyncFile(partial); !synced.ok()) header = synced;
  }
  if (!header.ok()) {
    fs::remove(partial, ec);
    return s.Fail(header.status().WithContext("saving a snapshot to " + path));
  }
  fs::rename(partial, path, ec);
  if (ec) {
    fs::remove(partial, ec);
    return s.Fail(Status::IoError("cannot rename the finished copy to " + path + ": " + ec.message()));
  }
  PrintHeader(s, path, *header, "saved");
  return kExitOk;
}

// gpool-coordinator beside this program (an install), in the build tree's
// control/ (a build), or on PATH.
std::string CoordinatorProgram() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate : {self.parent_path() / "gpool-coordinator",
                                      self.parent_path().parent_path() / "control" / "gpool-coordinator"}) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "gpool-coordinator";
}

int RunRestore(Session& s, const Invocation& inv, const std::string& path) {
  if (!inv.flags.count("data-dir")) return s.Usage("usage: gpool " + std::string(kRestoreUsage));
  if (!s.env.run_program) return s.Fail(Status::Unavailable("this gpool cannot run gpool-coordinator"));
  std::vector<std::string> argv = {CoordinatorProgram(), "--restore-snapshot", path, "--data-dir",
                                   inv.flags["data-dir"].as<std::string>()};
  if (inv.flags.count("peers")) {
    argv.push_back("--peers");
    argv.push_back(inv.flags["peers"].as<std::string>());
  }
  if (inv.flags.count("verify-key")) {
    argv.push_back("--snapshot-verify-key");
    argv.push_back(inv.flags["verify-key"].as<std::string>());
  }
  auto rc = s.env.run_program(argv);
  if (!rc.ok()) return s.Fail(rc.status().WithContext("running " + argv[0]));
  return *rc;
}

int RunSnapshotInfo(Session& s, const Invocation& inv, const std::string& path) {
  std::optional<SnapshotKey> verify_key;
  if (inv.flags.count("verify-key")) {
    auto key = SnapshotKey::ReadPublic(inv.flags["verify-key"].as<std::string>());
    if (!key.ok()) return s.Fail(key.status().WithContext("--verify-key"));
    verify_key = std::move(*key);
  }
  auto header = VerifySnapshotFile(path);
  if (!header.ok()) return s.Fail(header.status());
  if (Status checked = CheckSnapshotSignature(*header, verify_key ? &*verify_key : nullptr, path); !checked.ok()) {
    return s.Fail(checked);
  }
  PrintHeader(s, path, *header, "checked", verify_key.has_value());
  return kExitOk;
}

// Made where backups are saved; only the .pub travels to where they are
// restored (docs/operations.md "Signed snapshots").
int RunSnapshotKeygen(Session& s, const Invocation& inv) {
  if (inv.positionals.size() != 2 || !inv.flags.count("out")) {
    return s.Usage("usage: gpool " + std::string(kSnapshotKeygenUsage));
  }
  const std::string prefix = inv.flags["out"].as<std::string>();
  if (prefix.empty()) return s.Usage("--out: must not be empty");
  auto key = SnapshotKey::Generate();
  if (!key.ok()) return s.Fail(key.status());
  if (Status written = WriteSnapshotKeyFiles(*key, prefix); !written.ok()) return s.Fail(written);
  if (s.json) {
    s.out << "{\"sign_key_file\":\"" << prefix << ".key\",\"verify_key_file\":\"" << prefix
          << ".pub\",\"key_id\":\"" << key->key_id() << "\"}\n";
  } else {
    s.out << "wrote snapshot signing key " << key->key_id() << ": " << prefix << ".key (secret, 0600: "
          << "'admin snapshot save --sign-key') and " << prefix << ".pub ('admin snapshot restore --verify-key')\n";
  }
  return kExitOk;
}

}  // namespace

int RunAdminSnapshot(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  const std::string op = p.size() > 1 ? p[1] : "";
  if (op != "save" && op != "restore" && op != "info" && op != "keygen") {
    return s.Usage("admin snapshot: expected save, restore, info or keygen");
  }
  if (op != "restore" && (inv.flags.count("data-dir") || inv.flags.count("peers"))) {
    return s.Usage("--data-dir and --peers only apply to 'admin snapshot restore'");
  }
  if (op != "save" && inv.flags.count("sign-key")) return s.Usage("--sign-key only applies to 'admin snapshot save'");
  if (op != "restore" && op != "info" && inv.flags.count("verify-key")) {
    return s.Usage("--verify-key only applies to 'admin snapshot restore' and 'admin snapshot info'");
  }
  if (op == "keygen") return RunSnapshotKeygen(s, inv);
  const char* usage = op == "save" ? kSaveUsage : op == "restore" ? kRestoreUsage : kInfoUsage;
  if (p.size() != 3) return s.Usage("usage: gpool " + std::string(usage));
  if (op == "save") return RunSave(s, inv, p[2]);
  if (op == "restore") return RunRestore(s, inv, p[2]);
  return RunSnapshotInfo(s, inv, p[2]);
}

void AdminSnapshotOptions(cxxopts::Options& o) {
  o.add_options("admin")
      ("data-dir", "snapshot restore: the new data dir to write (must be empty or absent)",
       cxxopts::value<std::string>(), "DIR")
      ("peers", "snapshot restore: the replicas of the restored cluster, as the coordinators' --peers "
       "(ID=ENDPOINT,...; only the ids are kept). Without it, a single replica's data dir",
       cxxopts::value<std::string>(), "LIST")
      ("sign-key", "snapshot save: sign the file with this snapshot signing key (PREFIX.key of "
       "'admin snapshot keygen')", cxxopts::value<std::string>(), "FILE")
      ("verify-key", "snapshot restore|info: refuse a file this public key (PREFIX.pub) did not sign, or that "
       "changed since", cxxopts::value<std::string>(), "FILE");
}

}  // namespace gpool::cli
