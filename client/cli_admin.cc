// The coordinator's own commands: `status` (replicas and cluster totals) and
// `admin replica add|remove|list` (Raft membership changes).
#include "client/cli_internal.h"

#include <algorithm>
#include <limits>

#include "client/format.h"
#include "protocol/base/endpoint.h"
#include "protocol/messages_admin.h"
#include "protocol/security/keys.h"
#include "protocol/types.h"

namespace gpool::cli {
namespace {

std::string JoinIds(const std::vector<uint64_t>& ids) {
  std::string out;
  for (uint64_t id : ids) {
    if (!out.empty()) out += ", ";
    out += std::to_string(id);
  }
  return out.empty() ? "none" : out;
}

int RunStatus(Session& s, const Invocation&) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ClusterStatus();
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatClusterStatus(*reply));
  return kExitOk;
}

constexpr char kReplicaAddUsage[] =
    "admin replica add ID --peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT]";
constexpr char kReplicaRemoveUsage[] = "admin replica remove ID [--force]";
constexpr char kReplicaListUsage[] = "admin replica list";

int RunReplicaChange(Session& s, const Invocation& inv, const std::string& op) {
  const auto& f = inv.flags;
  const bool add = op == "add";
  if (inv.positionals.size() != 3) {
    return s.Usage("usage: gpool " + std::string(add ? kReplicaAddUsage : kReplicaRemoveUsage));
  }
  if (!add) {
    for (const char* flag : {"peer-addr", "client-addr", "worker-addr"}) {
      if (f.count(flag)) return s.Usage(std::string("--") + flag + " only applies to 'admin replica add'");
    }
  } else if (f.count("force")) {
    return s.Usage("--force only applies to 'admin replica remove'");
  } else if (!f.count("peer-addr")) {
    return s.Usage("admin replica add: --peer-addr is required (usage: gpool " + std::string(kReplicaAddUsage) + ")");
  }
  auto id = ParseReplicaId(inv.positionals[2]);
  if (!id.ok()) return s.Fail(id.status());
  gpool::ChangeReplicas request;
  request.op = add ? ReplicaOp::kAdd : ReplicaOp::kRemove;
  request.replica_id = *id;
  request.force = f.count("force") > 0;
  if (add) {
    request.peer_address = f["peer-addr"].as<std::string>();
    if (Status valid = ValidateConnectEndpoint(request.peer_address, "--peer-addr"); !valid.ok()) return s.Fail(valid);
    if (f.count("client-addr")) {
      request.client_address = f["client-addr"].as<std::string>();
      if (Status valid = ValidateConnectEndpoint(request.client_address, "--client-addr"); !valid.ok()) return s.Fail(valid);
    }
    if (f.count("worker-addr")) {
      request.worker_address = f["worker-addr"].as<std::string>();
      if (Status valid = ValidateConnectEndpoint(request.worker_address, "--worker-addr"); !valid.ok()) return s.Fail(valid);
    }
    if (f.count("replica-key")) {
      auto key = security::ReadPublicKeyFile(f["replica-key"].as<std::string>());
      if (!key.ok()) return s.Fail(key.status().WithContext("--replica-key"));
      request.public_key = *key;
    }
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ChangeReplicas(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else {
    const bool learner = std::find(reply->learners.begin(), reply->learners.end(), *id) != reply->learners.end();
    s.out << "replica " << *id << (add ? " added" : " removed")
          << (learner ? " as a learner; it becomes a voter by itself once it has caught up" : "") << "; voters now "
          << JoinIds(reply->voters);
    if (!reply->learners.empty()) s.out << ", learners " << JoinIds(reply->learners);
    s.out << " (committed at index " << reply->index << ")\n";
  }
  return kExitOk;
}

int RunReplicaList(Session& s, const Invocation& inv) {
  if (inv.positionals.size() != 2) return s.Usage("usage: gpool " + std::string(kReplicaListUsage));
  for (const char* flag : {"peer-addr", "client-addr", "worker-addr"}) {
    if (inv.flags.count(flag)) return s.Usage(std::string("--") + flag + " only applies to 'admin replica add'");
  }
  if (inv.flags.count("force")) return s.Usage("--force only applies to 'admin replica remove'");
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ClusterStatus();
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatReplicasTable(*reply));
  return kExitOk;
}

int RunAdmin(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.empty()) {
    return s.Usage("admin: expected a subcommand: replica, user, role, bootstrap, keygen, node, join-token or snapshot");
  }
  if (p[0] == "user" || p[0] == "role" || p[0] == "bootstrap") return RunAdminUsers(s, inv);  // cli_users.cc
  if (p[0] == "keygen") return RunAdminKeygen(s, inv);                                           // cli_keys.cc
  if (p[0] == "node") return RunAdminNodeEnrol(s, inv);                                          // cli_keys.cc
  if (p[0] == "join-token") return RunAdminJoinToken(s, inv);                                    // cli_enrolment.cc
  if (p[0] == "snapshot") return RunAdminSnapshot(s, inv);                                       // cli_snapshot.cc
  if (p[0] != "replica") {
    return s.Usage("admin: unknown subcommand '" + p[0] +
                   "'; expected replica, user, role, bootstrap, keygen, node, join-token or snapshot");
  }
  if (p.size() < 2) return s.Usage("admin replica: expected add, remove, rotate-key or list");
  if (p[1] == "add" || p[1] == "remove") return RunReplicaChange(s, inv, p[1]);
  if (p[1] == "rotate-key") return RunReplicaRotateKey(s, inv);  // cli_replica_keys.cc
  if (p[1] == "list") return RunReplicaList(s, inv);
  return s.Usage("admin replica: unknown subcommand '" + p[1] + "'; expected add, remove, rotate-key or list");
}

void AdminOptions(cxxopts::Options& o) {
  o.add_options("admin")
      ("peer-addr", "replica add: where the new replica listens for its peers (required)",
       cxxopts::value<std::string>(), "ENDPOINT")
      ("client-addr", "replica add: its client endpoint, which followers name in redirects (default: none)",
       cxxopts::value<std::string>(), "ENDPOINT")
      ("worker-addr", "replica add: its worker endpoint, which followers name to workers when it leads "
       "(default: none; workers then find it only if it is in their --coordinator list)",
       cxxopts::value<std::string>(), "ENDPOINT")
      ("force", "replica remove: remove it even if fewer live voters than a quorum would remain");
  AdminUserOptions(o);
  AdminKeyOptions(o);
  EnrolmentOptions(o);
  AdminSnapshotOptions(o);
}

constexpr CommandForm kAdminForms[] = {
    {"replica add ID --peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT]",
     "replica add ID --peer-addr ENDPOINT",
     "add a running coordinator replica: a learner first, a voter once caught up (flags: 'gpool help admin')"},
    {"replica remove ID [--force]", "replica remove ID",
     "remove a coordinator replica; refused if too few live voters would remain, unless --force"},
    {"replica list", "replica list", "list the coordinator replicas and how far each lags behind the leader"},
    {"bootstrap NAME [--uid N] [--gid N]", "bootstrap NAME",
     "make this client's key the first admin of a fresh cluster (once)"},
    {"user create NAME [--key FILE]... [--uid N] [--gid N]", "user create NAME",
     "add a user: the keys it connects with, the Unix ids its tasks run as (default: a free uid of "
     "the coordinators' --uid-range)"},
    {"user update|delete|show|add-key|remove-key NAME ...", "user update|delete|show NAME",
     "change, remove or show a user; add or remove one of its keys (--key FILE)"},
    {"user list", "user list", "list the users, their roles and how many keys each has"},
    {"role grant|revoke USER ROLE [--queue Q]", "role grant|revoke USER ROLE",
     "admin, viewer, or queue-admin/member over --queue Q"},
    {"keygen --out PREFIX", "keygen --out PREFIX",
     "write a CurveZMQ key pair: PREFIX.key (secret, 0600) and PREFIX.pub"},
    {"node enrol NAME --node-key FILE", "node enrol NAME --node-key FILE",
     "bind a node's name to a new worker key (rotation); the old key stops counting"},
    {"join-token create --ttl DURATION [--labels K=V,...]", "join-token create --ttl DURATION",
     "print a single-use token that admits one new node at once (its worker's --join-token)"},
    {"join-token list|revoke ID", "join-token list|revoke ID", "list the join tokens, or revoke an unused one"},
    {"snapshot save FILE [--sign-key PREFIX.key]", "snapshot save FILE",
     "copy the leader's state into a snapshot file (a backup), signed with --sign-key"},
    {"snapshot restore FILE --data-dir DIR [--peers ID=ENDPOINT,...] [--verify-key PREFIX.pub]",
     "snapshot restore FILE --data-dir DIR",
     "write a new coordinator data dir from a snapshot file (every replica's, with the same --peers); with "
     "--verify-key, only a file that key signed"},
    {"snapshot info FILE [--verify-key PREFIX.pub]", "snapshot info FILE",
     "check a snapshot file (and its signature) and show what it holds"},
    {"snapshot keygen --out PREFIX", "snapshot keygen --out PREFIX",
     "write a snapshot signing key pair: PREFIX.key (secret, 0600) and PREFIX.pub"},
};

// cxxopts would take a negative replica ID for a flag ("Option '3' does not
// exist"); refuse it as the ID it was meant to be.
std::optional<int> PrepareAdmin(Session& s, Invocation&, std::vector<std::string>& rest) {
  for (size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    if (TakesValue(a) || a == "--peer-addr" || a == "--client-addr" || a == "--worker-addr" || a == "--data-dir" ||
        a == "--peers" || a == "--sign-key" || a == "--verify-key") {
      ++i;  // a flag's value, not an ID
    } else if (a.size() > 1 && a[0] == '-' && a.find_first_not_of("0123456789", 1) == std::string::npos) {
      return s.Fail(ParseReplicaId(a).status());
    }
  }
  return std::nullopt;
}

}  // namespace

const CommandDef kStatusCommand = {
    .name = "status",
    .synopsis = "",
    .summary = "show the coordinator replicas and cluster totals",
    .min_args = 0,
    .max_args = 0,
    .add_options = NoOptions,
    .run = RunStatus,
};

const CommandDef kAdminCommand = {
    .name = "admin",
    .synopsis = "replica|user|role|bootstrap|keygen|node|join-token|snapshot ...",
    .summary = "coordinator replicas, users and roles, the first admin, key pairs, node keys and backups",
    .min_args = 0,
    .max_args = 4,
    .add_options = AdminOptions,
    .run = RunAdmin,
    .forms = kAdminForms,
    .prepare = PrepareAdmin,
};

}  // namespace gpool::cli
