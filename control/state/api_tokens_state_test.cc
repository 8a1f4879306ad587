// API tokens in the replicated state (issue 48): what apply refuses, what
// the log and a snapshot carry (a hash, never the token), and that a token
// goes with its owner.
#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "control/state/commands.h"
#include "protocol/model/users.h"

namespace gpool::state {
namespace {

class ApiTokensStateTest : public ::testing::Test {
 protected:
  ApiTokensStateTest() {
    EXPECT_TRUE(Do(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"alice", {}, 1000, 1000, {}}}}).status.ok());
    EXPECT_TRUE(Do(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"bob", {}, 1000, 1000, {}}}}).status.ok());
  }
  ApplyResult Do(CommandBody body, int64_t time_ms = 5'000) {
    // Through the log's encoding, as a replica applies it.
    auto decoded = DecodeCommand(EncodeCommand(Command{time_ms, std::move(body)}));
    EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
    return state_.Apply(++index_, *decoded);
  }
  static ApiTokenInfo Token(std::string id, std::string owner, int64_t expires_ms = 0) {
    ApiTokenInfo info;
    info.id = id;
    info.owner = std::move(owner);
    info.scope = TokenScope::kRead;
    info.created_ms = 1'000;
    info.expires_ms = expires_ms;
    info.hash = "hash-of-" + id;
    return info;
  }
  ApplyResult Create(ApiTokenInfo info, int64_t time_ms = 5'000) {
    return Do(TokenCmd{TokenOp::kCreate, std::move(info)}, time_ms);
  }
  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(ApiTokensStateTest, ApplyKeepsIdsAndHashesUniqueAndOwnersReal) {
  ASSERT_TRUE(Create(Token("tok-1", "alice")).status.ok());
  EXPECT_EQ(Create(Token("tok-1", "bob")).status.code(), StatusCode::kAlreadyExists);
  ApiTokenInfo same_hash = Token("tok-2", "bob");
  same_hash.hash = "hash-of-tok-1";
  EXPECT_EQ(Create(same_hash).status.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Create(Token("tok-3", "nobody")).status.code(), StatusCode::kNotFound);
  ApiTokenInfo admins = Token("tok-4", "admin");
  admins.configured_admin = true;  // the --admin-key's holder is no user record
  EXPECT_TRUE(Create(admins).status.ok());
  EXPECT_EQ(state_.api_tokens().tokens().size(), 2u);
  EXPECT_EQ(state_.api_tokens().FindByHash("hash-of-tok-1")->id, "tok-1");
  EXPECT_EQ(Do(TokenCmd{TokenOp::kRevoke, Token("tok-9", "alice")}).status.code(), StatusCode::kNotFound);
  ASSERT_TRUE(Do(TokenCmd{TokenOp::kRevoke, Token("tok-1", "alice")}).status.ok());
  EXPECT_EQ(state_.api_tokens().Find("tok-1"), nullptr);
  EXPECT_EQ(state_.api_tokens().FindByHash("hash-of-tok-1"), nullptr);
}

TEST_F(ApiTokensStateTest, RemovingAUserRevokesTheirTokens) {
  ASSERT_TRUE(Create(Token("tok-a1", "alice")).status.ok());
  ASSERT_TRUE(Create(Token("tok-a2", "alice")).status.ok());
  ASSERT_TRUE(Create(Token("tok-b1", "bob")).status.ok());
  ASSERT_TRUE(Do(UpdateUserCmd{UpdateUser{UserOp::kDelete, UserSpec{"alice"}}}).status.ok());
  EXPECT_EQ(state_.api_tokens().Find("tok-a1"), nullptr);
  EXPECT_EQ(state_.api_tokens().Find("tok-a2"), nullptr);
  EXPECT_EQ(state_.api_tokens().FindByHash("hash-of-tok-a2"), nullptr);
  EXPECT_NE(state_.api_tokens().Find("tok-b1"), nullptr);
}

TEST_F(ApiTokensStateTest, ExpiredTokensAreDroppedByTheNextCreatesTime) {
  ASSERT_TRUE(Create(Token("tok-old", "alice", /*expires_ms=*/6'000)).status.ok());
  ASSERT_TRUE(Create(Token("tok-new", "alice", /*expires_ms=*/0), /*time_ms=*/5'500).status.ok());
  EXPECT_NE(state_.api_tokens().Find("tok-old"), nullptr);  // not yet expired at 5.5 s
  ASSERT_TRUE(Create(Token("tok-later", "bob"), /*time_ms=*/6'000).status.ok());
  EXPECT_EQ(state_.api_tokens().Find("tok-old"), nullptr);
  EXPECT_EQ(state_.api_tokens().FindByHash("hash-of-tok-old"), nullptr);
  EXPECT_NE(state_.api_tokens().Find("tok-new"), nullptr);
}

TEST_F(ApiTokensStateTest, EachUserHoldsABoundedNumber) {
  for (size_t i = 0; i < kMaxTokensPerUser; ++i) {
    ASSERT_TRUE(Create(Token("tok-" + std::to_string(i), "alice")).status.ok());
  }
  EXPECT_EQ(Create(Token("tok-over", "alice")).status.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Create(Token("tok-bob", "bob")).status.ok());
}

TEST_F(ApiTokensStateTest, ASnapshotKeepsTokens) {
  ASSERT_TRUE(Create(Token("tok-1", "alice", 9'000'000)).status.ok());
  const std::string snapshot = state_.Snapshot();
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(snapshot).ok());
  const ApiTokenInfo* token = restored.api_tokens().FindByHash("hash-of-tok-1");
  ASSERT_NE(token, nullptr);
  EXPECT_EQ(token->owner, "alice");
  EXPECT_EQ(token->scope, TokenScope::kRead);
  EXPECT_EQ(token->expires_ms, 9'000'000);
}

}  // namespace
}  // namespace gpool::state
