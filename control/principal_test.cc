#include "control/principal.h"

#include <gtest/gtest.h>

namespace gpool::control {
namespace {

TEST(PrincipalTest, RoundTripsEveryKind) {
  for (auto kind : {Principal::Kind::kUser, Principal::Kind::kNode, Principal::Kind::kNewNode,
                    Principal::Kind::kReplica, Principal::Kind::kBootstrap, Principal::Kind::kTask}) {
    Principal p{kind, kind == Principal::Kind::kNewNode ? "" : "alice", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"};
    auto parsed = Principal::Parse(p.UserId());
    ASSERT_TRUE(parsed.has_value()) << p.UserId();
    EXPECT_EQ(*parsed, p);
  }
}

TEST(PrincipalTest, NoUserIdIsInsecure) {
  auto parsed = Principal::Parse("");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->kind, Principal::Kind::kInsecure);
  EXPECT_EQ(parsed->UserId(), "");
}

TEST(PrincipalTest, MalformedIsRefused) {
  for (std::string_view bad : {"alice", "user|alice", "user|alice|", "root|alice|KEY", "insecure|x|KEY",
                               "user|a|b|KEY", "|alice|KEY"}) {
    EXPECT_FALSE(Principal::Parse(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace gpool::control
