// Dashboard sessions (issue 48): bounded, expiring with the token or after
// kSessionTtlMs, ended on sign-out, and the cookie's attributes.
#include "control/http/http_sessions.h"

#include <gtest/gtest.h>

namespace gpool::control {
namespace {

TEST(HttpSessionsTest, ASessionEndsWithItsTokenOrItsTtlOrSignOut) {
  HttpSessions sessions;
  const std::string a = sessions.Open("tok-1", "alice", /*token_expires_ms=*/0, /*now_ms=*/1'000);
  const std::string b = sessions.Open("tok-2", "bob", /*token_expires_ms=*/5'000, /*now_ms=*/1'000);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  ASSERT_TRUE(sessions.Find(a, 2'000).has_value());
  EXPECT_EQ(sessions.Find(a, 2'000)->token_id, "tok-1");
  EXPECT_TRUE(sessions.Find(b, 4'999).has_value());
  EXPECT_FALSE(sessions.Find(b, 5'000).has_value());  // the token's expiry
  EXPECT_TRUE(sessions.Find(a, 1'000 + kSessionTtlMs - 1).has_value());
  EXPECT_FALSE(sessions.Find(a, 1'000 + kSessionTtlMs).has_value());
  const std::string c = sessions.Open("tok-3", "carol", 0, 1'000);
  EXPECT_TRUE(sessions.Close(c));
  EXPECT_FALSE(sessions.Close(c));
  EXPECT_FALSE(sessions.Find(c, 1'001).has_value());
  EXPECT_FALSE(sessions.Find("", 1'001).has_value());
}

TEST(HttpSessionsTest, TheCountIsBoundedAndTheOldestGoFirst) {
  HttpSessions sessions(/*max_sessions=*/3);
  const std::string first = sessions.Open("tok", "alice", 0, 1);
  const std::string second = sessions.Open("tok", "alice", 0, 2);
  sessions.Open("tok", "alice", 0, 3);
  const std::string fourth = sessions.Open("tok", "alice", 0, 4);
  EXPECT_EQ(sessions.size(), 3u);
  EXPECT_FALSE(sessions.Find(first, 5).has_value());
  EXPECT_TRUE(sessions.Find(second, 5).has_value());
  EXPECT_TRUE(sessions.Find(fourth, 5).has_value());
}

TEST(HttpSessionsTest, CookiesAreHttpOnlySecureAndStrict) {
  EXPECT_EQ(SessionSetCookie("abc", 60), "gpool_session=abc; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Strict");
  EXPECT_EQ(SessionSetCookie("", 0), "gpool_session=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict");
  EXPECT_EQ(SessionIdOfCookie("gpool_session=abc"), "abc");
  EXPECT_EQ(SessionIdOfCookie("theme=dark; gpool_session=abc; other=1"), "abc");
  EXPECT_EQ(SessionIdOfCookie("xgpool_session=abc"), "");
  EXPECT_EQ(SessionIdOfCookie(""), "");
}

}  // namespace
}  // namespace gpool::control
