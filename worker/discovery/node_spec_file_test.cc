#include "worker/discovery/node_spec_file.h"

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

constexpr const char* kYaml = R"(
name: n1
hostname: n1.example
labels: {pool: public, rack: r1}
cpus: 7.5
memory: 64Gi
numa:
  - {id: 0, cpus: 4, memory: 32Gi}
  - {id: 1, cpu_milli: 3500, memory_mib: 32768}
gpus:
  - {index: 0, uuid: GPU-a, model: A100-SXM4-80GB, memory: 80Gi, numa: 0, nvlink_peers: [1]}
  - {index: 1, uuid: GPU-b, model: A100-SXM4-80GB, vendor: nvidia, memory_mib: 81920, numa: 1,
     nvlink_peers: [0], healthy: false}
nics:
  - {name: ib0, leaf_switch: leaf-1, speed_gbps: 200}
)";

TEST(NodeSpecFileTest, ParsesYaml) {
  auto spec = ParseNodeSpec(kYaml, "spec.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "n1");
  EXPECT_EQ(spec->hostname, "n1.example");
  EXPECT_EQ(spec->labels.at("pool"), "public");
  EXPECT_EQ(spec->cpu_milli, 7500u);
  EXPECT_EQ(spec->memory_mib, 65536u);
  ASSERT_EQ(spec->numa.size(), 2u);
  EXPECT_EQ(spec->numa[1].cpu_milli, 3500u);
  EXPECT_EQ(spec->numa[1].memory_mib, 32768u);
  ASSERT_EQ(spec->gpus.size(), 2u);
  EXPECT_EQ(spec->gpus[0].uuid, "GPU-a");
  EXPECT_EQ(spec->gpus[0].vendor, "nvidia");
  EXPECT_EQ(spec->gpus[0].memory_mib, 81920u);
  EXPECT_EQ(spec->gpus[1].memory_mib, 81920u);
  EXPECT_EQ(spec->gpus[1].numa, 1);
  EXPECT_FALSE(spec->gpus[1].healthy);
  EXPECT_EQ(spec->gpus[0].nvlink_peers, std::vector<uint32_t>{1});
  ASSERT_EQ(spec->nics.size(), 1u);
  EXPECT_EQ(spec->nics[0].leaf_switch, "leaf-1");
  EXPECT_EQ(spec->nics[0].speed_gbps, 200u);
}

TEST(NodeSpecFileTest, ParsesJson) {
  auto spec = ParseNodeSpec(R"({"name": "j1", "cpu_milli": 2000, "memory_mib": 4096,
      "gpus": [{"uuid": "GPU-x", "memory": 40960, "vendor": "amd"}]})",
                            "spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "j1");
  EXPECT_EQ(spec->cpu_milli, 2000u);
  EXPECT_EQ(spec->memory_mib, 4096u);
  ASSERT_EQ(spec->gpus.size(), 1u);
  EXPECT_EQ(spec->gpus[0].index, 0u);
  EXPECT_EQ(spec->gpus[0].memory_mib, 40960u);
  EXPECT_EQ(spec->gpus[0].vendor, "amd");
}

TEST(NodeSpecFileTest, ExampleFilesAgree) {
  const std::string dir = GPOOL_WORKER_EXAMPLES_DIR;
  auto yaml = LoadNodeSpecFile(dir + "/node-8gpu.yaml");
  auto json = LoadNodeSpecFile(dir + "/node-8gpu.json");
  ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(*yaml, *json);
  EXPECT_EQ(yaml->gpus.size(), 8u);
  EXPECT_EQ(yaml->numa.size(), 2u);
  EXPECT_EQ(yaml->nics.size(), 2u);
  EXPECT_EQ(yaml->gpus[5].nvlink_peers.size(), 7u);
  EXPECT_EQ(yaml->gpus[5].numa, 1);
}

TEST(NodeSpecFileTest, CountShorthand) {
  auto spec = ParseNodeSpec(R"(
name: sim-7
cpus: 64
memory: 512Gi
gpus: {count: 8, model: A100-SXM4-80GB, memory: 80Gi, nvlink: all, numa_split: 2}
)",
                            "sim.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->gpus.size(), 8u);
  for (uint32_t i = 0; i < 8; ++i) {
    const auto& gpu = spec->gpus[i];
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.uuid, "GPU-sim-7-" + std::to_string(i));
    EXPECT_EQ(gpu.model, "A100-SXM4-80GB");
    EXPECT_EQ(gpu.vendor, "nvidia");
    EXPECT_EQ(gpu.memory_mib, 80u * 1024);
    EXPECT_EQ(gpu.numa, i < 4 ? 0 : 1);
    EXPECT_EQ(gpu.nvlink_peers.size(), 7u);
  }
}

TEST(NodeSpecFileTest, CountShorthandUsesOverriddenNameAndNumaList) {
  NodeSpecFileOptions options;
  options.name_override = "other";
  auto spec = ParseNodeSpec(R"(
name: sim-7
numa: [{id: 0, cpus: 8, memory: 16Gi}, {id: 1, cpus: 8, memory: 16Gi}]
gpus: {count: 4, nvlink: none}
)",
                            "sim.yaml", options);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "other");
  EXPECT_EQ(spec->cpu_milli, 16000u);     // sum over NUMA nodes
  EXPECT_EQ(spec->memory_mib, 32768u);
  EXPECT_EQ(spec->gpus[3].uuid, "GPU-other-3");
  EXPECT_EQ(spec->gpus[1].numa, 0);
  EXPECT_EQ(spec->gpus[2].numa, 1);
  EXPECT_TRUE(spec->gpus[0].nvlink_peers.empty());
}

TEST(NodeSpecFileTest, NameDefaultsToHostname) {
  NodeSpecFileOptions options;
  options.default_name = "host-1";
  options.default_hostname = "host-1.dc";
  auto spec = ParseNodeSpec("cpus: 1\nmemory: 1Gi\n", "s.yaml", options);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "host-1");
  EXPECT_EQ(spec->hostname, "host-1.dc");
}

struct BadCase {
  const char* text;
  const char* expected;  // a fragment of the error message
};

TEST(NodeSpecFileTest, ErrorsNameTheFileAndField) {
  const std::vector<BadCase> cases = {
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, memory: 80Gi}\n  - {uuid: b, memory: 80Gi}\n"
       "  - {uuid: c, memory: 80Q}\n",
       "spec.yaml: gpus[2].memory: '80Q' is not a memory size"},
      {"name: n\ncpus: lots\nmemory: 1Gi\n", "spec.yaml: cpus: 'lots' is not a CPU count"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ncpu_milli: 1000\n", "spec.yaml: cpus: give either cpus or cpu_milli"},
      {"name: n\nmemory: 1Gi\n", "spec.yaml: cpus: is required"},
      {"name: n\ncpus: 1\n", "spec.yaml: memory: is required"},
      {"name: n\ncpus: 1\nmemory: 1Gi\nmemroy: 2Gi\n", "spec.yaml: memroy: unknown field"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {memory: 1Gi}\n", "spec.yaml: gpus[0].uuid: is required"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, index: -1}\n", "spec.yaml: gpus[0].index: '-1'"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, nvlink_peers: 3}\n",
       "spec.yaml: gpus[0].nvlink_peers: expected a list"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, nvlink_peers: [4]}\n",
       "spec.yaml: node.gpus[0].nvlink_peers: GPU 4 does not exist"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a}\n  - {uuid: a}\n", "uuid: 'a' is used twice"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, healthy: maybe}\n",
       "spec.yaml: gpus[0].healthy: 'maybe' is not true or false"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus: {count: 2, nvlink: some}\n", "spec.yaml: gpus.nvlink: 'some'"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus: {model: x}\n", "spec.yaml: gpus.count: is required"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus: {count: 99999}\n", "spec.yaml: gpus.count: 99999 is larger"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus: {count: 2, numa_split: 0}\n", "spec.yaml: gpus.numa_split: must be"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus: 3\n", "spec.yaml: gpus: expected a list of GPUs or a map"},
      {"name: n\ncpus: 1\nmemory: 1Gi\nlabels: [a, b]\n", "spec.yaml: labels: expected a map"},
      {"name: n\ncpus: 1\nmemory: 1Gi\nnuma: [{id: 0}, {id: 0}]\n", "spec.yaml: numa[1].id: 0 is used twice"},
      {"name: n\ncpus: 1\nmemory: 1Gi\nnuma: [{id: 0}]\ngpus:\n  - {uuid: a, numa: 3}\n",
       "spec.yaml: gpus[0].numa: NUMA node 3 is not listed"},
      {"name: n\ncpus: 1\nmemory: 1Gi\nnics: [{leaf_switch: x}]\n", "spec.yaml: nics[0].name: is required"},
      {"name: n\ncpus: 1\nmemory: 1Gi\nnics: [{name: ib0, speed_gbps: fast}]\n",
       "spec.yaml: nics[0].speed_gbps: 'fast' is not a non-negative integer"},
      {"name: 'bad name'\ncpus: 1\nmemory: 1Gi\n", "spec.yaml: node.name:"},
      {"name: n\ncpus: [1]\nmemory: 1Gi\n", "spec.yaml: cpus: expected a single value, got a list"},
      {"", "spec.yaml: the file is empty"},
      {"- just\n- a list\n", "spec.yaml: document: expected a map"},
      {"name: n\ncpus: 1\n  memory: {{\n", "spec.yaml:"},
      {"{\"name\": \"n\", \"cpus\": 1,", "not valid YAML or JSON"},
  };
  for (const auto& c : cases) {
    auto spec = ParseNodeSpec(c.text, "spec.yaml");
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(spec.status().message().find(c.expected), std::string::npos)
        << "input:\n" << c.text << "\nerror: " << spec.status().message() << "\nexpected: " << c.expected;
  }
}

TEST(NodeSpecFileTest, MissingFileIsNotFound) {
  auto spec = LoadNodeSpecFile("/nonexistent/spec.yaml");
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_NE(spec.status().message().find("/nonexistent/spec.yaml"), std::string::npos);
}

TEST(NodeSpecFileTest, LoadsFromFileAndOverridesName) {
  testing::TempDir dir;
  const std::string path = dir.Write("n.yaml", "name: a\ncpus: 2\nmemory: 2048\n");
  NodeSpecFileOptions options;
  options.name_override = "b";
  auto spec = LoadNodeSpecFile(path, options);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "b");
  EXPECT_EQ(spec->memory_mib, 2048u);
}

}  // namespace
}  // namespace gpool::worker
