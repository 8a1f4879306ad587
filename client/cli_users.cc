// Users, roles and the audit stream from the command line (issue 31):
//   gpool whoami
//   gpool audit [--after SEQ] [--limit N]
//   gpool admin bootstrap NAME [--uid N] [--gid N]
//   gpool admin user create|update|delete|show|list|add-key|remove-key|rotate-key ...
//   gpool admin role grant|revoke USER ROLE [--queue Q]
// The `admin` subcommands are dispatched here from cli_admin.cc.
#include <chrono>
#include <filesystem>
#include <sstream>
#include <tuple>
#include <utility>

#include "client/cli_internal.h"
#include "client/format.h"
#include "protocol/messages_users.h"
#include "protocol/model/users.h"
#include "protocol/security/keys.h"
#include "protocol/validate_users.h"
#include "topology/quantity.h"

namespace gpool::cli {
namespace {

// A public key from --key: a file (`gpool admin keygen`'s .pub, read as the
// coordinator reads them) or the 40-character key itself.
Result<std::string> ReadPublicKeyArg(const std::string& arg) {
  if (IsZ85Key(arg) && !std::filesystem::exists(arg)) return arg;
  auto key = security::ReadPublicKeyFile(arg);
  if (!key.ok()) return Status::InvalidArgument("--key " + arg + ": " + key.status().message());
  return key;
}

std::string Roles(const UserSpec& user) {
  std::string out;
  for (const auto& grant : user.roles) {
    if (!out.empty()) out += ",";
    out += std::string(NameOf(grant.role)) + (grant.queue.empty() ? "" : ":" + grant.queue);
  }
  return out.empty() ? "-" : out;
}

std::string Id(int64_t id) { return id < 0 ? "-" : std::to_string(id); }

std::string FormatUsers(const std::vector<UserSpec>& users) {
  if (users.empty()) return "No users.\n";
  Table table({"USER", "UID", "GID", "ROLES", "KEYS"});
  for (const auto& u : users) table.AddRow({u.name, Id(u.uid), Id(u.gid), Roles(u), std::to_string(u.keys.size())});
  return table.Render();
}

std::string FormatUser(const UserSpec& user) {
  std::ostringstream out;
  out << "User " << user.name << "\n  uid/gid: " << Id(user.uid) << "/" << Id(user.gid) << "\n  roles:   " << Roles(user)
      << "\n  keys:\n";
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (const auto& key : user.keys) {
    out << "    " << key;
    // A key in retirement (rotate-key): when it stops working.
    if (auto expiry = user.key_expiry.find(key); expiry != user.key_expiry.end()) {
      out << (expiry->second > now ? "  (retiring: refused in " + FormatDuration(expiry->second - now) + ")"
                                   : "  (retired: refused)");
    }
    out << "\n";
  }
  if (user.keys.empty()) out << "    (none: the user cannot connect)\n";
  return out.str();
}

// An entry's result column: its outcome where one was recorded (issue 48),
// allowed or refused in older entries.
std::string AuditResult(const AuditEntry& e) {
  if (e.outcome == "failed") return "failed (" + e.code + ")";
  if (!e.outcome.empty()) return e.outcome;
  return e.allowed ? "allowed" : "refused";
}

int Print(Session& s, const UpdateUserReply& reply, const std::string& done) {
  if (s.json) {
    s.out << ToJson(reply) << "\n";
  } else {
    s.out << done << "\n" << FormatUser(reply.user);
  }
  return kExitOk;
}

// --uid and --gid (the uid's when not given), or -1 (none).
std::pair<int64_t, int64_t> UnixIds(const Invocation& inv) {
  int64_t uid = inv.flags.count("uid") ? inv.flags["uid"].as<int64_t>() : -1;
  int64_t gid = inv.flags.count("gid") ? inv.flags["gid"].as<int64_t>() : uid;
  return std::make_pair(uid, gid);
}

constexpr char kUserUsage[] =
    "admin user create NAME [--key FILE]... [--uid N] [--gid N] | update NAME [--uid N] [--gid N] | delete NAME | "
    "show NAME | list | add-key NAME --key FILE | remove-key NAME --key FILE | "
    "rotate-key NAME --key NEW --retire OLD [--grace DURATION]";
constexpr char kRoleUsage[] = "admin role grant|revoke USER admin|queue-admin|member|viewer [--queue Q]";

int RunUser(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.size() < 2) return s.Usage("usage: gpool " + std::string(kUserUsage));
  const std::string& op = p[1];
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  if (op == "list") {
    auto reply = (*client)->ListUsers();
    if (!reply.ok()) return s.Fail(reply.status());
    s.out << (s.json ? ToJson(*reply) + "\n" : FormatUsers(reply->users));
    return kExitOk;
  }
  if (p.size() != 3) return s.Usage("usage: gpool " + std::string(kUserUsage));
  UpdateUser request;
  request.spec.name = p[2];
  if (op == "show") {
    auto reply = (*client)->ListUsers();
    if (!reply.ok()) return s.Fail(reply.status());
    for (const auto& user : reply->users) {
      if (user.name == p[2]) return Print(s, UpdateUserReply{user}, "");
    }
    return s.Fail(Status::NotFound("user " + p[2] + " does not exist (`gpool admin user list`)"));
  }
  if (inv.flags.count("key")) {
    for (const auto& arg : inv.flags["key"].as<std::vector<std::string>>()) {
      auto key = ReadPublicKeyArg(arg);
      if (!key.ok()) return s.Fail(key.status());
      request.spec.keys.push_back(*key);
    }
  }
  // rotate-key: the keys it retires, and how long they still work (default
  // 0: replaced at once).
  if (inv.flags.count("retire")) {
    for (const auto& arg : inv.flags["retire"].as<std::vector<std::string>>()) {
      auto key = ReadPublicKeyArg(arg);
      if (!key.ok()) return s.Fail(key.status().WithContext("--retire"));
      request.retire_keys.push_back(*key);
    }
  }
  if (inv.flags.count("grace")) {
    auto grace = topology::ParseDurationMs(inv.flags["grace"].as<std::string>());
    if (!grace.ok()) return s.Fail(Status::InvalidArgument("--grace: expected a duration like 10m or 24h"));
    request.grace_ms = *grace;
  }
  std::tie(request.spec.uid, request.spec.gid) = UnixIds(inv);
  // Issue 48: update without --uid keeps the user's uid, or gives one from
  // the coordinators' --uid-range to a user created before uids were.
  // The CLI's words are the wire names; grant and revoke are `admin role`'s.
  const std::optional<UserOp> user_op = EnumFromName<UserOp>(op);
  if (!user_op || *user_op == UserOp::kGrant || *user_op == UserOp::kRevoke) {
    return s.Usage("admin user: unknown subcommand '" + op + "' (usage: gpool " + kUserUsage + ")");
  }
  request.op = *user_op;
  if (Status valid = ValidateUpdateUser(request); !valid.ok()) return s.Fail(valid);
  auto reply = (*client)->UpdateUser(request);
  if (!reply.ok()) return s.Fail(reply.status());
  return Print(s, *reply, "user " + p[2] + ": " + op + " done");
}

int RunRole(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.size() != 4 || (p[1] != "grant" && p[1] != "revoke")) return s.Usage("usage: gpool " + std::string(kRoleUsage));
  UpdateUser request;
  request.op = p[1] == "grant" ? UserOp::kGrant : UserOp::kRevoke;
  request.spec.name = p[2];
  const std::optional<Role> role = EnumFromName<Role>(p[3]);
  if (!role) return s.Fail(Status::InvalidArgument(NotANameOf<Role>("roles", p[3])));
  request.spec.roles.push_back(RoleGrant{*role, inv.flags.count("queue") ? inv.flags["queue"].as<std::string>() : ""});
  if (Status valid = ValidateUpdateUser(request); !valid.ok()) return s.Fail(valid);
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->UpdateUser(request);
  if (!reply.ok()) return s.Fail(reply.status());
  return Print(s, *reply, "user " + p[2] + ": " + p[1] + " " + p[3] + " done");
}

int RunBootstrap(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.size() != 2) return s.Usage("usage: gpool admin bootstrap NAME [--uid N] [--gid N]");
  Bootstrap request;
  request.admin.name = p[1];
  std::tie(request.admin.uid, request.admin.gid) = UnixIds(inv);
  if (Status valid = ValidateUserSpec(request.admin); !valid.ok()) return s.Fail(valid);
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->Bootstrap(request);
  if (!reply.ok()) return s.Fail(reply.status());
  return Print(s, *reply, "cluster bootstrapped: " + p[1] + " is its first admin, with this client's key");
}

int RunWhoAmI(Session& s, const Invocation&) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->WhoAmI();
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (reply->kind == "user") {
    s.out << FormatUser(reply->user);
  } else if (reply->kind == "job") {
    s.out << reply->user.name << ": a task's exec key; it may read its own job and exec into its tasks, nothing else\n";
  } else if (reply->kind == "bootstrap") {
    s.out << "not a user yet: the cluster has no admin; `gpool admin bootstrap NAME` makes this key its first\n";
  } else {
    s.out << "insecure: the coordinator runs without CurveZMQ (--insecure); the token decides\n";
  }
  return kExitOk;
}

int RunAudit(Session& s, const Invocation& inv) {
  ListAudit request;
  if (inv.flags.count("after")) request.after_seq = inv.flags["after"].as<uint64_t>();
  if (inv.flags.count("limit")) request.limit = inv.flags["limit"].as<uint32_t>();
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListAudit(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
    return kExitOk;
  }
  if (reply->entries.empty()) {
    s.out << "No audit entries after " << request.after_seq << ".\n";
    return kExitOk;
  }
  Table table({"SEQ", "WHEN", "USER", "REQUEST", "TARGET", "RESULT", "REASON"});
  for (const auto& e : reply->entries) {
    table.AddRow({std::to_string(e.seq), FormatAgo(e.time_ms, s.WallMs()), e.user, e.request, e.target.empty() ? "-" : e.target,
                  AuditResult(e), e.reason.empty() ? "-" : e.reason});
  }
  s.out << table.Render();
  if (reply->first_kept_seq > request.after_seq + 1 && request.after_seq > 0) {
    s.out << "(entries " << request.after_seq + 1 << " to " << reply->first_kept_seq - 1 << " were dropped: the stream "
          << "keeps the newest 10000)\n";
  }
  return kExitOk;
}

void AuditOptions(cxxopts::Options& o) {
  o.add_options("audit")
      ("after", "entries after this seq (default 0: from the oldest kept)", cxxopts::value<uint64_t>(), "SEQ")
      ("limit", "at most this many entries (default 100, at most 1000)", cxxopts::value<uint32_t>(), "N");
}

}  // namespace

int RunAdminUsers(Session& s, const Invocation& inv) {
  const std::string& what = inv.positionals[0];
  if (what == "user") return RunUser(s, inv);
  if (what == "role") return RunRole(s, inv);
  return RunBootstrap(s, inv);
}

void AdminUserOptions(cxxopts::Options& o) {
  o.add_options("admin")
      ("key", "user create|add-key|remove-key: a public key file (`gpool admin keygen`'s .pub) or the key; repeatable",
       cxxopts::value<std::vector<std::string>>(), "FILE")
      ("uid", "user create|update, bootstrap: the Unix uid the user's tasks run as", cxxopts::value<int64_t>(), "N")
      ("gid", "user create|update, bootstrap: their gid (default: the uid)", cxxopts::value<int64_t>(), "N")
      ("queue", "role grant|revoke: the queue a queue-admin or member role is over", cxxopts::value<std::string>(), "Q")
      ("retire", "user rotate-key: the public key file (or key) the new --key replaces; repeatable",
       cxxopts::value<std::vector<std::string>>(), "FILE");
}

const CommandDef kWhoAmICommand = {
    .name = "whoami",
    .synopsis = "",
    .summary = "show who this client is authenticated as (user, roles, keys)",
    .min_args = 0,
    .max_args = 0,
    .add_options = NoOptions,
    .run = RunWhoAmI,
};

const CommandDef kAuditCommand = {
    .name = "audit",
    .synopsis = "[--after SEQ] [--limit N]",
    .summary = "list the audit stream: every mutating request, who asked, allowed or refused (admins)",
    .min_args = 0,
    .max_args = 0,
    .add_options = AuditOptions,
    .run = RunAudit,
};

}  // namespace gpool::cli
