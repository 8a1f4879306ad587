// API tokens through the gateway (issue 48): making, listing and revoking
// them, and what a token opens: the permission matrix of token scope x the
// owner's role x request, with no unexpected allow; a revoked or expired
// token, or one whose owner was removed, is refused.
#include <array>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "control/gateway/tokens_endpoint.h"
#include "control/gateway_fixture.h"
#include "protocol/base/sha256.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_enrolment.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_snapshot.h"
#include "protocol/messages_tokens.h"
#include "protocol/messages_users.h"

namespace gpool::control {
namespace {

class GatewayTokensTest : public GatewayTest {
 public:
  using GatewayTest::SendAs;
  using GatewayTest::Last;
  using GatewayTest::ErrorOf;

 protected:
  GatewayTokensTest() {
    AddRoleTree();
    Apply(state::RegisterNodeCmd{OneGpuNode("n1"), {}});
  }
  static Principal As(const std::string& name, const std::string& key) {
    return Principal{Principal::Kind::kUser, name, key};
  }
  // Makes a token as `name` over its key (as `gpool token create` does) and
  // returns the principal the HTTP port would hand the gateway for it.
  Principal TokenOf(const std::string& name, const std::string& key, TokenScope scope, int64_t ttl_ms = 0,
                    std::string* text = nullptr) {
    SendAs(As(name, key), CreateToken{scope, ttl_ms});
    const CreateTokenReply reply = LastAs<CreateTokenReply>();
    if (text != nullptr) *text = reply.token;
    return Principal{Principal::Kind::kToken, name, reply.info.id};
  }
  bool LastAllowed() {
    Envelope env = Last();
    if (env.type() != MessageType::kErrorReply) return true;
    auto error = env.Body<ErrorReply>();
    return error.ok() && error->code != "PermissionDenied" && error->code != "Unauthenticated";
  }
};

TEST_F(GatewayTokensTest, ATokenIsReturnedOnceAndOnlyItsHashIsKept) {
  std::string text;
  const Principal token = TokenOf("mem", kKeyMember, TokenScope::kRead, 0, &text);
  EXPECT_TRUE(LooksLikeApiToken(text)) << text;
  const ApiTokenInfo* kept = state_.api_tokens().Find(token.key);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->owner, "mem");
  EXPECT_EQ(kept->scope, TokenScope::kRead);
  EXPECT_EQ(kept->hash, Sha256::Of(text));
  EXPECT_EQ(state_.api_tokens().FindByHash(Sha256::Of(text)), kept);
  // Neither the snapshot nor a list reply holds the token's text.
  EXPECT_EQ(state_.Snapshot().find(text), std::string::npos);
  SendAs(As("mem", kKeyMember), ListTokens{});
  const auto listed = LastAs<ListTokensReply>();
  ASSERT_EQ(listed.tokens.size(), 1u);
  EXPECT_EQ(listed.tokens[0].id, token.key);
  EXPECT_TRUE(listed.tokens[0].hash.empty());
  // Two tokens never share a text.
  std::string second;
  TokenOf("mem", kKeyMember, TokenScope::kRead, 0, &second);
  EXPECT_NE(second, text);
}

TEST_F(GatewayTokensTest, UsersSeeAndRevokeTheirOwnTokensAndAdminsEveryones) {
  const Principal mine = TokenOf("mem", kKeyMember, TokenScope::kRead);
  const Principal theirs = TokenOf("view", kKeyViewer, TokenScope::kMetrics);
  SendAs(As("view", kKeyViewer), ListTokens{});
  EXPECT_EQ(LastAs<ListTokensReply>().tokens.size(), 1u);
  SendAs(As("view", kKeyViewer), ListTokens{true});
  EXPECT_EQ(LastError(), "PermissionDenied");
  SendAs(As("root-admin", kKeyAdmin), ListTokens{true});
  EXPECT_EQ(LastAs<ListTokensReply>().tokens.size(), 2u);
  // Another user's token is not found (ids cannot be probed) and stays.
  SendAs(As("view", kKeyViewer), RevokeToken{mine.key});
  EXPECT_EQ(LastError(), "NotFound");
  EXPECT_NE(state_.api_tokens().Find(mine.key), nullptr);
  SendAs(As("mem", kKeyMember), RevokeToken{mine.key});
  EXPECT_EQ(LastAs<RevokeTokenReply>().info.id, mine.key);
  EXPECT_EQ(state_.api_tokens().Find(mine.key), nullptr);
  SendAs(As("root-admin", kKeyAdmin), RevokeToken{theirs.key});
  EXPECT_EQ(LastAs<RevokeTokenReply>().info.owner, "view");
  EXPECT_TRUE(state_.api_tokens().tokens().empty());
}

TEST_F(GatewayTokensTest, BadRequestsAreTypedErrorsAndChangeNothing) {
  SendAs(As("mem", kKeyMember), CreateToken{TokenScope::kRead, -1});
  EXPECT_EQ(LastError(), "InvalidArgument");
  SendAs(As("mem", kKeyMember), CreateToken{TokenScope::kRead, kMaxTokenTtlMs + 1});
  EXPECT_EQ(LastError(), "InvalidArgument");
  SendAs(As("mem", kKeyMember), RevokeToken{"tok-none"});
  EXPECT_EQ(LastError(), "NotFound");
  // A task's exec key speaks for its job only; no tokens.
  SendAs(Principal{Principal::Kind::kTask, "1.0", "exec-key"}, CreateToken{});
  EXPECT_NE(LastError(), "");
  EXPECT_TRUE(state_.api_tokens().tokens().empty());
  for (size_t i = 0; i < kMaxTokensPerUser; ++i) TokenOf("mem", kKeyMember, TokenScope::kMetrics);
  SendAs(As("mem", kKeyMember), CreateToken{});
  EXPECT_EQ(LastError(), "ResourceExhausted");
  EXPECT_EQ(state_.api_tokens().tokens().size(), kMaxTokensPerUser);
}

TEST_F(GatewayTokensTest, RevokedExpiredAndOrphanedTokensAreRefused) {
  const Principal revoked = TokenOf("mem", kKeyMember, TokenScope::kWrite);
  SendAs(revoked, ListNodes{});
  EXPECT_TRUE(LastAllowed()) << ErrorOf(Last());
  SendAs(As("mem", kKeyMember), RevokeToken{revoked.key});
  SendAs(revoked, ListNodes{});
  EXPECT_EQ(LastError(), "Unauthenticated");

  // Expiry is the wall clock's (a token made with 1 ms to live is past it
  // by the time the next request is decided... or within a millisecond).
  const Principal expiring = TokenOf("mem", kKeyMember, TokenScope::kRead, 1);
  const int64_t expires = state_.api_tokens().Find(expiring.key)->expires_ms;
  ASSERT_GT(expires, 0);
  while (RequestContext::WallNowMs() <= expires) {
  }
  SendAs(expiring, ListNodes{});
  EXPECT_EQ(LastError(), "Unauthenticated");

  // Removing a user revokes their tokens at once.
  const Principal orphan = TokenOf("view", kKeyViewer, TokenScope::kRead);
  SendAs(orphan, ListNodes{});
  EXPECT_TRUE(LastAllowed());
  SendAs(As("root-admin", kKeyAdmin), UpdateUser{UserOp::kDelete, UserSpec{"view"}});
  ASSERT_TRUE(LastAllowed()) << ErrorOf(Last());
  EXPECT_EQ(state_.api_tokens().Find(orphan.key), nullptr);
  SendAs(orphan, ListNodes{});
  EXPECT_EQ(LastError(), "Unauthenticated");
  // A principal naming a token of another owner is refused too.
  const Principal mine = TokenOf("mem", kKeyMember, TokenScope::kWrite);
  SendAs(Principal{Principal::Kind::kToken, "root-admin", mine.key}, ListUsers{});
  EXPECT_EQ(LastError(), "Unauthenticated");
}

// The --admin-key's holder is no user record: its tokens speak for the
// configured admin, and only while that same key is configured.
TEST_F(GatewayTokensTest, TheAdminKeysTokensEndWithThatKey) {
  constexpr char kBreakGlass[] = "B<3jvD/6hYX9]r1Y>Mnd.GTb?3dWQ7wg2T1Z@pYk";
  const auto with_admin_key = [this](std::string key) {
    GatewayOptions options{.replica_id = "c-1", .client_address = "tcp://127.0.0.1:7400"};
    options.admin_key = std::move(key);
    Rebuild(options);
  };
  with_admin_key(kBreakGlass);
  const Principal token = TokenOf("operator", kBreakGlass, TokenScope::kRead);
  ASSERT_TRUE(state_.api_tokens().Find(token.key)->configured_admin);
  const Principal as_admin{Principal::Kind::kToken, "admin", token.key};
  SendAs(as_admin, ListUsers{});
  EXPECT_TRUE(LastAllowed()) << ErrorOf(Last());
  with_admin_key(kKeyViewer);  // another key configured now
  SendAs(as_admin, ListUsers{});
  EXPECT_EQ(LastError(), "Unauthenticated");
  with_admin_key("");
  SendAs(as_admin, ListUsers{});
  EXPECT_EQ(LastError(), "Unauthenticated");
}

TEST_F(GatewayTokensTest, ATokenCannotMakeTokens) {
  const Principal write = TokenOf("root-admin", kKeyAdmin, TokenScope::kWrite);
  SendAs(write, CreateToken{TokenScope::kWrite, 0});
  EXPECT_EQ(LastError(), "PermissionDenied");
  EXPECT_EQ(state_.api_tokens().tokens().size(), 1u);
}

// Scope x owner's role x request. Expected: what the owner's role allows
// over its key (gateway_access_test.cc's matrix), and the scope allows
// (metrics: nothing on the API; read: no mutation; write: everything).
TEST_F(GatewayTokensTest, TokenPermissionMatrixHasNoUnexpectedAllow) {
  struct Owner {
    std::string name;
    const char* key;
  };
  const std::array<Owner, 3> owners = {Owner{"root-admin", kKeyAdmin}, Owner{"mem", kKeyMember},
                                       Owner{"view", kKeyViewer}};
  struct Case {
    std::string name;
    bool mutating;
    std::function<void(GatewayTokensTest&, const Principal&)> send;
    std::array<bool, 3> role_allows;  // admin, member of ml-a, viewer
  };
  const auto submit = [](const std::string& queue) {
    JobSpec spec = OneGpuJob();
    spec.queue = queue;
    return SubmitJob{spec, ""};
  };
  const std::vector<Case> cases = {
      {"list nodes", false, [](auto& t, auto& p) { t.SendAs(p, ListNodes{}); }, {true, true, true}},
      {"list jobs", false, [](auto& t, auto& p) { t.SendAs(p, ListJobs{}); }, {true, true, true}},
      {"who am i", false, [](auto& t, auto& p) { t.SendAs(p, WhoAmI{}); }, {true, true, true}},
      {"list users", false, [](auto& t, auto& p) { t.SendAs(p, ListUsers{}); }, {true, false, false}},
      {"read the audit stream", false, [](auto& t, auto& p) { t.SendAs(p, ListAudit{}); }, {true, false, false}},
      {"list own tokens", false, [](auto& t, auto& p) { t.SendAs(p, ListTokens{}); }, {true, true, true}},
      {"submit to ml-a", true, [&](auto& t, auto& p) { t.SendAs(p, submit("ml-a")); }, {true, true, false}},
      {"submit to web", true, [&](auto& t, auto& p) { t.SendAs(p, submit("web")); }, {true, false, false}},
      {"cordon a node", true, [](auto& t, auto& p) { t.SendAs(p, UpdateNode{"n1", NodeUpdateOp::kCordon}); },
       {true, false, false}},
      {"create a user", true,
       [](auto& t, auto& p) { t.SendAs(p, UpdateUser{UserOp::kCreate, UserSpec{"new-" + p.name, {}, -1, -1, {}}}); },
       {true, false, false}},
      {"export a snapshot", true, [](auto& t, auto& p) { t.SendAs(p, ExportSnapshot{}); }, {true, false, false}},
      {"make a join token", true,
       [](auto& t, auto& p) { t.SendAs(p, Enrolment{.op = EnrolmentOp::kCreateToken, .ttl_ms = 60'000}); },
       {true, false, false}},
      // One request type for enrolment's lists and its decisions: all need write.
      {"list pending enrolments", true,
       [](auto& t, auto& p) { t.SendAs(p, Enrolment{.op = EnrolmentOp::kListPending}); }, {true, false, false}},
      // Never with a token, whatever its scope or owner.
      {"make a token", true, [](auto& t, auto& p) { t.SendAs(p, CreateToken{}); }, {false, false, false}},
  };
  int unexpected_allows = 0;
  int checked = 0;
  for (TokenScope scope : {TokenScope::kMetrics, TokenScope::kRead, TokenScope::kWrite}) {
    for (size_t who = 0; who < owners.size(); ++who) {
      for (const auto& c : cases) {
        // A fresh token per request: a case (submit) must not use up another's.
        const Principal token = TokenOf(owners[who].name, owners[who].key, scope);
        const bool scope_allows = scope == TokenScope::kWrite || (scope == TokenScope::kRead && !c.mutating);
        const bool expected = scope_allows && c.role_allows[who];
        c.send(*this, token);
        const bool allowed = LastAllowed();
        if (allowed && !expected) ++unexpected_allows;
        EXPECT_EQ(allowed, expected) << c.name << " with a " << NameOf(scope) << " token of " << owners[who].name
                                     << ": " << ErrorOf(Last());
        ++checked;
        SendAs(As(owners[who].name, owners[who].key), RevokeToken{token.key});
      }
    }
  }
  EXPECT_EQ(checked, 3 * 3 * static_cast<int>(cases.size()));
  EXPECT_EQ(unexpected_allows, 0);
}

}  // namespace
}  // namespace gpool::control
