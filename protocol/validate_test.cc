#include "protocol/validate.h"

#include <gtest/gtest.h>

namespace gpool {
namespace {

JobSpec ValidSpec() {
  JobSpec spec;
  spec.name = "ok";
  TaskGroupSpec group;
  group.command = {"true"};
  spec.tasks.push_back(group);
  return spec;
}

TEST(ValidateJobSpecTest, AcceptsMinimalSpec) { EXPECT_TRUE(ValidateJobSpec(ValidSpec()).ok()); }

struct BadSpecCase {
  const char* label;
  std::function<void(JobSpec&)> mutate;
  const char* expected_message;
};

// Issue 31: a job must not undo what the worker sets to isolate it (its
// share enforcer, its visible devices); each such key is refused by name.
TEST(ValidateJobSpecTest, IsolationVariablesAreRefusedByName) {
  for (const char* key : {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_0",
                          "CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_SM_LIMIT_3", "GPU_CORE_UTILIZATION_POLICY",
                          "CUDA_DEVICE_MEMORY_SHARED_CACHE", "CUDA_DISABLE_CONTROL", "CUDA_OVERSUBSCRIBE"}) {
    JobSpec spec = ValidSpec();
    spec.tasks[0].env[key] = "x";
    Status s = ValidateJobSpec(spec);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << key;
    EXPECT_EQ(s.message(),
              std::string("tasks[0].env: ") + key + " is set by the worker to isolate tasks and cannot be set by a job")
        << key;
  }
  for (const char* key : {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"}) {
    JobSpec spec = ValidSpec();
    spec.tasks[0].env[key] = "0,1,2,3";
    EXPECT_EQ(ValidateJobSpec(spec).message(), std::string("tasks[0].env: ") + key +
                                                   " is set by gpool and cannot be overridden");
  }
  JobSpec spec = ValidSpec();
  spec.tasks[0].env["LD_BIND_NOW"] = "1";  // loader variables the worker does not set stay allowed
  spec.tasks[0].env["CUDA_LAUNCH_BLOCKING"] = "1";
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
}

TEST(ValidateJobSpecTest, EachProblemNamesItsField) {
  std::vector<BadSpecCase> cases = {
      {"empty name", [](JobSpec& s) { s.name = ""; }, "name: must not be empty"},
      {"bad name", [](JobSpec& s) { s.name = "a b"; }, "name: 'a b' may only contain letters, digits, '-', '_' and '.'"},
      {"no tasks", [](JobSpec& s) { s.tasks.clear(); }, "tasks: at least one task group is required"},
      {"zero replicas", [](JobSpec& s) { s.tasks[0].replicas = 0; }, "tasks[0].replicas: must be at least 1"},
      {"empty command", [](JobSpec& s) { s.tasks[0].command.clear(); }, "tasks[0].command: must name a program to run"},
      {"too many gpus", [](JobSpec& s) { s.tasks[0].resources.gpus = 65; },
       "tasks[0].resources.gpus: 65 exceeds the per-task maximum of 64"},
      {"reserved env", [](JobSpec& s) { s.tasks[0].env["GPOOL_JOB_ID"] = "1"; },
       "tasks[0].env: GPOOL_JOB_ID is set by gpool and cannot be overridden"},
      {"bad env name", [](JobSpec& s) { s.tasks[0].env["1X"] = "1"; },
       "tasks[0].env: '1X' is not a valid environment variable name"},
      {"duplicate group", [](JobSpec& s) { s.tasks.push_back(s.tasks[0]); },
       "tasks[1].name: 'task' is used by another task group"},
      {"too many replicas", [](JobSpec& s) { s.tasks[0].replicas = 20000; },
       "tasks: 20000 replicas in all exceeds the maximum of 10000 per job"},
      {"empty model in a list",
       [](JobSpec& s) {
         s.tasks[0].resources.gpus = 1;
         s.tasks[0].resources.gpu_model = "A100||H100";
       },
       "tasks[0].resources.gpu_model: 'A100||H100' has an empty model between '|'"},
      {"bad model in a list",
       [](JobSpec& s) {
         s.tasks[0].resources.gpus = 1;
         s.tasks[0].resources.gpu_model = "A100|H 100";
       },
       "tasks[0].resources.gpu_model: 'H 100' must be at most 63 letters, digits, '.', '_' and '-'"},
  };
  for (const auto& c : cases) {
    JobSpec spec = ValidSpec();
    c.mutate(spec);
    Status s = ValidateJobSpec(spec);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.label;
    EXPECT_EQ(s.message(), c.expected_message) << c.label;
  }
}

// Issue 50: the per-job placement policies and scale rules.
TEST(ValidateJobSpecTest, PlacementPoliciesAndScaleRulesNameTheirField) {
  auto elastic = [](JobSpec& s, ScaleRule rule) {
    s.tasks[0].replicas = 4;
    s.tasks[0].min_replicas = 1;
    s.tasks[0].scale.rules = {std::move(rule)};
  };
  std::vector<BadSpecCase> cases = {
      {"node policy", [](JobSpec& s) { s.node_policy = "pack"; },
       "node_policy: 'pack' is not default, binpack or spread"},
      {"gpu policy", [](JobSpec& s) { s.gpu_policy = ""; }, "gpu_policy: '' is not default, binpack or spread"},
      {"not elastic",
       [](JobSpec& s) {
         s.tasks[0].replicas = 2;
         s.tasks[0].scale.rules = {ScaleRule{"queue-depth", 1}};
       },
       "tasks[0].scale: scale rules need an elastic group (min_replicas below replicas, here 2 of 2)"},
      {"trigger", [&](JobSpec& s) { elastic(s, ScaleRule{"cpu"}); },
       "tasks[0].scale.rules[0].trigger: 'cpu' is not queue-depth, gpu-utilisation or time-window"},
      {"window", [&](JobSpec& s) { elastic(s, ScaleRule{"time-window", 0, 0, "", "8:00-18:00"}); },
       "tasks[0].scale.rules[0].window: '8:00-18:00' is not HH:MM-HH:MM (UTC, two different times)"},
      {"empty window", [&](JobSpec& s) { elastic(s, ScaleRule{"time-window", 0, 0, "", "09:00-09:00"}); },
       "tasks[0].scale.rules[0].window: '09:00-09:00' is not HH:MM-HH:MM (UTC, two different times)"},
      {"percent", [&](JobSpec& s) { elastic(s, ScaleRule{"gpu-utilisation", 120, 10}); },
       "tasks[0].scale.rules[0]: gpu-utilisation thresholds are percentages (0 to 100)"},
      {"flapping", [&](JobSpec& s) { elastic(s, ScaleRule{"queue-depth", 2, 5}); },
       "tasks[0].scale.rules[0]: shrink_below (5) must be at most 3, or one signal would ask to grow and to shrink "
       "at once"},
      {"flapping utilisation", [&](JobSpec& s) { elastic(s, ScaleRule{"gpu-utilisation", 50, 51}); },
       "tasks[0].scale.rules[0]: shrink_below (51) must be at most 50, or one signal would ask to grow and to shrink "
       "at once"},
      {"step", [&](JobSpec& s) { elastic(s, ScaleRule{"queue-depth", 2, 0, "", "", 0}); },
       "tasks[0].scale.rules[0].step: 0 is not 1 to 4"},
      {"queue name", [&](JobSpec& s) { elastic(s, ScaleRule{"queue-depth", 2, 0, "a b"}); },
       "tasks[0].scale.rules[0].queue: 'a b' may only contain letters, digits, '-', '_' and '.'"},
      {"cooldown",
       [&](JobSpec& s) {
         elastic(s, ScaleRule{"queue-depth", 2});
         s.tasks[0].scale.cooldown_ms = 100'000'000;
       },
       "tasks[0].scale.cooldown_ms: at most a day (86400000)"},
  };
  for (const auto& c : cases) {
    JobSpec spec = ValidSpec();
    c.mutate(spec);
    Status s = ValidateJobSpec(spec);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.label;
    EXPECT_EQ(s.message(), c.expected_message) << c.label;
  }
  JobSpec spec = ValidSpec();
  spec.node_policy = "spread";
  spec.gpu_policy = "binpack";
  elastic(spec, ScaleRule{"time-window", 0, 0, "", "22:00-06:00"});
  spec.tasks[0].scale.rules.push_back(ScaleRule{"gpu-utilisation", 80, 20});
  spec.tasks[0].scale.rules.push_back(ScaleRule{"queue-depth", 0, 1});  // grow while any waits, shrink when none
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec).ToString();
}

TEST(ValidateJobSpecTest, AcceptsAnyOfGpuModels) {
  JobSpec spec = ValidSpec();
  spec.tasks[0].resources.gpus = 1;
  spec.tasks[0].resources.gpu_model = "V100M16|V100M32";
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  EXPECT_TRUE(GpuModelAllowed("V100M16|V100M32", "V100M32"));
  EXPECT_TRUE(GpuModelAllowed("", "T4"));
  EXPECT_FALSE(GpuModelAllowed("V100M16|V100M32", "V100M3"));
  EXPECT_FALSE(GpuModelAllowed("A100", "A100|H100"));
}

JobSpec ValidSession() {
  JobSpec spec = ValidSpec();
  spec.tasks[0].resources.gpus = 1;
  spec.restart.policy = "never";
  spec.session.enabled = true;
  spec.session.owner_key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  return spec;
}

TEST(ValidateSessionSpecTest, ASessionIsOneTaskWithGpusAKeyAndSaneTimes) {
  EXPECT_TRUE(ValidateJobSpec(ValidSession()).ok());
  std::vector<BadSpecCase> cases = {
      {"two replicas", [](JobSpec& s) { s.tasks[0].replicas = 2; }, "session: a session is one task"},
      {"two groups",
       [](JobSpec& s) {
         s.tasks.push_back(s.tasks[0]);
         s.tasks[1].name = "other";
       },
       "session: a session is one task"},
      {"no gpus", [](JobSpec& s) { s.tasks[0].resources.gpus = 0; }, "session: a session asks for GPUs"},
      {"no key", [](JobSpec& s) { s.session.owner_key.clear(); }, "session.owner_key: not a CurveZMQ public key"},
      {"short key", [](JobSpec& s) { s.session.owner_key = "abc"; }, "session.owner_key: not a CurveZMQ public key"},
      {"idle 0", [](JobSpec& s) { s.session.idle_timeout_ms = 0; }, "session.idle_timeout_ms: 0 is not 1 s to 7 days"},
      {"lease 10 ms", [](JobSpec& s) { s.session.lease_ms = 10; }, "session.lease_ms: 10 is not 1 s to 7 days"},
      {"restarted", [](JobSpec& s) { s.restart.policy = "on-failure"; }, "restart.policy: a session is never restarted"},
  };
  for (const auto& c : cases) {
    JobSpec spec = ValidSession();
    c.mutate(spec);
    const Status status = ValidateJobSpec(spec);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.label;
    EXPECT_EQ(status.message().rfind(c.expected_message, 0), 0u) << c.label << ": " << status.message();
  }
  // Not a session: none of it applies.
  JobSpec plain = ValidSpec();
  plain.session.owner_key = "abc";
  EXPECT_TRUE(ValidateJobSpec(plain).ok());
}

TEST(ValidateNodeSpecTest, AnAdvertisedAddressIsAnIpLiteral) {
  NodeSpec node;
  node.name = "n1";
  EXPECT_TRUE(ValidateNodeSpec(node).ok()) << "none advertised";
  for (const char* good : {"10.0.0.5", "127.0.0.1", "fd00::5", "::1"}) {
    node.address = good;
    EXPECT_TRUE(ValidateNodeSpec(node).ok()) << good;
  }
  node.address = "gpu-a01.dc1";
  EXPECT_EQ(ValidateNodeSpec(node).message(), "node.address: 'gpu-a01.dc1' is not an IPv4 or IPv6 address");
}

TEST(ValidateNodeSpecTest, RejectsDuplicateAndDanglingGpus) {
  NodeSpec node;
  node.name = "n1";
  node.gpus.push_back(GpuInfo{.index = 0, .uuid = "GPU-0"});
  node.gpus.push_back(GpuInfo{.index = 1, .uuid = "GPU-1", .nvlink_peers = {0}});
  EXPECT_TRUE(ValidateNodeSpec(node).ok());
  node.gpus[1].nvlink_peers = {7};
  EXPECT_EQ(ValidateNodeSpec(node).message(), "node.gpus[1].nvlink_peers: GPU 7 does not exist on this node");
  node.gpus[1].nvlink_peers = {};
  node.gpus[1].uuid = "GPU-0";
  EXPECT_EQ(ValidateNodeSpec(node).message(), "node.gpus[1].uuid: 'GPU-0' is used twice");
  node.gpus.clear();
  for (uint32_t i = 0; i < 1025; ++i) node.gpus.push_back(GpuInfo{.index = i, .uuid = "GPU-" + std::to_string(i)});
  EXPECT_EQ(ValidateNodeSpec(node).message(), "node.gpus: 1025 devices exceeds the maximum of 1024");
}

// Issue 50: whole cores are handed out whole, and a time-sliced GPU is the
// whole device taken in turns.
TEST(ValidateJobSpecTest, ExclusiveCoresNeedAWholeNumberOfCpus) {
  JobSpec spec = ValidSpec();
  spec.tasks[0].resources.exclusive_cores = true;
  spec.tasks[0].resources.cpu_milli = 2000;
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  spec.tasks[0].resources.cpu_milli = 1500;
  Status half = ValidateJobSpec(spec);
  EXPECT_EQ(half.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(half.message().find("exclusive_cores: needs a whole number of cpus"), std::string::npos) << half.ToString();
  spec.tasks[0].resources.cpu_milli = 0;
  EXPECT_EQ(ValidateJobSpec(spec).code(), StatusCode::kInvalidArgument) << "no cpus, no cores";
}

TEST(ValidateNodeSpecTest, TimeSlicesAreForPlainGpusAndAtMost64) {
  NodeSpec node;
  node.name = "n1";
  node.gpus.push_back(GpuInfo{.index = 0, .uuid = "GPU-0", .time_slices = 8});
  EXPECT_TRUE(ValidateNodeSpec(node).ok());
  node.gpus[0].time_slices = 65;
  EXPECT_EQ(ValidateNodeSpec(node).message(), "node.gpus[0].time_slices: more than 64");
  node.gpus[0].time_slices = 4;
  node.gpus[0].mig_mode = "dynamic";
  EXPECT_EQ(ValidateNodeSpec(node).message(), "node.gpus[0].time_slices: cannot be combined with MIG or cores");
}

}  // namespace
}  // namespace gpool
