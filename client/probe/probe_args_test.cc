#include "client/probe/probe_args.h"

#include <gtest/gtest.h>

namespace gpool::probe {
namespace {

std::string Error(const std::vector<std::string>& args) {
  auto parsed = ParseProbeArgs(args);
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  return parsed.status().message();
}

TEST(ProbeArgsTest, Network) {
  auto args = ParseProbeArgs({"network", "--rank", "1", "--ring", "a:7000,b:7001,[::1]:7002", "--bytes=8Mi",
                              "--rounds", "2", "--pings", "10", "--timeout-ms", "5000"});
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(args->kind, "network");
  EXPECT_EQ(args->network.rank, 1u);
  ASSERT_EQ(args->network.ring.size(), 3u);
  EXPECT_EQ(args->network.ring[1].host, "b");
  EXPECT_EQ(args->network.ring[2].host, "::1");
  EXPECT_EQ(args->network.ring[2].ToString(), "[::1]:7002");
  EXPECT_EQ(args->network.link.bytes, 8u << 20);
  EXPECT_EQ(args->network.link.rounds, 2u);
  EXPECT_EQ(args->network.link.pings, 10u);
  EXPECT_EQ(args->network.timeout_ms, 5000);
}

TEST(ProbeArgsTest, GpuDefaults) {
  auto args = ParseProbeArgs({"gpu"});
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->kind, "gpu");
  EXPECT_EQ(args->gpu.bytes, 256u << 20);
  EXPECT_EQ(args->gpu.rounds, 3u);
  EXPECT_TRUE(ParseProbeArgs({"--help"})->help);
}

TEST(ProbeArgsTest, BadFlagsAreTypedErrors) {
  EXPECT_EQ(Error({}), "missing the probe: network or gpu");
  EXPECT_EQ(Error({"disk"}), "unknown probe 'disk': expected network or gpu");
  EXPECT_EQ(Error({"network", "--ring", "a:1"}), "--rank: required for the network probe");
  EXPECT_EQ(Error({"network", "--rank", "0"}), "--ring: required for the network probe");
  EXPECT_EQ(Error({"network", "--rank", "2", "--ring", "a:1,b:2"}), "--rank: 2 is not below the ring's size, 2");
  EXPECT_EQ(Error({"network", "--rank", "x", "--ring", "a:1"}), "--rank: expected an integer from 0 to 1000000, got 'x'");
  EXPECT_EQ(Error({"network", "--rank", "0", "--ring", "a:0"}), "--ring: 'a:0': expected a port from 1 to 65535");
  EXPECT_EQ(Error({"network", "--rank", "0", "--ring", "a"}), "--ring: 'a': expected HOST:PORT");
  EXPECT_EQ(Error({"network", "--rank", "0", "--ring", "::1:5"}),
            "--ring: '::1:5': an IPv6 host goes in brackets: [::1]:PORT");
  EXPECT_EQ(Error({"network", "--rank", "0", "--ring", "a:1,"}), "--ring: '': expected HOST:PORT");
  EXPECT_EQ(Error({"gpu", "--bytes", "0"}), "--bytes: expected bytes from 1 to 16Gi (e.g. 67108864 or 64Mi), got '0'");
  EXPECT_EQ(Error({"gpu", "--bytes", "17Gi"}),
            "--bytes: expected bytes from 1 to 16Gi (e.g. 67108864 or 64Mi), got '17Gi'");
  EXPECT_EQ(Error({"gpu", "--rounds"}), "--rounds: missing its value");
  EXPECT_EQ(Error({"gpu", "--rank", "1"}), "unknown flag '--rank' for the gpu probe");
}

}  // namespace
}  // namespace gpool::probe
