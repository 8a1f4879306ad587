// The dispatcher and the public entry of cli.h: global flags and environment,
// help, usage errors, exit codes and the public parsers. Each command family
// has its own cli_*_test.cc.
#include "client/cli.h"

#include <gtest/gtest.h>

#include <sstream>

#include "client/cli_test_fixture.h"
#include "client/testing/fake_client.h"

namespace gpool {
namespace {

using client::testing::CliTest;

TEST_F(CliTest, CoordinatorRejectionsMapToExitCodes) {
  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"submit", "--", "x"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: Unavailable: coordinator at tcp://x:1 did not answer within 5 ms\n");
  cluster_->fail_next = Status::InvalidArgument("tasks[0].resources.gpus: too many");
  EXPECT_EQ(Run({"submit", "--", "x"}), kExitUsage);
  cluster_->fail_next = Status::Unauthenticated("bad token");
  EXPECT_EQ(Run({"jobs"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: Unauthenticated: bad token\n");
  cluster_->fail_next = Status::NotLeader("no leader");
  EXPECT_EQ(Run({"nodes"}), kExitUnavailable);
  cluster_->fail_next = Status::Malformed("reply: garbage");
  EXPECT_EQ(Run({"status"}), kExitError);
}

TEST_F(CliTest, ClientFactoryErrorsAreReported) {
  ClientFactory failing = [](const ClientOptions&) -> Result<std::unique_ptr<Client>> {
    return Status::InvalidArgument("coordinator endpoint 'tcp://x': expected tcp://HOST:PORT");
  };
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"jobs"}, out, err, failing, env_), kExitUsage);
  EXPECT_EQ(err.str(), "gpool: InvalidArgument: coordinator endpoint 'tcp://x': expected tcp://HOST:PORT\n");
}

TEST_F(CliTest, GlobalFlagsAndEnvironment) {
  ASSERT_EQ(Run({"jobs"}), 0);
  EXPECT_EQ(options_.endpoints, "tcp://127.0.0.1:7400");
  EXPECT_EQ(options_.token, "");
  EXPECT_EQ(options_.timeout_ms, 5000);
  EXPECT_EQ(options_.retries, 3);

  environment_["GPOOL_COORDINATOR"] = "tcp://a:7400,tcp://b:7400";
  environment_["GPOOL_TOKEN"] = "envtoken";
  ASSERT_EQ(Run({"jobs"}), 0);
  EXPECT_EQ(options_.endpoints, "tcp://a:7400,tcp://b:7400");
  EXPECT_EQ(options_.token, "envtoken");

  ASSERT_EQ(Run({"-c", "tcp://c:1", "--token", "flag", "--timeout-ms", "250", "jobs"}), 0);
  EXPECT_EQ(options_.endpoints, "tcp://c:1");
  EXPECT_EQ(options_.token, "flag");
  EXPECT_EQ(options_.timeout_ms, 250);

  ASSERT_EQ(Run({"--coordinator=tcp://d:2", "jobs"}), 0);
  EXPECT_EQ(options_.endpoints, "tcp://d:2");

  EXPECT_EQ(Run({"--timeout-ms", "0", "jobs"}), kExitUsage);
  EXPECT_EQ(Run({"--timeout-ms", "soon", "jobs"}), kExitUsage);
}

TEST_F(CliTest, HelpVersionAndUsageErrors) {
  EXPECT_EQ(Run({"--help"}), 0);
  EXPECT_NE(out_.str().find("Usage: gpool [global flags] COMMAND"), std::string::npos);
  EXPECT_EQ(Run({"help"}), 0);
  EXPECT_NE(out_.str().find("Exit codes:"), std::string::npos);
  EXPECT_EQ(Run({"submit", "--help"}), 0);
  EXPECT_NE(out_.str().find("--replicas"), std::string::npos);
  EXPECT_EQ(Run({"help", "logs"}), 0);
  EXPECT_NE(out_.str().find("--bytes"), std::string::npos);
  EXPECT_EQ(Run({"--version"}), 0);
  EXPECT_EQ(out_.str().rfind("gpool ", 0), 0u);
  EXPECT_EQ(Run({}), kExitUsage);
  EXPECT_NE(err_.str().find("gpool: InvalidArgument: missing COMMAND"), std::string::npos);
  EXPECT_EQ(Run({"frobnicate"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: unknown command 'frobnicate'\nRun 'gpool --help' for usage.\n");
  EXPECT_EQ(Run({"--bogus"}), kExitUsage);
  EXPECT_EQ(Run({"jobs", "extra"}), kExitUsage);
  EXPECT_EQ(Run({"job"}), kExitUsage);
  EXPECT_EQ(Run({"job", "abc"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: expected a job ID (a positive integer), got 'abc'\n");
  EXPECT_EQ(Run({"job", "0"}), kExitUsage);
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(CliTest, TaskRefs) {
  auto ref = ParseTaskRef("17.2");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->job, JobId(17));
  EXPECT_EQ(ref->index, 2u);
  ref = ParseTaskRef("17");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->job, JobId(17));
  EXPECT_EQ(ref->index, 0u);
  for (const char* bad : {"", ".", "17.", ".2", "17.2.3", "x", "17.x", "-1", "0.1", "17.99999999999"}) {
    EXPECT_FALSE(ParseTaskRef(bad).ok()) << bad;
  }
}

TEST(ExitCodeTest, MapsStatusCodes) {
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFor(Status::InvalidArgument("")), 2);
  EXPECT_EQ(ExitCodeFor(Status::NotFound("")), 3);
  EXPECT_EQ(ExitCodeFor(Status::Unavailable("")), 4);
  EXPECT_EQ(ExitCodeFor(Status::DeadlineExceeded("")), 4);
  EXPECT_EQ(ExitCodeFor(Status::NotLeader("")), 4);
  EXPECT_EQ(ExitCodeFor(Status::FailedPrecondition("")), 5);
  EXPECT_EQ(ExitCodeFor(Status::AlreadyExists("")), 5);
  EXPECT_EQ(ExitCodeFor(Status::Internal("")), 5);
}

TEST(WaitTimeoutTest, Parses) {
  EXPECT_EQ(*ParseWaitTimeout("90"), 90'000);
  EXPECT_EQ(*ParseWaitTimeout("90s"), 90'000);
  EXPECT_EQ(*ParseWaitTimeout("5m"), 300'000);
  EXPECT_EQ(*ParseWaitTimeout("2h"), 7'200'000);
  EXPECT_EQ(*ParseWaitTimeout("0"), 0);
  for (const char* bad : {"", "s", "-1", "1.5m", "1d", "x"}) EXPECT_FALSE(ParseWaitTimeout(bad).ok()) << bad;
}

}  // namespace
}  // namespace gpool
