#include "topology/node_spec_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>


namespace gpool::topology {
namespace {

// Writes `content` to a fresh file under gtest's temporary directory.
std::string WriteTempFile(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "gpool-node-spec-" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << content;
  return path;
}

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
  const std::string dir = GPOOL_NODE_SPEC_EXAMPLES_DIR;
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
  EXPECT_EQ(yaml->numa[1].cpus, "32-63,96-127");
}

TEST(NodeSpecFileTest, EveryVendorExampleLoads) {
  const std::string dir = GPOOL_NODE_SPEC_EXAMPLES_DIR;
  struct Example {
    const char* file;
    const char* vendor;
    size_t gpus;
  };
  for (const Example& e : {Example{"node-ascend910b.yaml", "huawei", 8}, Example{"node-kunlun-p800.yaml", "kunlunxin", 8},
                           Example{"node-trn1.yaml", "aws", 16}, Example{"node-metax-c500.yaml", "metax", 8},
                           Example{"node-enflame-s60.yaml", "enflame", 8},
                           Example{"node-h100-mig-dynamic.yaml", "nvidia", 8},
                           Example{"node-a100-mig-static.yaml", "nvidia", 2}}) {
    auto spec = LoadNodeSpecFile(dir + "/" + e.file);
    ASSERT_TRUE(spec.ok()) << e.file << ": " << spec.status().ToString();
    ASSERT_EQ(spec->gpus.size(), e.gpus) << e.file;
    EXPECT_EQ(spec->gpus[0].vendor, e.vendor) << e.file;
  }
  auto trn = LoadNodeSpecFile(dir + "/node-trn1.yaml");
  EXPECT_EQ(trn->gpus[3].cores, 2u);
  auto metax = LoadNodeSpecFile(dir + "/node-metax-c500.yaml");
  EXPECT_EQ(metax->gpus[5].link_group, 1);
  auto mig = LoadNodeSpecFile(dir + "/node-a100-mig-static.yaml");
  EXPECT_EQ(mig->gpus[0].mig_instances.size(), 4u);
  EXPECT_EQ(LoadNodeSpecFile(dir + "/node-h100-mig-dynamic.yaml")->gpus[7].mig_mode, "dynamic");
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

TEST(NodeSpecFileTest, TimeSlicesAdvertiseAGpuAsReplicas) {
  auto spec = ParseNodeSpec(R"(
name: n1
cpus: 8
memory: 64Gi
gpus:
  - {index: 0, uuid: GPU-a, model: T4, memory: 16Gi, time_slices: 4}
  - {index: 1, uuid: GPU-b, model: T4, memory: 16Gi}
)",
                            "spec.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->gpus[0].time_slices, 4u);
  EXPECT_EQ(spec->gpus[1].time_slices, 0u) << "an ordinary GPU";
  auto shorthand = ParseNodeSpec("name: n\ncpus: 1\nmemory: 1Gi\ngpus: {count: 2, time_slices: 3}\n", "sim.yaml");
  ASSERT_TRUE(shorthand.ok()) << shorthand.status().ToString();
  EXPECT_EQ(shorthand->gpus[1].time_slices, 3u);
  auto too_many = ParseNodeSpec("name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, time_slices: 65}\n", "spec.yaml");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("gpus[0].time_slices"), std::string::npos) << too_many.status().ToString();
  auto with_mig = ParseNodeSpec("name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, time_slices: 2, mig_mode: dynamic}\n",
                                "spec.yaml");
  ASSERT_FALSE(with_mig.ok());
  EXPECT_EQ(with_mig.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(with_mig.status().message().find("time_slices: cannot be combined with MIG"), std::string::npos)
      << with_mig.status().ToString();
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

TEST(NodeSpecFileTest, DeviceFieldsAndNumaCpulist) {
  auto spec = ParseNodeSpec(R"(
name: mig-1
memory: 64Gi
numa:
  - {id: 0, cpulist: "0-3,8-11", memory: 32Gi}
  - {id: 1, cpus: 2, cpulist: "4-7", memory: 32Gi}
gpus:
  - {uuid: GPU-a, numa: 0, compute_units: 108, link_group: 1, mig_mode: static,
     mig_instances: [{profile: 3g.40gb, start: 4, uuid: MIG-real}, {profile: 1g.10gb}]}
  - {uuid: GPU-b, numa: 1, mig_mode: dynamic}
  - {uuid: NC-c, vendor: aws, cores: 2, mig_mode: none}
  - {uuid: GPU-d, mig_instances: [{profile: 7g.80gb}]}
)",
                            "spec.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->numa[0].cpus, "0-3,8-11");
  EXPECT_EQ(spec->numa[0].cpu_milli, 8000u) << "counted from the cpulist";
  EXPECT_EQ(spec->numa[1].cpus, "4-7");
  EXPECT_EQ(spec->numa[1].cpu_milli, 2000u) << "cpus given: the allocatable amount";
  EXPECT_EQ(spec->cpu_milli, 10000u);
  const auto& a = spec->gpus[0];
  EXPECT_EQ(a.compute_units, 108u);
  EXPECT_EQ(a.link_group, 1);
  EXPECT_EQ(a.mig_mode, "static");
  ASSERT_EQ(a.mig_instances.size(), 2u);
  EXPECT_EQ(a.mig_instances[0], (MigDeviceInfo{"3g.40gb", 4, "MIG-real"}));
  EXPECT_EQ(a.mig_instances[1], (MigDeviceInfo{"1g.10gb", 0, "MIG-GPU-a-1g.10gb-0"}));
  EXPECT_EQ(spec->gpus[1].mig_mode, "dynamic");
  EXPECT_EQ(spec->gpus[1].link_group, -1);
  EXPECT_EQ(spec->gpus[2].cores, 2u);
  EXPECT_EQ(spec->gpus[2].vendor, "aws");
  EXPECT_EQ(spec->gpus[2].mig_mode, "");
  EXPECT_EQ(spec->gpus[3].mig_mode, "static") << "instances imply static MIG";
}

TEST(NodeSpecFileTest, CountShorthandDeviceFields) {
  auto spec = ParseNodeSpec(R"(
name: sim-9
cpus: 32
memory: 256Gi
gpus: {count: 8, vendor: huawei, model: Ascend910B, link_groups: 2, compute_units: 30, mig_mode: dynamic}
)",
                            "sim.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(spec->gpus[i].vendor, "huawei");
    EXPECT_EQ(spec->gpus[i].link_group, i < 4 ? 0 : 1) << i;
    EXPECT_EQ(spec->gpus[i].compute_units, 30u);
    EXPECT_EQ(spec->gpus[i].mig_mode, "dynamic");
  }
  auto neuron = ParseNodeSpec("name: trn\ncpus: 8\nmemory: 8Gi\ngpus: {count: 2, vendor: aws, cores: 2}\n", "t.yaml");
  ASSERT_TRUE(neuron.ok()) << neuron.status().ToString();
  EXPECT_EQ(neuron->gpus[1].cores, 2u);
  EXPECT_EQ(neuron->gpus[1].link_group, -1);
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
      {"name: n\ncpus: 1\nmemory: 1Gi\nnuma: [{id: 0, cpulist: 3-1}]\n",
       "spec.yaml: numa[0].cpulist: '3-1' is not a Linux cpulist"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, mig_mode: always}\n",
       "spec.yaml: gpus[0].mig_mode: 'always' is not static, dynamic or none"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, mig_mode: dynamic, mig_instances: [{profile: 1g.10gb}]}\n",
       "spec.yaml: gpus[0].mig_instances: listed, but mig_mode is dynamic"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, mig_instances: [{start: 0}]}\n",
       "spec.yaml: gpus[0].mig_instances[0].profile: is required"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, mig_instances: [{profile: 1g.10gb, size: 1}]}\n",
       "spec.yaml: gpus[0].mig_instances[0].size: unknown field"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, mig_instances: [{profile: 1g.10gb}, {profile: 1g.10gb}]}\n",
       "spec.yaml: gpus[0].mig_instances[1].start: 0 is used twice"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, mig_instances: {profile: 1g.10gb}}\n",
       "spec.yaml: gpus[0].mig_instances: expected a list"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, mig_instances: [{profile: big}]}\n",
       "spec.yaml: node.gpus[0].mig_instances: 'big' is not a MIG profile"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, link_group: -2}\n",
       "spec.yaml: gpus[0].link_group: -2 is outside"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus:\n  - {uuid: a, cores: 999}\n",
       "spec.yaml: gpus[0].cores: 999 is larger than 256"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus: {count: 2, mig_mode: static}\n",
       "spec.yaml: gpus.mig_mode: static MIG needs each GPU's mig_instances"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus: {count: 2, link_groups: 3}\n",
       "spec.yaml: gpus.link_groups: is larger than gpus.count"},
      {"name: n\ncpus: 1\nmemory: 1Gi\ngpus: {count: 2, link_groups: 0}\n",
       "spec.yaml: gpus.link_groups: must be at least 1"},
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
  const std::string path = WriteTempFile("n.yaml", "name: a\ncpus: 2\nmemory: 2048\n");
  NodeSpecFileOptions options;
  options.name_override = "b";
  auto spec = LoadNodeSpecFile(path, options);
  std::filesystem::remove(path);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "b");
  EXPECT_EQ(spec->memory_mib, 2048u);
}


// The worker reads its node spec with the same alias budget as the CLI.
TEST(NodeSpecFileTest, AnAliasBombIsRefusedUnread) {
  std::string text = "name: n1\nlabels: {a: &l0 x}\ngpus:\n";
  std::string prev = "*l0";
  for (int level = 1; level <= 9; ++level) {
    text += "  - &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i == 0 ? "" : ",") + prev;
    text += "]\n";
    prev = "*l" + std::to_string(level);
  }
  auto spec = ParseNodeSpec(text, "bomb.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kResourceExhausted) << spec.status().ToString();
  EXPECT_NE(spec.status().message().find("bomb.yaml: with its YAML aliases expanded"), std::string::npos)
      << spec.status().message();
}

}  // namespace
}  // namespace gpool::topology
