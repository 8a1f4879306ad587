// `gpool token create|list|revoke` (cli_tokens.cc): what it refuses before
// asking the coordinator. What the coordinator does with tokens is
// control/gateway_tokens_test.cc's and tests/metrics_test.cc's.
#include <gtest/gtest.h>

#include "client/cli.h"
#include "client/cli_test_fixture.h"

namespace gpool {
namespace {

using client::testing::CliTest;

TEST_F(CliTest, TokenRefusesBadScopesTtlsAndSubcommands) {
  EXPECT_EQ(Run({"token", "create", "--scope", "admin"}), kExitUsage);
  EXPECT_NE(err_.str().find("metrics, read or write"), std::string::npos) << err_.str();
  for (const char* ttl : {"0d", "30y", "d", "367d", "1.5h"}) {
    err_.str("");
    EXPECT_NE(Run({"token", "create", "--ttl", ttl}), kExitOk) << ttl;
    EXPECT_NE(err_.str().find("--ttl"), std::string::npos) << ttl << ": " << err_.str();
  }
  EXPECT_EQ(Run({"token", "mint"}), kExitUsage);
  EXPECT_EQ(Run({"token", "revoke"}), kExitUsage);
  EXPECT_EQ(Run({"token", "create", "extra"}), kExitUsage);
}

}  // namespace
}  // namespace gpool
