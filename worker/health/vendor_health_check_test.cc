// Issue 50: a vendor family's health from its tool, on recorded outputs
// (discovery/testdata/vendors).
#include "worker/health/vendor_health_check.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

std::string RecordedTool(const std::string& name) {
  std::ifstream in(std::string(GPOOL_VENDOR_TESTDATA_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A runner whose answer the test changes between runs.
struct ScriptedTool {
  Result<std::string> answer = Status::NotFound("not set");
  int runs = 0;
  VendorToolRunner runner() {
    return [this](const std::vector<std::string>&) {
      ++runs;
      return answer;
    };
  }
};

std::vector<uint32_t> Indices(uint32_t n, uint32_t first = 0) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(first + i);
  return out;
}

TEST(VendorHealthCheckTest, NpuSmiCriticalIsReportedOnItsNodeIndex) {
  ScriptedTool tool;
  tool.answer = RecordedTool("npu-smi-info-910b.txt");
  // Node GPU indices 10..17 are the NPUs' ordinals 0..7.
  VendorHealthCheck check({.vendor = NodeVendor::kAscend, .gpu_indices = Indices(8, 10), .runner = tool.runner()});
  EXPECT_EQ(check.name(), "ascend-health");
  const auto findings = check.Run(0);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].device, "gpu/15");
  EXPECT_EQ(findings[0].kind, HealthKind::kGpuLost);
  EXPECT_EQ(findings[0].severity, HealthSeverity::kFatal);
  EXPECT_NE(findings[0].message.find("npu-smi reports"), std::string::npos) << findings[0].message;
  EXPECT_EQ(tool.runs, 1);
}

TEST(VendorHealthCheckTest, ADeviceTheToolNoLongerListsIsLost) {
  ScriptedTool tool;
  tool.answer = RecordedTool("neuron-ls-inf2.json");  // 6 devices
  VendorHealthCheck check({.vendor = NodeVendor::kNeuron, .gpu_indices = Indices(8), .runner = tool.runner()});
  auto findings = check.Run(0);
  ASSERT_EQ(findings.size(), 2u) << "discovery saw 8, the tool lists 6";
  EXPECT_EQ(findings[0].device, "gpu/6");
  EXPECT_EQ(findings[1].device, "gpu/7");
  EXPECT_NE(findings[0].message.find("no longer listed by neuron-ls"), std::string::npos) << findings[0].message;

  // Neuron's tool has no health column: a listed device is fine.
  VendorHealthCheck six({.vendor = NodeVendor::kNeuron, .gpu_indices = Indices(6), .runner = tool.runner()});
  EXPECT_TRUE(six.Run(0).empty());

  tool.answer = std::string("[]");  // the tool runs and lists nothing: all are gone
  EXPECT_EQ(six.Run(0).size(), 6u);
}

TEST(VendorHealthCheckTest, AToolThatCannotLookReportsNothingAndLogsOnce) {
  testing::CapturedLog log;
  ScriptedTool tool;
  tool.answer = Status::DeadlineExceeded("rocm-smi did not finish within 5000 ms");
  VendorHealthCheck check(
      {.vendor = NodeVendor::kAmd, .gpu_indices = Indices(8), .runner = tool.runner(), .logger = log.logger()});
  EXPECT_TRUE(check.Run(0).empty());
  EXPECT_TRUE(check.Run(0).empty());
  EXPECT_EQ(tool.runs, 2);
  const std::string text = log.text();
  EXPECT_NE(text.find("vendor health check cannot look vendor=amd"), std::string::npos) << text;
  EXPECT_EQ(text.find("cannot look"), text.rfind("cannot look")) << "logged once per change: " << text;

  tool.answer = std::string("not json");  // unreadable: cannot look either
  EXPECT_TRUE(check.Run(0).empty());
  tool.answer = RecordedTool("rocm-smi-mi300x.json");
  EXPECT_TRUE(check.Run(0).empty()) << "all 8 listed again";
}

}  // namespace
}  // namespace gpool::worker
