// Key management commands: `gpool admin keygen --out PREFIX` writes a
// CurveZMQ key pair for a user, a node or a coordinator replica (issue 31).
// Nothing here talks to the coordinator: a key is made where it is used, and
// only its public half travels (docs/operations.md "Keys").
#include <filesystem>

#include "client/cli_internal.h"
#include "protocol/model/node_update.h"
#include "protocol/security/keys.h"
#include "topology/quantity.h"

namespace gpool::cli {

constexpr char kKeygenUsage[] = "admin keygen --out PREFIX";

int RunAdminKeygen(Session& s, const Invocation& inv) {
  if (inv.positionals.size() != 1 || !inv.flags.count("out")) return s.Usage("usage: gpool " + std::string(kKeygenUsage));
  const std::string prefix = inv.flags["out"].as<std::string>();
  if (prefix.empty()) return s.Usage("--out: must not be empty");
  const std::string secret = prefix + ".key";
  const std::string public_file = prefix + ".pub";
  // Neither file is written when either exists: a half-replaced identity
  // (a new secret beside an old public key) is worse than none.
  for (const std::string& path : {secret, public_file}) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
      return s.Fail(Status::AlreadyExists(path + " exists; not overwritten (move it away to make a new key)"));
    }
  }
  auto pair = security::GenerateKeyPair();
  if (!pair.ok()) return s.Fail(pair.status());
  if (Status written = security::WriteSecretKeyFile(secret, *pair); !written.ok()) return s.Fail(written);
  if (Status written = security::WritePublicKeyFile(public_file, pair->public_key); !written.ok()) {
    std::filesystem::remove(secret);
    return s.Fail(written);
  }
  if (s.json) {
    s.out << "{\"secret_key_file\":\"" << secret << "\",\"public_key_file\":\"" << public_file
          << "\",\"public_key\":\"" << pair->public_key << "\"}\n";
  } else {
    s.out << "wrote " << secret << " (secret key, mode 0600: keep it on this machine)\n"
          << "wrote " << public_file << " (public key " << pair->public_key << ")\n";
  }
  return kExitOk;
}

constexpr char kEnrolUsage[] = "admin node enrol NAME --node-key FILE [--grace DURATION]";

int RunAdminNodeEnrol(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.size() != 3 || p[1] != "enrol" || !inv.flags.count("node-key")) {
    return s.Usage("usage: gpool " + std::string(kEnrolUsage));
  }
  auto key = security::ReadPublicKeyFile(inv.flags["node-key"].as<std::string>());
  if (!key.ok()) return s.Fail(key.status().WithContext("--node-key"));
  gpool::UpdateNode request;
  request.node = p[2];
  request.op = NodeUpdateOp::kWorkerKey;
  request.key = *key;
  // A rotation's grace: the node's old key keeps working this long, so its
  // running worker can be moved to the new key without a gap. Default 0:
  // refused at once, as before issue 48.
  if (inv.flags.count("grace")) {
    auto grace = topology::ParseDurationMs(inv.flags["grace"].as<std::string>());
    if (!grace.ok()) return s.Fail(Status::InvalidArgument("--grace: expected a duration like 10m or 24h"));
    request.grace_ms = *grace;
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->UpdateNode(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << "{\"node\":\"" << p[2] << "\",\"public_key\":\"" << *key << "\",\"grace_ms\":" << request.grace_ms
          << "}\n";
  } else if (request.grace_ms > 0) {
    s.out << "node " << p[2] << " is bound to key " << *key << "; its previous key is still admitted for "
          << inv.flags["grace"].as<std::string>() << ": restart its worker with the new secret key before then\n";
  } else {
    s.out << "node " << p[2] << " is bound to key " << *key
          << "; its worker must now connect with the matching secret key\n";
  }
  return kExitOk;
}

void AdminKeyOptions(cxxopts::Options& o) {
  o.add_options("admin")
      ("out", "keygen, snapshot keygen: write the key pair to PREFIX.key (secret, 0600) and PREFIX.pub",
       cxxopts::value<std::string>(), "PREFIX")
      ("node-key", "node enrol: the node's new public key file (rotation: the old key stops counting at once, "
       "or after --grace)", cxxopts::value<std::string>(), "FILE")
      ("grace", "node enrol, user rotate-key, replica rotate-key: how long the replaced key is still admitted "
       "(10m, 24h; default 0, at most 30d)",
       cxxopts::value<std::string>(), "DURATION")
      ("replica-key", "replica add: the new replica's public key file (a CurveZMQ cluster needs it); "
       "replica rotate-key: the replica's new public key file",
       cxxopts::value<std::string>(), "FILE");
}

}  // namespace gpool::cli
