// Issue 50: the vendors' tools as recorded outputs (testdata/vendors, see its
// README: synthesised from each tool's documented layout), their parsers,
// the probe that picks the node's family, and discovery with them.
#include "worker/discovery/vendor_smi.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "protocol/validate.h"
#include "worker/discovery/discover.h"
#include "worker/discovery/vendor_probe.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

std::string Recorded(const std::string& name) {
  std::ifstream in(std::string(GPOOL_VENDOR_TESTDATA_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct RecordedCase {
  std::string file;
  NodeVendor vendor;
  size_t count;
  std::string model;
  uint64_t memory_mib;
  std::string uuid0;
  uint32_t cores = 0;
};

std::vector<RecordedCase> RecordedCases() {
  return {
      {"npu-smi-info-910b.txt", NodeVendor::kAscend, 8, "Ascend910B3", 65536, "ascend-0000:C1:00.0"},
      {"xpu-smi-p800.txt", NodeVendor::kKunlun, 8, "P800", 98304, "kunlun-02K00Y6217V00000"},
      {"neuron-ls-trn1.json", NodeVendor::kNeuron, 16, "trainium", 32768, "neuron-10:1e.0", 2},
      {"neuron-ls-inf2.json", NodeVendor::kNeuron, 6, "inferentia", 32768, "neuron-80:1f.0", 2},
      {"mx-smi-c500.txt", NodeVendor::kMetax, 8, "MetaX C500", 65536, "metax-0000:0f:00.0"},
      {"efsmi-s60.txt", NodeVendor::kEnflame, 8, "S60", 49120, "enflame-A018J30510000"},
      {"hy-smi-k100.json", NodeVendor::kHygonDcu, 8, "K100_AI", 65520, "hygon-dcu-0x18f68e602b8a7900"},
      {"rocm-smi-mi300x.json", NodeVendor::kAmd, 8, "AMD Instinct MI300X OAM", 196592, "amd-0x18f68e602b8a7900"},
  };
}

TEST(VendorSmiTest, EachRecordedOutputParses) {
  for (const RecordedCase& c : RecordedCases()) {
    SCOPED_TRACE(c.file);
    auto gpus = ParseVendorTool(c.vendor, Recorded(c.file));
    ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
    ASSERT_EQ(gpus->size(), c.count);
    std::set<std::string> uuids;
    for (size_t i = 0; i < gpus->size(); ++i) {
      const GpuInfo& gpu = (*gpus)[i];
      EXPECT_EQ(gpu.index, i);
      EXPECT_EQ(gpu.model, c.model);
      EXPECT_EQ(gpu.memory_mib, c.memory_mib);
      EXPECT_EQ(gpu.cores, c.cores);
      // What discovery reports maps back to the same family, on the worker
      // (VendorOf) as on the scheduler (same names).
      EXPECT_EQ(VendorOf(gpu), c.vendor) << gpu.vendor << " / " << gpu.model;
      uuids.insert(gpu.uuid);
    }
    EXPECT_EQ((*gpus)[0].uuid, c.uuid0);
    EXPECT_EQ(uuids.size(), gpus->size()) << "uuids are unique";
  }
}

TEST(VendorSmiTest, NpuSmiHealthColumn) {
  auto gpus = ParseNpuSmi(Recorded("npu-smi-info-910b.txt"));
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  for (const GpuInfo& gpu : *gpus) EXPECT_EQ(gpu.healthy, gpu.index != 5) << "NPU 5 is Critical";
}

TEST(VendorSmiTest, UnreadableOutputIsAnErrorAndEmptyIsNotFound) {
  EXPECT_EQ(ParseNeuronLs("{not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseNeuronLs("[{\"bdf\": \"00:1e.0\"}]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseNeuronLs("[]").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseRocmSmiJson("[1]", "amd", "amd").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRocmSmiJson("{\"system\": {}}", "amd", "amd").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseRocmSmiJson("{\"card0\": {\"VRAM Total Memory (B)\": \"lots\"}}", "amd", "amd").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseNpuSmi("npu-smi: command failed\n").status().code(), StatusCode::kNotFound);
  // A device's first row without its second: a layout this parser does not know.
  auto cut = ParseMxSmi("| 0           MetaX C500             | 0000:0f:00.0        | 0%                   |\n");
  EXPECT_EQ(cut.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cut.status().message().find("line 1"), std::string::npos) << cut.status().message();
  EXPECT_EQ(ParseXpuSmi("  0 0000:52:00.0 /dev/xpu0 N\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseVendorTool(NodeVendor::kNvidia, "").status().code(), StatusCode::kFailedPrecondition);
}

// A runner that answers from recorded outputs: `outputs` by tool name;
// any other tool is not installed.
VendorToolRunner RecordedRunner(std::map<std::string, std::string> outputs, std::vector<std::string>* ran = nullptr) {
  return [outputs = std::move(outputs), ran](const std::vector<std::string>& argv) -> Result<std::string> {
    if (ran != nullptr) ran->push_back(argv[0]);
    auto it = outputs.find(argv[0]);
    if (it == outputs.end()) return Status::NotFound(argv[0] + " is not installed");
    return it->second;
  };
}

TEST(VendorSmiTest, TheProbeTakesTheFamilyWhoseToolListsDevices) {
  std::vector<std::string> ran;
  VendorProbeOptions options;
  options.runner = RecordedRunner({{"mx-smi", Recorded("mx-smi-c500.txt")}}, &ran);
  auto found = ProbeVendorGpus(options);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->vendor, NodeVendor::kMetax);
  EXPECT_EQ(found->gpus.size(), 8u);
  EXPECT_EQ(ran, (std::vector<std::string>{"npu-smi", "xpu-smi", "neuron-ls", "mx-smi"})) << "table order, then stop";

  // A tool that is installed but fails (no devices of its kind) is skipped.
  options.runner = [](const std::vector<std::string>& argv) -> Result<std::string> {
    if (argv[0] == "npu-smi") return Status::Unavailable("npu-smi info failed (status 256)");
    if (argv[0] == "rocm-smi") return Recorded("rocm-smi-mi300x.json");
    return Status::NotFound(argv[0] + " is not installed");
  };
  found = ProbeVendorGpus(options);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->vendor, NodeVendor::kAmd);

  options.runner = RecordedRunner({});
  EXPECT_EQ(ProbeVendorGpus(options).status().code(), StatusCode::kNotFound);
  // Output a parser cannot read is an error, not a guess.
  options.runner = RecordedRunner({{"neuron-ls", "garbage"}});
  EXPECT_EQ(ProbeVendorGpus(options).status().code(), StatusCode::kInvalidArgument);
}

TEST(VendorSmiTest, DiscoveryWithoutNvmlUsesTheVendorTool) {
  testing::CapturedLog log;
  DiscoveryOptions options;
  options.node_name = "npu-node";
  options.nvml.library = "libnvidia-ml-does-not-exist.so.1";
  options.vendor.runner = RecordedRunner({{"npu-smi", Recorded("npu-smi-info-910b.txt")}});
  options.logger = log.logger();
  auto node = DiscoverNode(options);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  ASSERT_EQ(node->gpus.size(), 8u);
  EXPECT_EQ(VendorOf(node->gpus[0]), NodeVendor::kAscend);
  EXPECT_FALSE(node->gpus[5].healthy);
  EXPECT_TRUE(ValidateNodeSpec(*node).ok());
  EXPECT_TRUE(log.Contains("vendor tool probe ok vendor=ascend gpus=8")) << log.text();

  options.vendor.runner = RecordedRunner({{"efsmi", "| 0 Enflame S60 | 33.5.3 | 3b:00.0 |\n"}});
  EXPECT_EQ(DiscoverNode(options).status().code(), StatusCode::kInvalidArgument) << "an unreadable tool stops discovery";
  options.vendor_tools = false;
  auto cpu = DiscoverNode(options);
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_TRUE(cpu->gpus.empty());
}

// The real runner: a program's stdout, its absence, its failure, its overrun.
TEST(VendorSmiTest, RunVendorToolReadsStdoutWithADeadline) {
  auto echoed = RunVendorTool({"echo", "npu", "0"}, 5'000);
  ASSERT_TRUE(echoed.ok()) << echoed.status().ToString();
  EXPECT_EQ(*echoed, "npu 0\n");
  EXPECT_EQ(RunVendorTool({"gpool-no-such-vendor-tool"}, 5'000).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(RunVendorTool({"false"}, 5'000).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(RunVendorTool({"sh", "-c", "exec sleep 30"}, 200).status().code(), StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace gpool::worker
