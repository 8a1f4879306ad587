// The trace readers: header-driven columns, short and full pod files, typed
// errors naming file, line and column; and the real files when present.
#include "control/sim/trace.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace gpool::sim {
namespace {

TEST(TraceTest, NodesAreReadByHeaderName) {
  auto nodes = ParseTraceNodes("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nc0,96000,393216,0,\n",
                               "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "n0");
  EXPECT_EQ((*nodes)[0].gpus, 2u);
  EXPECT_EQ((*nodes)[0].model, "P100");
  EXPECT_EQ((*nodes)[1].gpus, 0u);
  EXPECT_EQ((*nodes)[1].model, "");
}

TEST(TraceTest, FullAndShortPodFilesReadTheSame) {
  const std::string full =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
      "scheduled_time\r\np0,12000,16384,1,460,V100M16|V100M32,LS,Running,5,100,6\r\n";
  auto pods = ParseTracePods(full, "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 1u);
  const TracePod& pod = pods->front();
  EXPECT_EQ(pod.gpu_milli, 460u);
  EXPECT_EQ(pod.gpu_spec, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ(pod.qos, "LS");
  EXPECT_EQ(pod.creation_time, 5);
  EXPECT_EQ(pod.deletion_time, 100);
  auto short_pods = ParseTracePods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,12000,16384,8,1000\n", "s.csv");
  ASSERT_TRUE(short_pods.ok()) << short_pods.status().ToString();
  EXPECT_EQ(short_pods->front().num_gpu, 8u);
  EXPECT_TRUE(short_pods->front().gpu_spec.empty());
  EXPECT_EQ(short_pods->front().qos, "");
}

TEST(TraceTest, BadLinesAreTypedErrorsNamingFileLineAndColumn) {
  const std::string header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  struct Case {
    std::string text;
    std::string error;
  };
  for (const Case& c : {
           Case{"", "p.csv: empty file (expected a header line)"},
           Case{"name,cpu_milli\n", "p.csv:1: missing column 'memory_mib'"},
           Case{header + "p0,12x,1,1,1000\n", "p.csv:2: cpu_milli: '12x' is not a number"},
           Case{header + "p0,1,1,1\n", "p.csv:2: gpu_milli: missing (the row has 4 fields)"},
           Case{header + "p0,1,1,2,500\n", "p.csv:2: gpu_milli: a share (below 1000) needs num_gpu 1, not 2"},
           Case{header + "p0,1,1,1,1001\n", "p.csv:2: gpu_milli: 1001 is above 1000"},
           Case{header + "p0,1,1,1,0\n", "p.csv:2: gpu_milli: 0 with num_gpu above 0"},
           Case{header + "p0,1,1,9,1000\n", "p.csv:2: num_gpu: 9 is more than 8"},
           Case{header + ",1,1,1,1000\n", "p.csv:2: name: empty"},
           Case{header + "p0,-1,1,1,1000\n", "p.csv:2: cpu_milli: '-1' is not a number"},
       }) {
    auto pods = ParseTracePods(c.text, "p.csv");
    ASSERT_FALSE(pods.ok()) << c.text;
    EXPECT_EQ(pods.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(pods.status().message(), c.error);
  }
  EXPECT_EQ(LoadTracePods("/nonexistent/pods.csv").status().code(), StatusCode::kNotFound);
}

// gpool's own optional columns: a pod's node and GPU placement policy.
TEST(TraceTest, PlacementPolicyColumnsAreOptionalAndChecked) {
  const std::string header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,node_policy,gpu_policy\n";
  auto pods = ParseTracePods(header + "p0,1,1,1,1000,spread,binpack\np1,1,1,1,1000,,\n", "p.csv");
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].node_policy, PlacementPolicy::kSpread);
  EXPECT_EQ((*pods)[0].gpu_policy, PlacementPolicy::kBinpack);
  EXPECT_EQ((*pods)[1].node_policy, PlacementPolicy::kDefault);
  EXPECT_EQ((*pods)[1].gpu_policy, PlacementPolicy::kDefault);
  auto bad = ParseTracePods(header + "p0,1,1,1,1000,scatter,\n", "p.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "p.csv:2: node_policy: 'scatter' is not default, binpack or spread");
}

// The shared data set, when the checkout sits beside it (CI clones may not).
TEST(TraceTest, TheOpenbFilesLoadWithTheirDocumentedSizes) {
  const std::string dir = GPOOL_TRACE_DIR;
  if (!std::filesystem::exists(dir + "/openb_node_list_gpu_node.csv")) GTEST_SKIP() << "no trace at " << dir;
  auto nodes = LoadTraceNodes(dir + "/openb_node_list_gpu_node.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  uint64_t gpus = 0;
  for (const auto& node : *nodes) gpus += node.gpus;
  EXPECT_EQ(nodes->size(), 1213u);
  EXPECT_EQ(gpus, 6212u);
  for (const char* variant : {"default", "multigpu20", "gpushare40", "gpuspec25", "cpu050"}) {
    auto pods = LoadTracePods(dir + "/openb_pod_list_" + variant + ".csv");
    ASSERT_TRUE(pods.ok()) << variant << ": " << pods.status().ToString();
    EXPECT_GT(pods->size(), 1000u) << variant;
  }
}

}  // namespace
}  // namespace gpool::sim
