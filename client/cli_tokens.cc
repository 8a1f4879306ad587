// `gpool token create|list|revoke`: API tokens for the coordinator's HTTP
// port (issue 48; protocol/messages_tokens.h). The HTTP port takes a token,
// never a secret key: a token is printed once, here, and the cluster keeps
// only its hash.
#include <charconv>

#include "client/cli_internal.h"
#include "client/format.h"
#include "protocol/messages_tokens.h"

namespace gpool::cli {
namespace {

// "30d", "12h", "90m", "45s" or a bare number of seconds; "0" or "never":
// no expiry.
Result<int64_t> ParseTokenTtlMs(const std::string& text) {
  if (text == "never" || text == "0") return int64_t{0};
  int64_t unit_ms = 1000;
  std::string_view digits = text;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'd': unit_ms = 24LL * 3600 * 1000; break;
      case 'h': unit_ms = 3600LL * 1000; break;
      case 'm': unit_ms = 60LL * 1000; break;
      case 's': unit_ms = 1000; break;
      default: unit_ms = 0; break;
    }
    if (unit_ms != 0) digits.remove_suffix(1);
    else unit_ms = 1000;
  }
  int64_t count = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || count <= 0 ||
      count > kMaxTokenTtlMs / unit_ms) {
    return Status::InvalidArgument("--ttl '" + text.substr(0, 32) +
                                   "': expected a time such as 30d, 12h, 90m or 45s (at most 366d), or never");
  }
  return count * unit_ms;
}

std::string TokenExpiry(const ApiTokenInfo& token, int64_t now_ms) {
  if (token.expires_ms == 0) return "never";
  if (token.expires_ms <= now_ms) return "expired";
  return "in " + FormatDuration(token.expires_ms - now_ms);
}

int RunTokenCreate(Session& s, const Invocation& inv) {
  CreateToken request;
  if (inv.flags.count("scope")) {
    auto scope = EnumFromName<TokenScope>(inv.flags["scope"].as<std::string>());
    if (!scope) {
      return s.Usage("--scope '" + inv.flags["scope"].as<std::string>() + "': expected metrics, read or write");
    }
    request.scope = *scope;
  }
  if (inv.flags.count("ttl")) {
    auto ttl = ParseTokenTtlMs(inv.flags["ttl"].as<std::string>());
    if (!ttl.ok()) return s.Fail(ttl.status());
    request.ttl_ms = *ttl;
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->CreateToken(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
    return kExitOk;
  }
  s.out << reply->token << "\n";
  s.err << "token " << reply->info.id << " (scope " << NameOf(reply->info.scope) << ", expires "
        << TokenExpiry(reply->info, s.WallMs()) << ") for " << reply->info.owner
        << ": shown this once; send it as \"Authorization: Bearer <token>\" to the HTTP port\n";
  return kExitOk;
}

int RunTokenList(Session& s, const Invocation& inv) {
  ListTokens request;
  request.all = inv.flags.count("all") > 0;
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListTokens(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
    return kExitOk;
  }
  if (reply->tokens.empty()) {
    s.out << "No tokens. `gpool token create` makes one.\n";
    return kExitOk;
  }
  const int64_t now = s.WallMs();
  Table table({"ID", "OWNER", "SCOPE", "CREATED", "EXPIRES", "LAST USED"});
  for (const auto& token : reply->tokens) {
    table.AddRow({token.id, token.owner, std::string(NameOf(token.scope)), FormatAgo(token.created_ms, now),
                  TokenExpiry(token, now), token.last_used_ms == 0 ? "-" : FormatAgo(token.last_used_ms, now)});
  }
  s.out << table.Render();
  return kExitOk;
}

int RunTokenRevoke(Session& s, const Invocation& inv) {
  if (inv.positionals.size() != 2) return s.Usage("usage: gpool token revoke ID");
  RevokeToken request;
  request.id = inv.positionals[1];
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->RevokeToken(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
    return kExitOk;
  }
  s.out << "token " << reply->info.id << " of " << reply->info.owner << " revoked\n";
  return kExitOk;
}

int RunToken(Session& s, const Invocation& inv) {
  const std::string& what = inv.positionals[0];
  if (what == "create") {
    if (inv.positionals.size() != 1) return s.Usage("usage: gpool token create [--scope metrics|read|write] [--ttl 30d]");
    return RunTokenCreate(s, inv);
  }
  if (what == "list") return RunTokenList(s, inv);
  if (what == "revoke") return RunTokenRevoke(s, inv);
  return s.Usage("unknown token command '" + what + "' (create, list or revoke)");
}

void TokenOptions(cxxopts::Options& o) {
  o.add_options("token")
      ("scope", "create: metrics (/metrics only), read (+ the API's reads and the dashboard; the default) or "
       "write (+ changes your roles allow)", cxxopts::value<std::string>(), "SCOPE")
      ("ttl", "create: expires after this long (30d, 12h, 90m, 45s; at most 366d) or never (the default)",
       cxxopts::value<std::string>(), "TIME")
      ("all", "list: every user's tokens (admins)");
}

constexpr CommandForm kTokenForms[] = {
    {"create [--scope metrics|read|write] [--ttl 30d]", "create [--scope S] [--ttl T]",
     "make an API token for the HTTP port (printed once)"},
    {"list [--all]", "list", "list your API tokens (--all: everyone's, admins)"},
    {"revoke ID", "revoke ID", "revoke an API token"},
};

}  // namespace

const CommandDef kTokenCommand = {
    .name = "token",
    .synopsis = "create|list|revoke",
    .summary = "API tokens for the coordinator's HTTP port (metrics, JSON API, dashboard)",
    .min_args = 1,
    .max_args = 2,
    .add_options = TokenOptions,
    .run = RunToken,
    .forms = kTokenForms,
};

}  // namespace gpool::cli
