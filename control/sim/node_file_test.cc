// gpool-sim's cluster from a gpool node spec file: which file is which,
// what a spec node carries into the scheduler's view, errors that name the
// file and field, and both experiments run on such a cluster.
#include "control/sim/node_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "control/sim/event_sim.h"
#include "control/sim/paper_experiment.h"
#include "control/sim/policies.h"
#include "control/sim/sim_cluster.h"
#include "control/sim/workload.h"
#include "topology/node_spec_file.h"

namespace gpool::sim {
namespace {

// A 2-NUMA node with 4 NVLinked A100s, one of them unhealthy, and a label.
constexpr const char* kSpec = R"(
name: a100
labels: {rack: r1}
cpus: 64
memory: 512Gi
numa:
  - {id: 0, cpus: 32, memory: 256Gi, cpulist: "0-31"}
  - {id: 1, cpus: 32, memory: 256Gi, cpulist: "32-63"}
gpus:
  - {index: 0, uuid: GPU-a, model: A100-SXM4-80GB, memory: 80Gi, numa: 0, nvlink_peers: [1]}
  - {index: 1, uuid: GPU-b, model: A100-SXM4-80GB, memory: 80Gi, numa: 0, nvlink_peers: [0]}
  - {index: 2, uuid: GPU-c, model: A100-SXM4-80GB, memory: 80Gi, numa: 1, link_group: 1,
     mig_mode: static, mig_instances: [{profile: 3g.40gb, start: 4}, {profile: 4g.40gb, start: 0}]}
  - {index: 3, uuid: GPU-d, model: A100-SXM4-80GB, memory: 80Gi, numa: 1, healthy: false}
)";

class NodeFileTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& path : written_) std::filesystem::remove(path);
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "gpool-node-file-" + std::to_string(getpid()) + "-" + name;
    std::ofstream(path) << text;
    written_.push_back(path);
    return path;
  }

  std::vector<std::string> written_;
};

TEST_F(NodeFileTest, KindByExtensionElseByContent) {
  // Known extensions decide without reading the file.
  EXPECT_EQ(*DetectNodeFile("/nonexistent/nodes.csv"), NodeFileKind::kTrace);
  EXPECT_EQ(*DetectNodeFile("/nonexistent/node.YAML"), NodeFileKind::kSpec);
  EXPECT_EQ(*DetectNodeFile("/nonexistent/node.yml"), NodeFileKind::kSpec);
  EXPECT_EQ(*DetectNodeFile("/nonexistent/node.json"), NodeFileKind::kSpec);
  EXPECT_EQ(*DetectNodeFile(Write("nodes.txt", "\nsn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,1,T4\n")),
            NodeFileKind::kTrace);
  EXPECT_EQ(*DetectNodeFile(Write("node.spec", "# a node\n\nname: x\ncpus: 1\n")), NodeFileKind::kSpec);
  EXPECT_EQ(*DetectNodeFile(Write("node.conf", "{\n  \"name\": \"x\"\n}\n")), NodeFileKind::kSpec);
  EXPECT_EQ(DetectNodeFile("/nonexistent/nodes").status().code(), StatusCode::kNotFound);
}

TEST_F(NodeFileTest, SpecNodesCarryWhatTheCoordinatorWouldSee) {
  const auto spec = topology::ParseNodeSpec(kSpec, "a100.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const auto nodes = NodesFromSpec(*spec, "a100.yaml", NodeFileOptions{3, false});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  std::set<std::string> uuids;
  for (const TraceNode& trace : *nodes) {
    ASSERT_NE(trace.view, nullptr);
    for (const auto& gpu : trace.view->gpus) uuids.insert(gpu.uuid);
  }
  EXPECT_EQ(uuids.size(), 12u) << "every device distinct, as the worker fleet makes them";
  const TraceNode& first = nodes->front();
  EXPECT_EQ(first.name, "a100-0001");
  EXPECT_EQ((*nodes)[2].name, "a100-0003");
  EXPECT_EQ(first.cpu_milli, 64000u);
  EXPECT_EQ(first.gpus, 4u);
  EXPECT_EQ(first.model, "A100-SXM4-80GB");
  const topology::NodeView& view = *first.view;
  EXPECT_EQ(view.name, "a100-0001");
  EXPECT_TRUE(view.ready);
  EXPECT_EQ(view.cpu_milli_total, 64000u);
  EXPECT_EQ(view.cpu_milli_free, 64000u);
  EXPECT_EQ(view.memory_mib_free, 512u * 1024);
  EXPECT_EQ(view.labels.at("rack"), "r1");
  ASSERT_EQ(view.numa.size(), 2u);
  EXPECT_EQ(view.numa[1].cpu_milli_free, 32000u);
  ASSERT_EQ(view.gpus.size(), 4u);
  EXPECT_EQ(view.gpus[0].memory_mib, 80u * 1024);
  EXPECT_EQ(view.gpus[0].uuid, "GPU-a-0001");
  EXPECT_EQ(view.gpus[1].nvlink_peers, std::vector<uint32_t>{0});
  EXPECT_EQ(view.gpus[2].numa, 1);
  EXPECT_EQ(view.gpus[2].link_group, 1);
  EXPECT_EQ(view.gpus[2].mig_mode, "static");
  ASSERT_EQ(view.gpus[2].mig.size(), 2u);
  EXPECT_FALSE(view.gpus[3].healthy);

  // In trace units a pod's gpu_milli is the same fraction of this device.
  const auto units = NodesFromSpec(*spec, "a100.yaml", NodeFileOptions{1, true});
  ASSERT_TRUE(units.ok());
  for (const auto& gpu : units->front().view->gpus) EXPECT_EQ(gpu.memory_mib, kTraceGpuUnits);
  const SimCluster cluster = SimCluster::FromTrace(*units);
  EXPECT_EQ(cluster.gpu_capacity_milli(), 3000u) << "the unhealthy GPU is no capacity";
}

TEST_F(NodeFileTest, EveryWorkerExampleIsACluster) {
  const std::string dir = GPOOL_NODE_SPEC_EXAMPLES_DIR;
  for (const char* file : {"node-8gpu.yaml", "node-8gpu.json", "node-a100-mig-static.yaml", "node-h100-mig-dynamic.yaml",
                           "node-ascend910b.yaml", "node-kunlun-p800.yaml", "node-metax-c500.yaml",
                           "node-enflame-s60.yaml", "node-trn1.yaml"}) {
    const auto nodes = LoadNodeFile(dir + "/" + file, NodeFileOptions{2, false});
    ASSERT_TRUE(nodes.ok()) << file << ": " << nodes.status().ToString();
    ASSERT_EQ(nodes->size(), 2u) << file;
    EXPECT_GT(nodes->front().gpus, 0u) << file;
  }
  const auto trn = LoadNodeFile(dir + "/node-trn1.yaml");
  ASSERT_TRUE(trn.ok());
  EXPECT_EQ(trn->front().view->gpus[0].cores, 2u);
  EXPECT_EQ(trn->front().view->gpus[0].vendor, "aws");
}

TEST_F(NodeFileTest, TraceFilesStillReadAsTraces) {
  const auto nodes = LoadNodeFile(Write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n"));
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ(nodes->front().view, nullptr);
  EXPECT_EQ(nodes->front().model, "T4");
}

TEST_F(NodeFileTest, NamelessSpecIsNamedAfterItsFile) {
  const auto nodes = LoadNodeFile(Write("h100.yaml", "cpus: 8\nmemory: 64Gi\ngpus: {count: 2, model: H100}\n"),
                                  NodeFileOptions{2, false});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_EQ(nodes->front().name, "gpool-node-file-" + std::to_string(getpid()) + "-h100-0001");
}

TEST_F(NodeFileTest, BadInputNamesTheFileAndTheField) {
  const std::string bad_memory = Write("bad.yaml", "name: n\ncpus: 8\nmemory: 64Gi\ngpus: {count: 2, memory: 80Q}\n");
  auto nodes = LoadNodeFile(bad_memory);
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nodes.status().message().find(bad_memory + ": gpus.memory: '80Q'"), std::string::npos)
      << nodes.status().message();

  const std::string bad_yaml = Write("syntax.yaml", "name: n\ncpus: 8\ngpus: [unclosed\n");
  nodes = LoadNodeFile(bad_yaml);
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.status().message().find(bad_yaml + ":"), std::string::npos) << nodes.status().message();
  EXPECT_NE(nodes.status().message().find("not valid YAML or JSON"), std::string::npos) << nodes.status().message();

  // Overlapping static MIG instances: refused as the coordinator refuses the registration.
  const std::string bad_mig =
      Write("mig.yaml", "name: m\ncpus: 8\nmemory: 64Gi\ngpus:\n  - {uuid: G, model: A100-SXM4-80GB, memory: 80Gi,\n"
                        "     mig_instances: [{profile: 4g.40gb, start: 0}, {profile: 1g.10gb, start: 1}]}\n");
  nodes = LoadNodeFile(bad_mig);
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nodes.status().message().find(bad_mig + ": "), std::string::npos) << nodes.status().message();
  EXPECT_NE(nodes.status().message().find("gpus[0]"), std::string::npos) << nodes.status().message();

  const std::string empty = Write("empty.yaml", "");
  nodes = LoadNodeFile(empty);
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.status().message().find(empty + ": the file is empty"), std::string::npos);

  EXPECT_EQ(LoadNodeFile("/nonexistent/node.yaml").status().code(), StatusCode::kNotFound);
  const auto spec = topology::ParseNodeSpec("name: n\ncpus: 1\nmemory: 1Gi\n", "n.yaml");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(NodesFromSpec(*spec, "n.yaml", NodeFileOptions{0, false}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NodesFromSpec(*spec, "n.yaml", NodeFileOptions{kMaxSpecNodes + 1, false}).status().code(),
            StatusCode::kInvalidArgument);
}

TracePod NodeFilePod(uint32_t gpus, uint32_t milli) {
  TracePod pod;
  pod.name = "p";
  pod.cpu_milli = 1000;
  pod.memory_mib = 1024;
  pod.num_gpu = gpus;
  pod.gpu_milli = milli;
  return pod;
}

// Half-GPU pods on 2 nodes x 2 GPUs: with shares as fractions of the device
// every pod that arrives by 100 % fits, so the cluster is full then.
TEST_F(NodeFileTest, PaperExperimentOnASpecCluster) {
  const auto spec = topology::ParseNodeSpec(
      "name: g\ncpus: 64\nmemory: 256Gi\ngpus: {count: 2, model: A100-SXM4-80GB, memory: 80Gi, nvlink: all}\n", "g.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const auto nodes = NodesFromSpec(*spec, "g.yaml", NodeFileOptions{2, true});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  PaperOptions options;
  options.seeds = 2;
  options.threads = 1;
  options.arrival_pct = 130;
  const PolicyResult result =
      RunPaperExperiment(*nodes, {NodeFilePod(1, 500), NodeFilePod(2, 1000)}, "fragmentation", *PolicyConfig("fragmentation"), options);
  ASSERT_EQ(result.seeds.size(), 2u);
  for (const SeedResult& seed : result.seeds) {
    EXPECT_GT(seed.placed, 0u);
    ASSERT_GT(seed.alloc_pct.size(), 100u);
    EXPECT_LE(seed.alloc_pct.back(), 100.0);
  }
  const PolicyResult halves =
      RunPaperExperiment(*nodes, {NodeFilePod(1, 500)}, "best-fit", *PolicyConfig("best-fit"), options);
  EXPECT_DOUBLE_EQ(halves.MeanAllocAt(100), 100.0);
  EXPECT_DOUBLE_EQ(EmptyClusterFragPct(*nodes, {NodeFilePod(1, 500)}), 0.0);
}

// JSONL jobs ask in MiB, so the spec's GPU memory stays: two 40 GiB shares
// fill one 80 GiB GPU, a whole-GPU job the other, all at once.
TEST_F(NodeFileTest, EventRunOnASpecCluster) {
  const auto spec = topology::ParseNodeSpec(
      "name: g\ncpus: 64\nmemory: 256Gi\nnuma: [{cpus: 32, memory: 128Gi}, {cpus: 32, memory: 128Gi}]\n"
      "gpus: {count: 2, model: A100-SXM4-80GB, memory: 80Gi, nvlink: all}\n",
      "g.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const auto nodes = NodesFromSpec(*spec, "g.yaml", NodeFileOptions{1, false});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  const auto jobs = ParseJsonlWorkload(
      "{\"arrival_s\": 0, \"duration_s\": 60, \"gpus\": 1, \"cpu_milli\": 1000, \"gpu_memory_mib\": 40960}\n"
      "{\"arrival_s\": 0, \"duration_s\": 60, \"gpus\": 1, \"cpu_milli\": 1000, \"gpu_memory_mib\": 40960}\n"
      "{\"arrival_s\": 0, \"duration_s\": 60, \"gpus\": 1, \"cpu_milli\": 1000}\n"
      "{\"arrival_s\": 0, \"duration_s\": 60, \"gpus\": 1, \"cpu_milli\": 1000, \"gpu_model\": \"H100\"}\n",
      "jobs.jsonl");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  const EventRun run = RunEvents(*nodes, *jobs, {}, *PolicyConfig("default"), EventOptions{});
  EXPECT_EQ(run.jobs, 4u);
  EXPECT_EQ(run.started, 3u) << "the H100 job finds no H100";
  EXPECT_EQ(run.finished, 3u);
  ASSERT_FALSE(run.series.empty());
  EXPECT_NEAR(run.series.front().alloc_pct, 100.0, 1e-9);
}

}  // namespace
}  // namespace gpool::sim
