// Issue 50: a vendor family's health from its tool, on recorded outputs
// (discovery/testdata/vendors).
#include "worker/health/vendor_health_check.h"

#include <chrono>
#include <fstream>
#include <future>
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

// The tool runs on the check's own thread: one Run starts it, a later Run
// takes its answer (and starts the next, waited for too, so the test may
// change the scripted answer). Each settled run is two tool runs.
std::vector<HealthFinding> Settled(VendorHealthCheck& check) {
  check.Run(0);
  EXPECT_TRUE(check.WaitForTool(std::chrono::seconds(10)));
  auto findings = check.Run(0);
  EXPECT_TRUE(check.WaitForTool(std::chrono::seconds(10)));
  return findings;
}

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
  const auto findings = Settled(check);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].device, "gpu/15");
  EXPECT_EQ(findings[0].kind, HealthKind::kGpuLost);
  EXPECT_EQ(findings[0].severity, HealthSeverity::kFatal);
  EXPECT_NE(findings[0].message.find("npu-smi reports"), std::string::npos) << findings[0].message;
  EXPECT_EQ(tool.runs, 2);
}

TEST(VendorHealthCheckTest, ADeviceTheToolNoLongerListsIsLost) {
  ScriptedTool tool;
  tool.answer = RecordedTool("neuron-ls-inf2.json");  // 6 devices
  VendorHealthCheck check({.vendor = NodeVendor::kNeuron, .gpu_indices = Indices(8), .runner = tool.runner()});
  auto findings = Settled(check);
  ASSERT_EQ(findings.size(), 2u) << "discovery saw 8, the tool lists 6";
  EXPECT_EQ(findings[0].device, "gpu/6");
  EXPECT_EQ(findings[1].device, "gpu/7");
  EXPECT_NE(findings[0].message.find("no longer listed by neuron-ls"), std::string::npos) << findings[0].message;

  // Neuron's tool has no health column: a listed device is fine.
  VendorHealthCheck six({.vendor = NodeVendor::kNeuron, .gpu_indices = Indices(6), .runner = tool.runner()});
  EXPECT_TRUE(Settled(six).empty());

  tool.answer = std::string("[]");  // the tool runs and lists nothing: all are gone
  EXPECT_EQ(Settled(six).size(), 6u);
}

// The agent's loop never waits for the tool: a tool that takes its time
// leaves Run returning at once with the last finished run's findings.
TEST(VendorHealthCheckTest, RunNeverWaitsForTheTool) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  const std::string listing = RecordedTool("neuron-ls-inf2.json");  // 6 devices
  VendorHealthCheck check({.vendor = NodeVendor::kNeuron,
                           .gpu_indices = Indices(8),
                           .runner = [released, listing](const std::vector<std::string>&) -> Result<std::string> {
                             released.wait();
                             return listing;
                           }});
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(check.Run(0).empty()) << "nothing finished yet";
  EXPECT_TRUE(check.Run(0).empty()) << "still running: not waited for, not started twice";
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  release.set_value();
  ASSERT_TRUE(check.WaitForTool(std::chrono::seconds(10)));
  EXPECT_EQ(check.Run(0).size(), 2u) << "the finished run's answer";
  ASSERT_TRUE(check.WaitForTool(std::chrono::seconds(10)));
}

TEST(VendorHealthCheckTest, AToolThatCannotLookReportsNothingAndLogsOnce) {
  testing::CapturedLog log;
  ScriptedTool tool;
  tool.answer = Status::DeadlineExceeded("rocm-smi did not finish within 5000 ms");
  VendorHealthCheck check(
      {.vendor = NodeVendor::kAmd, .gpu_indices = Indices(8), .runner = tool.runner(), .logger = log.logger()});
  EXPECT_TRUE(Settled(check).empty());
  EXPECT_TRUE(Settled(check).empty());
  EXPECT_EQ(tool.runs, 4);
  const std::string text = log.text();
  EXPECT_NE(text.find("vendor health check cannot look vendor=amd"), std::string::npos) << text;
  EXPECT_EQ(text.find("cannot look"), text.rfind("cannot look")) << "logged once per change: " << text;

  tool.answer = std::string("not json");  // unreadable: cannot look either
  EXPECT_TRUE(Settled(check).empty());
  tool.answer = RecordedTool("rocm-smi-mi300x.json");
  EXPECT_TRUE(Settled(check).empty()) << "all 8 listed again";
}

}  // namespace
}  // namespace gpool::worker
