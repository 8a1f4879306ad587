// The device variables of a task (device_env.h), seen through BuildTaskEnv.
#include "worker/runner/device_env.h"

#include <gtest/gtest.h>

#include "worker/test_util.h"

#include "protocol/messages_worker.h"
#include "worker/runner/task_env.h"

namespace gpool::worker {
namespace {

using Env = std::map<std::string, std::string>;

NodeSpec Node(uint32_t gpus, const std::string& vendor = "nvidia") { return testing::MakeGpuNode(gpus, vendor); }

BindTask DeviceBind(std::vector<uint32_t> gpus) {
  BindTask bind;
  bind.task = TaskId{JobId(5), 0, 0};
  bind.command = {"python"};
  bind.gpu_indices = std::move(gpus);
  return bind;
}

Env Build(const BindTask& bind, const NodeSpec& node, const Env& base = {}, const TaskEnvOptions& options = {}) {
  auto built = BuildTaskEnv(bind, node, base, options);
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  Env out;
  if (!built.ok()) return out;
  for (const auto& e : *built) {
    const size_t eq = e.find('=');
    out.emplace(e.substr(0, eq), e.substr(eq + 1));
  }
  return out;
}

TaskEnvOptions Enforced() {
  TaskEnvOptions options;
  options.cuda_intercept_lib = "/usr/local/vgpu/libvgpu.so";
  options.share_cache_path = "/d/tasks/5.0.0.vgpu.cache";
  return options;
}

TEST(DeviceEnvTest, FixedShareSetsHamiCoreLimits) {
  BindTask bind = DeviceBind({2, 0});
  bind.gpu_memory_mib = 10240;
  bind.gpu_compute_pct = 30;
  bind.sharing_qos = "fixed-share";
  Env env = Build(bind, Node(4), {}, Enforced());
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "2,0");
  EXPECT_EQ(env.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "10240m");
  EXPECT_EQ(env.at("CUDA_DEVICE_MEMORY_LIMIT_1"), "10240m");
  EXPECT_FALSE(env.count("CUDA_DEVICE_MEMORY_LIMIT_2")) << "one per visible device";
  EXPECT_EQ(env.at("CUDA_DEVICE_MEMORY_LIMIT"), "10240m");
  EXPECT_EQ(env.at("CUDA_DEVICE_SM_LIMIT"), "30");
  EXPECT_EQ(env.at("GPU_CORE_UTILIZATION_POLICY"), "force");
  EXPECT_EQ(env.at("CUDA_DEVICE_MEMORY_SHARED_CACHE"), "/d/tasks/5.0.0.vgpu.cache");
  EXPECT_EQ(env.at("LD_PRELOAD"), "/usr/local/vgpu/libvgpu.so");
  EXPECT_EQ(env.at("GPOOL_GPU_MEMORY_MIB"), "10240");
  EXPECT_EQ(env.at("GPOOL_GPU_COMPUTE_PCT"), "30");
  EXPECT_EQ(env.at("GPOOL_SHARING_QOS"), "fixed-share");
}

TEST(DeviceEnvTest, QosMapsToUtilizationPolicy) {
  BindTask bind = DeviceBind({0});
  bind.gpu_compute_pct = 40;
  bind.sharing_qos = "burst-share";
  Env burst = Build(bind, Node(1), {}, Enforced());
  EXPECT_EQ(burst.at("GPU_CORE_UTILIZATION_POLICY"), "default");
  EXPECT_EQ(burst.at("CUDA_DEVICE_SM_LIMIT"), "40");
  EXPECT_FALSE(burst.count("CUDA_DEVICE_MEMORY_LIMIT")) << "no memory limit asked";

  for (const char* qos : {"best-effort", ""}) {
    bind.sharing_qos = qos;
    Env best = Build(bind, Node(1), {}, Enforced());
    EXPECT_EQ(best.at("GPU_CORE_UTILIZATION_POLICY"), "disable") << qos;
    EXPECT_FALSE(best.count("CUDA_DEVICE_SM_LIMIT")) << qos;
    EXPECT_EQ(best.at("GPOOL_SHARING_QOS"), "best-effort") << qos;
  }
}

TEST(DeviceEnvTest, ShareWithoutInterceptLibraryIsUnenforced) {
  BindTask bind = DeviceBind({0});
  bind.gpu_memory_mib = 2048;
  Env env = Build(bind, Node(1));
  EXPECT_FALSE(env.count("LD_PRELOAD"));
  EXPECT_FALSE(env.count("CUDA_DEVICE_MEMORY_SHARED_CACHE"));
  EXPECT_EQ(env.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "2048m");
  EXPECT_EQ(env.at("GPOOL_GPU_MEMORY_MIB"), "2048");
  EXPECT_EQ(env.at("GPOOL_GPU_COMPUTE_PCT"), "0");
}

TEST(DeviceEnvTest, TaskCannotLiftItsShareLimits) {
  BindTask bind = DeviceBind({0});
  bind.gpu_memory_mib = 2048;
  bind.gpu_compute_pct = 25;
  bind.sharing_qos = "fixed-share";
  bind.env = {{"CUDA_DEVICE_SM_LIMIT_0", "100"},       {"CUDA_DEVICE_MEMORY_LIMIT_0", "80g"},
              {"CUDA_DISABLE_CONTROL", "true"},         {"CUDA_OVERSUBSCRIBE", "true"},
              {"GPU_CORE_UTILIZATION_POLICY", "disable"}, {"GPOOL_GPU_MEMORY_MIB", "81920"},
              {"CUDA_DEVICE_SM_LIMIT", "100"},          {"LD_PRELOAD", "/opt/my/hook.so"},
              {"LD_AUDIT", "/opt/my/audit.so"}};
  Env env = Build(bind, Node(1), {{"CUDA_DEVICE_MEMORY_SHARED_CACHE", "/tmp/shared.cache"}}, Enforced());
  EXPECT_EQ(env.at("CUDA_DEVICE_SM_LIMIT"), "25");
  EXPECT_FALSE(env.count("CUDA_DEVICE_SM_LIMIT_0"));
  EXPECT_EQ(env.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "2048m");
  EXPECT_FALSE(env.count("CUDA_DISABLE_CONTROL"));
  EXPECT_FALSE(env.count("CUDA_OVERSUBSCRIBE"));
  EXPECT_FALSE(env.count("LD_AUDIT")) << "an auditor could bind the driver past the interposer";
  EXPECT_EQ(env.at("GPU_CORE_UTILIZATION_POLICY"), "force");
  EXPECT_EQ(env.at("GPOOL_GPU_MEMORY_MIB"), "2048");
  EXPECT_EQ(env.at("CUDA_DEVICE_MEMORY_SHARED_CACHE"), "/d/tasks/5.0.0.vgpu.cache");
  EXPECT_EQ(env.at("LD_PRELOAD"), "/usr/local/vgpu/libvgpu.so:/opt/my/hook.so") << "the task's preloads follow";

  bind.env = {{"LD_PRELOAD", "/opt/a.so /usr/local/vgpu/libvgpu.so"}};
  EXPECT_EQ(Build(bind, Node(1), {}, Enforced()).at("LD_PRELOAD"), "/opt/a.so /usr/local/vgpu/libvgpu.so")
      << "already preloaded: left as it is";
}

TEST(DeviceEnvTest, WholeGpuTaskGetsNoShareVariables) {
  BindTask bind = DeviceBind({1});
  bind.env = {{"GPOOL_GPU_MEMORY_MIB", "1"}, {"GPOOL_CORES", "0-7"}, {"NEURON_RT_VISIBLE_CORES", "0-7"},
              {"GPOOL_MIG_PROFILES", "7g.80gb"}, {"CUDA_DEVICE_SM_LIMIT", "50"}};
  Env env = Build(bind, Node(2), {}, Enforced());
  EXPECT_FALSE(env.count("LD_PRELOAD"));
  EXPECT_FALSE(env.count("GPOOL_GPU_MEMORY_MIB"));
  EXPECT_FALSE(env.count("GPOOL_SHARING_QOS"));
  EXPECT_FALSE(env.count("GPOOL_CORES"));
  EXPECT_FALSE(env.count("NEURON_RT_VISIBLE_CORES"));
  EXPECT_FALSE(env.count("GPOOL_MIG_PROFILES"));
  EXPECT_EQ(env.at("CUDA_DEVICE_SM_LIMIT"), "50") << "not a share: the task's own business";
}

TaskEnvOptions Interposed() {
  TaskEnvOptions options;
  options.cuda_lib_dir = "/d/tasks/5.0.0.cuda";
  options.cuda_real_driver = "/usr/lib64/libcuda.so.1";
  options.cuda_ledger = "/dev/shm/gpool-cuda-5-0-0";
  return options;
}

TEST(DeviceEnvTest, InterposedSharePutsItsDriverDirectoryFirst) {
  BindTask bind = DeviceBind({0, 1});
  bind.gpu_memory_mib = 10240;
  bind.gpu_compute_pct = 30;
  bind.sharing_qos = "burst-share";
  bind.env = {{"LD_LIBRARY_PATH", "/opt/app/lib::/d/tasks/5.0.0.cuda:/usr/local/cuda/lib64"}};
  Env env = Build(bind, Node(2), {{"LD_LIBRARY_PATH", "/worker/lib"}}, Interposed());
  EXPECT_EQ(env.at("LD_LIBRARY_PATH"), "/d/tasks/5.0.0.cuda:/opt/app/lib:/usr/local/cuda/lib64")
      << "the task's entries follow; no second copy, no empty entry (the current directory)";
  EXPECT_EQ(env.at("GPOOL_CUDA_REAL_DRIVER"), "/usr/lib64/libcuda.so.1");
  EXPECT_EQ(env.at("GPOOL_CUDA_LEDGER"), "/dev/shm/gpool-cuda-5-0-0");
  EXPECT_EQ(env.at("GPOOL_GPU_MEMORY_MIB"), "10240");
  EXPECT_EQ(env.at("GPOOL_GPU_COMPUTE_PCT"), "30");
  EXPECT_EQ(env.at("GPOOL_SHARING_QOS"), "burst-share");
  EXPECT_FALSE(env.count("LD_PRELOAD"));

  bind.env.clear();
  EXPECT_EQ(Build(bind, Node(2), {}, Interposed()).at("LD_LIBRARY_PATH"), "/d/tasks/5.0.0.cuda");
  TaskEnvOptions unknown_driver = Interposed();
  unknown_driver.cuda_real_driver.clear();
  EXPECT_FALSE(Build(bind, Node(2), {}, unknown_driver).count("GPOOL_CUDA_REAL_DRIVER"))
      << "no driver found: the interposer looks in its own places";
}

TEST(DeviceEnvTest, TaskCannotRedirectTheInterposer) {
  BindTask bind = DeviceBind({0});
  bind.gpu_memory_mib = 2048;
  bind.env = {{"GPOOL_CUDA_REAL_DRIVER", "/home/me/libcuda.so.1"},
              {"GPOOL_CUDA_LEDGER", "/tmp/empty-ledger"},
              {"GPOOL_CUDA_ACTIVITY", "/tmp/nobody-else"},
              {"GPOOL_GPU_MEMORY_MIB", "81920"},
              {"GPOOL_SHARING_QOS", "best-effort"},
              {"LD_LIBRARY_PATH", "/home/me/fakecuda"}};
  Env env = Build(bind, Node(1), {}, Interposed());
  EXPECT_EQ(env.at("GPOOL_CUDA_REAL_DRIVER"), "/usr/lib64/libcuda.so.1");
  EXPECT_EQ(env.at("GPOOL_CUDA_LEDGER"), "/dev/shm/gpool-cuda-5-0-0");
  EXPECT_FALSE(env.count("GPOOL_CUDA_ACTIVITY")) << "the node-wide default, beside the ledger";
  EXPECT_EQ(env.at("GPOOL_GPU_MEMORY_MIB"), "2048");
  EXPECT_EQ(env.at("LD_LIBRARY_PATH"), "/d/tasks/5.0.0.cuda:/home/me/fakecuda") << "extended, not replaced";

  // Without a directory (--cuda-interposer none, or a whole GPU) the
  // variables are still the worker's: a task must not aim an interposer
  // it brings along.
  Env none = Build(bind, Node(1));
  EXPECT_FALSE(none.count("GPOOL_CUDA_REAL_DRIVER"));
  EXPECT_FALSE(none.count("GPOOL_CUDA_LEDGER"));
  EXPECT_EQ(none.at("LD_LIBRARY_PATH"), "/home/me/fakecuda") << "not interposed: the task's own";
}

TEST(DeviceEnvTest, InterceptLibraryReplacesTheInterposer) {
  BindTask bind = DeviceBind({0});
  bind.gpu_memory_mib = 2048;
  bind.env = {{"LD_LIBRARY_PATH", "/opt/app/lib"}};
  TaskEnvOptions both = Interposed();
  both.cuda_intercept_lib = "/usr/local/vgpu/libvgpu.so";
  Env env = Build(bind, Node(1), {}, both);
  EXPECT_EQ(env.at("LD_PRELOAD"), "/usr/local/vgpu/libvgpu.so");
  EXPECT_EQ(env.at("LD_LIBRARY_PATH"), "/opt/app/lib") << "never both";
  EXPECT_FALSE(env.count("GPOOL_CUDA_LEDGER"));
}

TEST(DeviceEnvTest, WholeGpuTaskIsNotInterposed) {
  BindTask bind = DeviceBind({0});
  bind.env = {{"LD_LIBRARY_PATH", "/opt/app/lib"}, {"GPOOL_CUDA_LEDGER", "/tmp/x"}};
  Env env = Build(bind, Node(1), {}, Interposed());
  EXPECT_EQ(env.at("LD_LIBRARY_PATH"), "/opt/app/lib");
  EXPECT_FALSE(env.count("GPOOL_CUDA_LEDGER"));
  EXPECT_FALSE(env.count("GPOOL_CUDA_REAL_DRIVER"));
}

NodeSpec MigNode(const std::string& mode) {
  NodeSpec node = Node(2);
  node.gpus[1].mig_mode = mode;
  if (mode == "static") {
    node.gpus[1].mig_instances = {{"1g.10gb", 0, "MIG-aaaa"}, {"1g.10gb", 1, "MIG-bbbb"}, {"3g.40gb", 4, "MIG-cccc"}};
  }
  return node;
}

BindTask MigBind(const std::string& profile, uint32_t start) {
  BindTask bind = DeviceBind({1});
  bind.mig_profiles = {profile};
  bind.mig_starts = {start};
  return bind;
}

TEST(DeviceEnvTest, StaticMigInstanceIsTheVisibleDevice) {
  Env env = Build(MigBind("1g.10gb", 1), MigNode("static"));
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "MIG-bbbb");
  EXPECT_EQ(env.at("NVIDIA_VISIBLE_DEVICES"), "MIG-bbbb");
  EXPECT_EQ(env.at("GPOOL_MIG_PROFILES"), "1g.10gb");
  EXPECT_EQ(env.at("GPOOL_GPU_UUIDS"), "GPU-1") << "the GPU the instance lives on";
}

TEST(DeviceEnvTest, DynamicMigGetsASyntheticId) {
  Env env = Build(MigBind("2g.20gb", 2), MigNode("dynamic"));
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "MIG-GPU-1-2g.20gb-2");
  EXPECT_EQ(env.at("NVIDIA_VISIBLE_DEVICES"), "MIG-GPU-1-2g.20gb-2");
  EXPECT_EQ(env.at("GPOOL_MIG_PROFILES"), "2g.20gb");
}

TEST(DeviceEnvTest, MissingMigInstanceFailsTheStart) {
  auto gone = BuildTaskEnv(MigBind("1g.10gb", 3), MigNode("static"), {});
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(gone.status().message().find("GPU 1 (GPU-1) has no MIG instance 1g.10gb at start 3 (it has "
                                         "1g.10gb@0, 1g.10gb@1, 3g.40gb@4)"),
            std::string::npos)
      << gone.status().message();
  auto off = BuildTaskEnv(MigBind("1g.10gb", 0), MigNode(""), {});
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.status().message().find("has MIG off"), std::string::npos) << off.status().message();
}

TEST(DeviceEnvTest, NeuronCores) {
  NodeSpec node = Node(2, "aws");
  for (auto& gpu : node.gpus) gpu.cores = 4;
  BindTask bind = DeviceBind({});
  bind.cores = {5, 2, 3, 4};
  Env env = Build(bind, node);
  EXPECT_EQ(env.at("NEURON_RT_VISIBLE_CORES"), "2-5");
  EXPECT_EQ(env.at("GPOOL_CORES"), "2,3,4,5");
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "");

  bind.cores = {0, 1, 6};
  EXPECT_EQ(Build(bind, node).at("NEURON_RT_VISIBLE_CORES"), "0-1,6");

  Env whole = Build(DeviceBind({1}), node);
  EXPECT_EQ(whole.at("NEURON_RT_VISIBLE_CORES"), "4-7") << "device 1's cores follow device 0's";
  EXPECT_EQ(whole.at("GPOOL_CORES"), "4,5,6,7");
}

}  // namespace
}  // namespace gpool::worker
