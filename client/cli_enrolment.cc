// Node enrolment commands (issue 48; docs/operations.md 2.2):
//   gpool node pending                          the nodes waiting for admission
//   gpool node approve NAME [--fingerprint F]   admit one (binds its key to the name)
//   gpool node reject NAME [--fingerprint F]    drop it
//   gpool admin join-token create --ttl 1h [--labels k=v,...]
//   gpool admin join-token list | revoke ID
// All admin only; the coordinator audits every change.
#include <iomanip>
#include <sstream>

#include "client/cli_internal.h"
#include "client/format.h"
#include "protocol/messages_enrolment.h"
#include "topology/quantity.h"

namespace gpool::cli {
namespace {

Result<EnrolmentReply> SendEnrolment(Session& s, const Enrolment& request) {
  auto client = s.client();
  if (!client.ok()) return client.status();
  return (*client)->Enrol(request);
}

std::string EnrolmentLabels(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [key, value] : labels) out += (out.empty() ? "" : ",") + key + "=" + value;
  return out.empty() ? "-" : out;
}

std::string PendingTable(const std::vector<PendingEnrolment>& pending, int64_t now_ms) {
  if (pending.empty()) return "no pending enrolments\n";
  std::ostringstream out;
  out << std::left << std::setw(24) << "NODE" << std::setw(26) << "FINGERPRINT" << std::setw(20) << "HOSTNAME"
      << std::setw(18) << "DEVICES" << std::setw(12) << "FIRST SEEN" << "LAST SEEN\n";
  for (const auto& p : pending) {
    const std::string devices = std::to_string(p.gpus) + (p.gpu_model.empty() ? " GPU" : " x " + p.gpu_model);
    out << std::left << std::setw(24) << p.node << std::setw(26) << p.fingerprint << std::setw(20)
        << (p.hostname.empty() ? "-" : p.hostname) << std::setw(18) << devices << std::setw(12)
        << FormatAgo(p.first_seen_ms, now_ms) << FormatAgo(p.last_seen_ms, now_ms) << "\n";
  }
  return out.str();
}

std::string JoinTokenTable(const std::vector<JoinTokenInfo>& tokens, int64_t now_ms) {
  if (tokens.empty()) return "no join tokens\n";
  std::ostringstream out;
  out << std::left << std::setw(14) << "ID" << std::setw(20) << "STATE" << std::setw(14) << "CREATOR"
      << std::setw(12) << "CREATED" << "LABELS\n";
  for (const auto& t : tokens) {
    const std::string state = t.revoked              ? "revoked"
                              : !t.used_by.empty()   ? "used by " + t.used_by
                              : now_ms >= t.expires_ms ? "expired"
                                                       : "valid";
    out << std::left << std::setw(14) << t.id << std::setw(20) << state << std::setw(14) << t.creator
        << std::setw(12) << FormatAgo(t.created_ms, now_ms) << EnrolmentLabels(t.labels) << "\n";
  }
  return out.str();
}

}  // namespace

int RunNodeEnrolment(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  const std::string& op = p[0];
  Enrolment request;
  if (op == "pending") {
    if (p.size() != 1) return s.Usage("usage: gpool node pending");
    if (inv.flags.count("fingerprint")) return s.Usage("--fingerprint belongs to 'node approve' and 'node reject'");
    request.op = EnrolmentOp::kListPending;
  } else {
    if (p.size() != 2) return s.Usage("usage: gpool node " + op + " NAME [--fingerprint F]");
    request.op = op == "approve" ? EnrolmentOp::kApprove : EnrolmentOp::kReject;
    request.node = p[1];
    if (inv.flags.count("fingerprint")) request.fingerprint = inv.flags["fingerprint"].as<std::string>();
  }
  auto reply = SendEnrolment(s, request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (op == "pending") {
    s.out << PendingTable(reply->pending, s.WallMs());
  } else {
    for (const auto& pending : reply->pending) {
      s.out << "node " << pending.node << " (key " << pending.fingerprint << ") "
            << (op == "approve" ? "approved: it takes work once its worker registers again"
                                : "rejected: it stays out of the cluster")
            << "\n";
    }
  }
  return kExitOk;
}

int RunAdminJoinToken(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  const std::string usage = "usage: gpool admin join-token create --ttl DURATION [--labels K=V,...] | list | revoke ID";
  if (p.size() < 2) return s.Usage(usage);
  const std::string& op = p[1];
  Enrolment request;
  if (op == "create") {
    if (p.size() != 2 || !inv.flags.count("ttl")) return s.Usage(usage);
    auto ttl = topology::ParseDurationMs(inv.flags["ttl"].as<std::string>());
    if (!ttl.ok() || *ttl == 0) {
      return s.Fail(Status::InvalidArgument("--ttl: expected a duration like 30m or 1h"));
    }
    request.op = EnrolmentOp::kCreateToken;
    request.ttl_ms = *ttl;
    if (inv.flags.count("labels")) {
      std::string list = inv.flags["labels"].as<std::string>();
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, comma - start);
        if (item.find('=') == std::string::npos) {
          return s.Fail(Status::InvalidArgument("--labels: expected KEY=VALUE,..., got '" + item + "'"));
        }
        if (Status added = AddKeyValue("join-token", "label", item, request.labels); !added.ok()) return s.Fail(added);
        start = comma + 1;
      }
    }
  } else if (op == "list") {
    if (p.size() != 2) return s.Usage(usage);
    request.op = EnrolmentOp::kListTokens;
  } else if (op == "revoke") {
    if (p.size() != 3) return s.Usage(usage);
    request.op = EnrolmentOp::kRevokeToken;
    request.token_id = p[2];
  } else {
    return s.Usage("admin join-token: unknown subcommand '" + op + "'; expected create, list or revoke");
  }
  if (op != "create" && (inv.flags.count("ttl") || inv.flags.count("labels"))) {
    return s.Usage("--ttl and --labels belong to 'admin join-token create'");
  }
  auto reply = SendEnrolment(s, request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (op == "create") {
    // The token alone on stdout, so a script can take it; the rest to stderr.
    s.out << reply->token << "\n";
    if (!reply->tokens.empty()) {
      s.err << "join token " << reply->tokens[0].id << " (single use, shown only now): start the worker with "
            << "GPOOL_JOIN_TOKEN=<token> or --join-token <token>\n";
    }
  } else if (op == "list") {
    s.out << JoinTokenTable(reply->tokens, s.WallMs());
  } else {
    s.out << "join token " << request.token_id << " revoked\n";
  }
  return kExitOk;
}

void EnrolmentOptions(cxxopts::Options& o) {
  o.add_options("admin")
      ("ttl", "join-token create: how long the token is valid (30m, 1h; at most 7 days)", cxxopts::value<std::string>(),
       "DURATION")
      ("labels", "join-token create: labels of the node it admits, K=V,...", cxxopts::value<std::string>(), "LABELS");
}

}  // namespace gpool::cli
