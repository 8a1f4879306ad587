#include "worker/runner/task_env.h"

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

NodeSpec VendorNode(const std::string& vendor, uint32_t gpus) { return testing::MakeGpuNode(gpus, vendor); }

BindTask Bind(std::vector<uint32_t> gpus) {
  BindTask bind;
  bind.task = TaskId{JobId(17), 2, 1};
  bind.job_name = "train";
  bind.num_tasks = 4;
  bind.command = {"python", "train.py"};
  bind.env = {{"FOO", "bar"}, {"PATH", "/task/bin"}};
  bind.gpu_indices = std::move(gpus);
  return bind;
}

std::map<std::string, std::string> AsMap(const Result<std::vector<std::string>>& built) {
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  if (!built.ok()) return {};
  const std::vector<std::string>& env = *built;
  std::map<std::string, std::string> out;
  for (const auto& e : env) {
    const size_t eq = e.find('=');
    EXPECT_TRUE(out.emplace(e.substr(0, eq), e.substr(eq + 1)).second) << "duplicate " << e;
  }
  return out;
}

TEST(TaskEnvTest, NvidiaEnvironment) {
  auto env = AsMap(BuildTaskEnv(Bind({3, 1}), VendorNode("nvidia", 4), {{"PATH", "/usr/bin"}, {"HOME", "/root"}}));
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "3,1");
  EXPECT_EQ(env.at("NVIDIA_VISIBLE_DEVICES"), "GPU-3,GPU-1");
  EXPECT_EQ(env.at("GPOOL_GPU_UUIDS"), "GPU-3,GPU-1");
  EXPECT_EQ(env.at("GPOOL_JOB_ID"), "17");
  EXPECT_EQ(env.at("GPOOL_JOB_NAME"), "train");
  EXPECT_EQ(env.at("GPOOL_TASK_INDEX"), "2");
  EXPECT_EQ(env.at("GPOOL_NUM_TASKS"), "4");
  EXPECT_EQ(env.at("GPOOL_TASK_ATTEMPT"), "1");
  EXPECT_EQ(env.at("GPOOL_NODE_NAME"), "n1");
  EXPECT_EQ(env.at("FOO"), "bar");
  EXPECT_EQ(env.at("PATH"), "/task/bin");  // the spec env beats the inherited one
  EXPECT_EQ(env.at("HOME"), "/root");
  EXPECT_FALSE(env.count("HIP_VISIBLE_DEVICES"));
  EXPECT_FALSE(env.count("ASCEND_RT_VISIBLE_DEVICES"));
}

TEST(TaskEnvTest, NoGpus) {
  auto env = AsMap(BuildTaskEnv(Bind({}), VendorNode("nvidia", 2), {}));
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(env.at("NVIDIA_VISIBLE_DEVICES"), "void");
  EXPECT_EQ(env.at("GPOOL_GPU_UUIDS"), "");
}

TEST(TaskEnvTest, VendorVariables) {
  auto amd = AsMap(BuildTaskEnv(Bind({0}), VendorNode("amd", 2), {}));
  EXPECT_EQ(amd.at("HIP_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(amd.at("CUDA_VISIBLE_DEVICES"), "0");
  auto ascend = AsMap(BuildTaskEnv(Bind({1}), VendorNode("huawei", 2), {}));
  EXPECT_EQ(ascend.at("ASCEND_RT_VISIBLE_DEVICES"), "1");
  auto ascend2 = AsMap(BuildTaskEnv(Bind({}), VendorNode("ascend", 2), {}));
  EXPECT_EQ(ascend2.at("ASCEND_RT_VISIBLE_DEVICES"), "");
}

TEST(TaskEnvTest, GpuVariablesCannotBeOverriddenBySpecEnv) {
  BindTask bind = Bind({0});
  bind.env["CUDA_VISIBLE_DEVICES"] = "0,1,2,3";
  bind.env["GPOOL_NODE_NAME"] = "evil";
  auto env = AsMap(BuildTaskEnv(bind, VendorNode("nvidia", 4), {}));
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(env.at("GPOOL_NODE_NAME"), "n1");
}

TEST(TaskEnvTest, ValidateBind) {
  const NodeSpec node = VendorNode("nvidia", 2);
  EXPECT_TRUE(ValidateBind(Bind({0, 1}), node).ok());
  auto missing = ValidateBind(Bind({2}), node);
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("gpu_indices[0]: GPU 2 does not exist"), std::string::npos) << missing.message();
  EXPECT_NE(ValidateBind(Bind({1, 1}), node).message().find("listed twice"), std::string::npos);
  BindTask uuids = Bind({1});
  uuids.gpu_uuids = {"GPU-1"};
  EXPECT_TRUE(ValidateBind(uuids, node).ok());
  uuids.gpu_uuids = {"GPU-0"};
  EXPECT_NE(ValidateBind(uuids, node).message().find("gpu_uuids[0]"), std::string::npos);
  BindTask empty = Bind({});
  empty.command.clear();
  EXPECT_NE(ValidateBind(empty, node).message().find("command"), std::string::npos);
  BindTask bad_env = Bind({});
  bad_env.env["A=B"] = "x";
  EXPECT_FALSE(ValidateBind(bad_env, node).ok());
  BindTask nul = Bind({});
  nul.command.push_back(std::string("a\0b", 3));
  EXPECT_FALSE(ValidateBind(nul, node).ok());
}

TEST(TaskEnvTest, ValidateBindDeviceFields) {
  NodeSpec node = VendorNode("nvidia", 2);
  BindTask mig = Bind({1});
  mig.mig_profiles = {"1g.10gb"};
  mig.mig_starts = {0};
  EXPECT_TRUE(ValidateBind(mig, node).ok());
  mig.mig_starts.clear();
  EXPECT_NE(ValidateBind(mig, node).message().find("mig_starts: 0 starts for 1 mig_profiles"), std::string::npos);
  mig.mig_profiles = {"1g.10gb", "1g.10gb"};
  mig.mig_starts = {0, 1};
  EXPECT_NE(ValidateBind(mig, node).message().find("mig_profiles: 2 profiles for 1 gpu_indices"), std::string::npos);
  BindTask starts_only = Bind({0});
  starts_only.mig_starts = {0};
  EXPECT_FALSE(ValidateBind(starts_only, node).ok());

  BindTask share = Bind({0});
  share.gpu_memory_mib = 1024;
  share.sharing_qos = "fixed-share";
  EXPECT_TRUE(ValidateBind(share, node).ok());
  share.sharing_qos = "greedy";
  EXPECT_NE(ValidateBind(share, node).message().find("sharing_qos: 'greedy'"), std::string::npos);
  share.sharing_qos = "";
  share.gpu_compute_pct = 101;
  EXPECT_NE(ValidateBind(share, node).message().find("gpu_compute_pct"), std::string::npos);
  BindTask share_without_gpu = Bind({});
  share_without_gpu.gpu_memory_mib = 1024;
  EXPECT_NE(ValidateBind(share_without_gpu, node).message().find("needs gpu_indices"), std::string::npos);
  BindTask numa = Bind({0});
  numa.numa_policy = "single-numa-node";
  EXPECT_TRUE(ValidateBind(numa, node).ok());
  numa.numa_policy = "nearest";
  EXPECT_NE(ValidateBind(numa, node).message().find("numa_policy: 'nearest'"), std::string::npos);

  NodeSpec neuron = VendorNode("aws", 2);
  for (auto& gpu : neuron.gpus) gpu.cores = 2;
  BindTask cores = Bind({});
  cores.cores = {0, 3};
  EXPECT_TRUE(ValidateBind(cores, neuron).ok());
  cores.cores = {4};
  EXPECT_NE(ValidateBind(cores, neuron).message().find("cores[0]: core 4 does not exist on node n1 (it has 4)"),
            std::string::npos);
  cores.cores = {1, 1};
  EXPECT_NE(ValidateBind(cores, neuron).message().find("listed twice"), std::string::npos);
  cores.cores = {0};
  EXPECT_FALSE(ValidateBind(cores, node).ok()) << "a node without addressable cores";
}

TEST(TaskEnvTest, ATaskInheritsOnlyTheLocaleAndPathAndWhatTheOperatorPasses) {
  const std::map<std::string, std::string> worker = {
      {"PATH", "/usr/bin"},       {"LANG", "C.UTF-8"},          {"LC_ALL", "C"},
      {"GPOOL_TOKEN", "secret"},  {"GPOOL_KEY_FILE", "/k"},     {"AWS_SECRET_ACCESS_KEY", "s3"},
      {"HOME", "/root"},          {"NCCL_DEBUG", "INFO"},       {"NCCL_IB_HCA", "mlx5"},
      {"HTTPS_PROXY", "http://p"}};
  EXPECT_EQ(InheritedTaskEnv(worker),
            (std::map<std::string, std::string>{{"LANG", "C.UTF-8"}, {"LC_ALL", "C"}, {"PATH", "/usr/bin"}}));
  auto passed = InheritedTaskEnv(worker, {"NCCL_*", "HTTPS_PROXY", "GPOOL_*"});
  EXPECT_EQ(passed.count("NCCL_DEBUG") + passed.count("NCCL_IB_HCA") + passed.count("HTTPS_PROXY"), 3u);
  EXPECT_EQ(passed.count("GPOOL_TOKEN") + passed.count("GPOOL_KEY_FILE"), 0u) << "no GPOOL_ variable by a pattern";
  EXPECT_EQ(InheritedTaskEnv(worker, {"GPOOL_KEY_FILE"}).count("GPOOL_KEY_FILE"), 1u) << "only named exactly";
  EXPECT_EQ(passed.count("AWS_SECRET_ACCESS_KEY") + passed.count("HOME"), 0u);
}

TEST(TaskEnvTest, LogPathAndEnvList) {
  EXPECT_EQ(TaskLogPath("/d/tasks", TaskId{JobId(17), 0, 2}), "/d/tasks/17.0.2.log");
  EXPECT_EQ(TaskShareCachePath("/d/tasks", TaskId{JobId(17), 0, 2}), "/d/tasks/17.0.2.vgpu.cache");
  const char* entries[] = {"A=1", "B=x=y", "novalue", "=bad", nullptr};
  auto env = ParseEnvList(entries);
  EXPECT_EQ(env.size(), 2u);
  EXPECT_EQ(env.at("B"), "x=y");
}

}  // namespace
}  // namespace gpool::worker
