#include "client/probe/probe_line.h"

#include <gtest/gtest.h>

namespace gpool::probe {
namespace {

TEST(ProbeLineTest, NetworkLineRoundTrips) {
  const std::string line = FormatNetworkLine({2950.14, 41.25, "host-b:29011"});
  EXPECT_EQ(line, R"({"probe":"network","bandwidth_mib_s":2950.1,"latency_us":41.3,"peer":"host-b:29011"})");
  auto m = ParseProbeOutput("network", "starting\n" + line + "\n");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_DOUBLE_EQ(m->bandwidth_mib_s, 2950.1);
  EXPECT_DOUBLE_EQ(m->latency_us, 41.3);
  EXPECT_EQ(m->detail, "host-b:29011");
}

TEST(ProbeLineTest, GpuNodeBandwidthIsItsSlowestGpusSlowerDirection) {
  const std::string log = FormatGpuLine({0, "H100", 24000, 25000}) + "\n" + FormatGpuLine({1, "H100", 23000, 9000}) +
                          "\n";
  auto m = ParseProbeOutput("gpu", log);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_DOUBLE_EQ(m->bandwidth_mib_s, 9000);
  EXPECT_EQ(m->detail, "2 GPUs");
  EXPECT_EQ(m->latency_us, 0);
}

TEST(ProbeLineTest, ErrorsMissingAndMalformedLines) {
  auto no_driver = ParseProbeOutput("gpu", FormatErrorLine("gpu", "no CUDA driver") + "\n");
  EXPECT_EQ(no_driver.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(no_driver.status().message(), "no CUDA driver");

  EXPECT_EQ(ParseProbeOutput("network", "").status().code(), StatusCode::kNotFound);
  // A line of the other kind, broken JSON and other output are skipped.
  const std::string other = FormatGpuLine({0, "H100", 1, 1}) + "\n{not json\nhello\n";
  EXPECT_EQ(ParseProbeOutput("network", other).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseProbeOutput("network", R"({"probe":"network","latency_us":3})").status().code(),
            StatusCode::kMalformed);
  EXPECT_EQ(ParseProbeOutput("network", R"({"probe":"network","bandwidth_mib_s":-3})").status().code(),
            StatusCode::kMalformed);
  // No trailing newline is fine.
  EXPECT_TRUE(ParseProbeOutput("network", R"({"probe":"network","bandwidth_mib_s":3})").ok());
}

}  // namespace
}  // namespace gpool::probe
