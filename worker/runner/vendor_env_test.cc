// Issue 50: every accelerator family's task environment and device rules,
// each on that vendor's node spec file (worker/examples), through the same
// calls the task start makes (BuildTaskEnv, VendorDeviceNodes +
// DenyRulesForNodes).
#include "worker/runner/vendor_env.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "topology/node_spec_file.h"
#include "worker/runner/device_rules.h"
#include "worker/runner/task_env.h"
#include "worker/runner/vendor_device_nodes.h"
#include "worker/test_util.h"
#include "worker/vendor/vendor_profile.h"

namespace gpool::worker {
namespace {

using VendorEnvMap = std::map<std::string, std::string>;

NodeSpec LoadExample(const std::string& file) {
  auto spec = topology::LoadNodeSpecFile(std::string(GPOOL_WORKER_EXAMPLES_DIR) + "/" + file);
  EXPECT_TRUE(spec.ok()) << file << ": " << spec.status().ToString();
  return spec.ok() ? *spec : NodeSpec{};
}

BindTask VendorBind(std::vector<uint32_t> gpus) {
  BindTask bind;
  bind.task = TaskId{JobId(50), 0, 0};
  bind.command = {"train"};
  bind.gpu_indices = std::move(gpus);
  return bind;
}

Result<VendorEnvMap> VendorEnvOf(const BindTask& bind, const NodeSpec& node) {
  GPOOL_ASSIGN_OR_RETURN(std::vector<std::string> built, BuildTaskEnv(bind, node, {}));
  VendorEnvMap out;
  for (const std::string& e : built) out.emplace(e.substr(0, e.find('=')), e.substr(e.find('=') + 1));
  return out;
}

// The paths the task may open and those it may not, relative to "/dev",
// among the nodes numbered below `scan` (the rest are the same pattern).
struct Access {
  std::set<std::string> granted, denied;
};

Access AccessOf(const BindTask& bind, const NodeSpec& node, uint32_t scan) {
  Access out;
  for (const DeviceNodeAccess& a : VendorDeviceNodes(bind, node, "/dev")) {
    const std::string path = a.path.substr(5);  // drop "/dev/"
    // Per-device nodes end in their number; keep the first `scan` of each.
    const size_t digits = path.find_last_not_of("0123456789");
    if (digits + 1 < path.size() && std::stoul(path.substr(digits + 1)) >= scan + (path.find("renderD") == 4 ? 128 : 0)) {
      continue;
    }
    (a.granted ? out.granted : out.denied).insert(path);
  }
  return out;
}

struct VendorCase {
  std::string file;
  NodeVendor vendor;
  std::vector<uint32_t> gpus;
  std::vector<uint32_t> cores;  // Neuron core binds
  VendorEnvMap expected;                 // variables and their values
  std::set<std::string> granted;  // among the first 8 per-device nodes, and the shared ones
};

// One row per family the worker knows.
std::vector<VendorCase> VendorCases() {
  return {
      {"node-ascend910b.yaml", NodeVendor::kAscend, {2, 3}, {},
       {{"ASCEND_RT_VISIBLE_DEVICES", "2,3"}, {"CUDA_VISIBLE_DEVICES", "2,3"}},
       {"davinci2", "davinci3", "davinci_manager", "devmm_svm", "hisi_hdc"}},
      {"node-kunlun-p800.yaml", NodeVendor::kKunlun, {4}, {},
       {{"XPU_VISIBLE_DEVICES", "4"}, {"CUDA_VISIBLE_DEVICES", "4"}},
       {"xpu4", "xpuctrl"}},
      {"node-trn1.yaml", NodeVendor::kNeuron, {}, {2, 3},
       {{"NEURON_RT_VISIBLE_CORES", "2-3"}, {"GPOOL_CORES", "2,3"}},
       {"neuron1"}},
      {"node-metax-c500.yaml", NodeVendor::kMetax, {1}, {},
       {{"MACA_VISIBLE_DEVICES", "1"}, {"CUDA_VISIBLE_DEVICES", "1"}},
       {"dri/renderD129", "mxcd"}},
      {"node-enflame-s60.yaml", NodeVendor::kEnflame, {0, 1}, {},
       {{"TOPS_VISIBLE_DEVICES", "0,1"}, {"ENFLAME_VISIBLE_DEVICES", "0,1"}},
       {"gcu0", "gcu1"}},
      {"node-hygon-k100.yaml", NodeVendor::kHygonDcu, {6}, {},
       {{"HIP_VISIBLE_DEVICES", "6"}, {"CUDA_VISIBLE_DEVICES", "6"}},
       {"dri/renderD134", "kfd", "mkfd"}},
      // ROCr narrows first; HIP and CUDA_VISIBLE_DEVICES count what it left.
      {"node-amd-mi300x.yaml", NodeVendor::kAmd, {3, 5}, {},
       {{"ROCR_VISIBLE_DEVICES", "3,5"}, {"HIP_VISIBLE_DEVICES", "0,1"}, {"CUDA_VISIBLE_DEVICES", "0,1"}},
       {"dri/renderD131", "dri/renderD133", "kfd"}},
  };
}

TEST(VendorEnvTest, EachVendorSpecGetsItsRuntimesVariables) {
  for (const VendorCase& c : VendorCases()) {
    SCOPED_TRACE(c.file);
    const NodeSpec node = LoadExample(c.file);
    ASSERT_FALSE(node.gpus.empty());
    EXPECT_EQ(VendorOf(node.gpus[0]), c.vendor);
    BindTask bind = VendorBind(c.gpus);
    bind.cores = c.cores;
    auto env = VendorEnvOf(bind, node);
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    for (const auto& [name, value] : c.expected) {
      ASSERT_TRUE(env->count(name)) << name << " is not set";
      EXPECT_EQ(env->at(name), value) << name;
    }
    // No other family's variables leak in.
    for (const VendorProfile& other : AcceleratorProfiles()) {
      if (other.vendor == c.vendor) continue;
      for (const VisibleVariable& v : other.visible) {
        if (!c.expected.count(std::string(v.name)) && v.name != "CUDA_VISIBLE_DEVICES") {
          EXPECT_FALSE(env->count(std::string(v.name))) << v.name << " set on a " << c.file << " node";
        }
      }
    }
  }
}

TEST(VendorEnvTest, EachVendorSpecGrantsOnlyItsOwnDeviceNodes) {
  for (const VendorCase& c : VendorCases()) {
    SCOPED_TRACE(c.file);
    const NodeSpec node = LoadExample(c.file);
    BindTask bind = VendorBind(c.gpus);
    bind.cores = c.cores;
    const Access access = AccessOf(bind, node, 8);
    EXPECT_EQ(access.granted, c.granted);
    // Every other device of the spec is named, and denied.
    const VendorProfile& profile = ProfileOf(c.vendor);
    for (uint32_t ordinal = 0; ordinal < 8; ++ordinal) {
      for (const DeviceNodePattern& p : profile.device_nodes) {
        std::string path(p.pattern);
        path.replace(path.find("%u"), 2, std::to_string(p.offset + ordinal));
        EXPECT_TRUE(access.granted.count(path) || access.denied.count(path)) << path << " is not named";
      }
    }
    // A task without devices of the family opens none of them, shared ones included.
    const Access none = AccessOf(VendorBind({}), node, 8);
    EXPECT_TRUE(none.granted.empty()) << *none.granted.begin();
    for (std::string_view shared : profile.shared_nodes) EXPECT_TRUE(none.denied.count(std::string(shared))) << shared;
  }
}

// The rules from real device nodes (mknod needs root): on each vendor's
// spec, a task given device 0 is denied every other device node and none of
// the shared ones; a task given nothing is denied the shared ones too.
TEST(VendorEnvTest, DenyRulesFromNodesOnDiskForEachVendor) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  for (const VendorCase& c : VendorCases()) {
    SCOPED_TRACE(c.file);
    const NodeSpec node = LoadExample(c.file);
    testing::TempDir dev;
    std::filesystem::create_directories(dev.path() + "/dri");
    const VendorProfile& profile = ProfileOf(c.vendor);
    std::map<std::string, DeviceRule> made;  // path -> its numbers
    uint32_t minor_no = 0;
    auto make = [&](const std::string& relative) {
      const DeviceRule rule{.major = 511, .minor = minor_no++};
      ASSERT_EQ(mknod((dev.path() + "/" + relative).c_str(), S_IFCHR | 0600, makedev(rule.major, rule.minor)), 0)
          << relative;
      made[relative] = rule;
    };
    for (uint32_t ordinal = 0; ordinal < node.gpus.size(); ++ordinal) {
      for (const DeviceNodePattern& p : profile.device_nodes) {
        std::string path(p.pattern);
        path.replace(path.find("%u"), 2, std::to_string(p.offset + ordinal));
        make(path);
      }
    }
    for (std::string_view shared : profile.shared_nodes) make(std::string(shared));

    BindTask first = VendorBind({0});
    if (c.vendor == NodeVendor::kNeuron) {  // a core bind: device 0's first core
      first = VendorBind({});
      first.cores = {0};
    }
    std::set<DeviceRule> denied_first;
    for (const DeviceRule& r : DenyRulesForNodes(VendorDeviceNodes(first, node, dev.path()))) denied_first.insert(r);
    std::string device0(profile.device_nodes[0].pattern);
    device0.replace(device0.find("%u"), 2, std::to_string(profile.device_nodes[0].offset));
    std::set<DeviceRule> expected_first;
    for (const auto& [path, rule] : made) {
      const bool shared =
          std::find(profile.shared_nodes.begin(), profile.shared_nodes.end(), path) != profile.shared_nodes.end();
      if (path != device0 && !shared) expected_first.insert(rule);
    }
    EXPECT_EQ(denied_first, expected_first);

    std::set<DeviceRule> denied_none;
    for (const DeviceRule& r : DenyRulesForNodes(VendorDeviceNodes(VendorBind({}), node, dev.path()))) {
      denied_none.insert(r);
    }
    EXPECT_EQ(denied_none.size(), made.size()) << "a task with no device opens none, shared nodes included";
    EXPECT_EQ(V1DenyLines(DenyRulesForNodes(VendorDeviceNodes(VendorBind({}), node, dev.path()))).size(),
              made.size());
  }
}

TEST(VendorEnvTest, ATaskCannotSetAVendorVariableItself) {
  const NodeSpec node = LoadExample("node-kunlun-p800.yaml");
  BindTask bind = VendorBind({1});
  bind.env = {{"XPU_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}, {"TOPS_VISIBLE_DEVICES", "0"}};
  auto env = VendorEnvOf(bind, node);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->at("XPU_VISIBLE_DEVICES"), "1");
  EXPECT_FALSE(env->count("TOPS_VISIBLE_DEVICES")) << "another family's variable is dropped, not passed on";
  EXPECT_TRUE(IsVendorDeviceVariable("ROCR_VISIBLE_DEVICES"));
  EXPECT_TRUE(IsVendorDeviceVariable("MACA_VISIBLE_DEVICES"));
  EXPECT_FALSE(IsVendorDeviceVariable("PATH"));
}

TEST(VendorEnvTest, ATaskWithoutDevicesSeesNoneOfTheFamilys) {
  auto env = VendorEnvOf(VendorBind({}), LoadExample("node-amd-mi300x.yaml"));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->at("ROCR_VISIBLE_DEVICES"), "");
  EXPECT_EQ(env->at("HIP_VISIBLE_DEVICES"), "");
}

TEST(VendorEnvTest, SharesOnFamiliesThatCannotShareAreRefused) {
  for (const char* file : {"node-amd-mi300x.yaml", "node-hygon-k100.yaml", "node-trn1.yaml"}) {
    SCOPED_TRACE(file);
    BindTask bind = VendorBind({0});
    bind.gpu_memory_mib = 8192;
    std::map<std::string, std::string> env = {{"KEEP", "1"}};
    const Status refused = AddVendorDeviceEnv(bind, LoadExample(file), env);
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.message().find("cannot be shared"), std::string::npos) << refused.message();
    EXPECT_EQ(env, (std::map<std::string, std::string>{{"KEEP", "1"}})) << "nothing changed";
  }
  // Families whose vendor carves shares itself take the share (GPOOL_* only).
  for (const char* file : {"node-kunlun-p800.yaml", "node-metax-c500.yaml", "node-enflame-s60.yaml",
                                 "node-ascend910b.yaml"}) {
    SCOPED_TRACE(file);
    BindTask bind = VendorBind({0});
    bind.gpu_memory_mib = 24576;
    auto env = VendorEnvOf(bind, LoadExample(file));
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    EXPECT_EQ(env->at("GPOOL_GPU_MEMORY_MIB"), "24576");
  }
}

TEST(VendorEnvTest, FamiliesFromVendorAndModelNames) {
  EXPECT_EQ(VendorOf("huawei", "Ascend910B3"), NodeVendor::kAscend);
  EXPECT_EQ(VendorOf("kunlunxin", "P800"), NodeVendor::kKunlun);
  EXPECT_EQ(VendorOf("aws", "trainium"), NodeVendor::kNeuron);
  EXPECT_EQ(VendorOf("MetaX", "C500"), NodeVendor::kMetax);
  EXPECT_EQ(VendorOf("enflame", "S60"), NodeVendor::kEnflame);
  EXPECT_EQ(VendorOf("hygon", "K100_AI"), NodeVendor::kHygonDcu);
  EXPECT_EQ(VendorOf("AMD", "MI300X"), NodeVendor::kAmd);
  EXPECT_EQ(VendorOf("nvidia", "H100"), NodeVendor::kNvidia);
  EXPECT_EQ(VendorOf("", ""), NodeVendor::kNvidia);
  // Mixed node: ordinals count within the family.
  NodeSpec node = testing::MakeGpuNode(4, "nvidia");
  node.gpus[2].vendor = "amd";
  node.gpus[3].vendor = "amd";
  EXPECT_EQ(FamilyOrdinal(node, 3), 1);
  EXPECT_EQ(FamilyOrdinal(node, 1), 1);
  EXPECT_EQ(FamilyOrdinal(node, 9), -1);
  auto env = VendorEnvOf(VendorBind({3}), node);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->at("ROCR_VISIBLE_DEVICES"), "1");
}

}  // namespace
}  // namespace gpool::worker
