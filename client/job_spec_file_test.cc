#include "client/job_spec_file.h"

#include "protocol/validate.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "client/test_support.h"

namespace gpool {
namespace {

using client::testing::UniqueTempPath;

using client::testing::InvalidArgumentMessage;
using client::testing::WriteFile;

// The error message of a spec that must fail, or "" when it parsed.
std::string ErrorOf(const std::string& text, std::string_view source = {}) {
  return InvalidArgumentMessage(ParseJobSpec(text, source));
}

TEST(JobSpecFileTest, ParsesFullYaml) {
  auto spec = ParseJobSpec(R"(
name: train
queue: research
priority: -3
tasks:
  - name: worker
    replicas: 2
    command: [python3, train.py, --epochs, 3]
    env:
      EPOCHS: 3
      MODE: "fast, really"
    resources:
      gpus: 4
      cpus: 0.5
      memory: 16Gi
  - name: ps
    command: ["sleep", "5"]
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "train");
  EXPECT_EQ(spec->queue, "research");
  EXPECT_EQ(spec->priority, -3);
  ASSERT_EQ(spec->tasks.size(), 2u);
  const auto& worker = spec->tasks[0];
  EXPECT_EQ(worker.name, "worker");
  EXPECT_EQ(worker.replicas, 2u);
  EXPECT_EQ(worker.command, (std::vector<std::string>{"python3", "train.py", "--epochs", "3"}));
  EXPECT_EQ(worker.env.at("EPOCHS"), "3");
  EXPECT_EQ(worker.env.at("MODE"), "fast, really");
  EXPECT_EQ(worker.resources, (Resources{4, 500, 16384}));
  const auto& ps = spec->tasks[1];
  EXPECT_EQ(ps.replicas, 1u);
  EXPECT_EQ(ps.resources, Resources{});
  EXPECT_EQ(spec->TotalTasks(), 3u);
}

TEST(JobSpecFileTest, ParsesJson) {
  auto spec = ParseJobSpec(R"({
    "name": "hello",
    "priority": 7,
    "tasks": [{"replicas": 3, "command": ["echo", "hi"],
               "resources": {"gpus": 1, "cpus": "2", "memory": 512}}]
  })");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "hello");
  EXPECT_EQ(spec->queue, "default");
  EXPECT_EQ(spec->priority, 7);
  ASSERT_EQ(spec->tasks.size(), 1u);
  EXPECT_EQ(spec->tasks[0].name, "task");
  EXPECT_EQ(spec->tasks[0].replicas, 3u);
  EXPECT_EQ(spec->tasks[0].resources, (Resources{1, 2000, 512}));
}

TEST(JobSpecFileTest, ShorthandIsOneTaskGroup) {
  auto spec = ParseJobSpec(R"(
name: quick
replicas: 2
command: echo $GPOOL_TASK_INDEX && env
env: {A: b}
resources: {gpus: 1}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->tasks.size(), 1u);
  const auto& group = spec->tasks[0];
  EXPECT_EQ(group.name, "task");
  EXPECT_EQ(group.replicas, 2u);
  EXPECT_EQ(group.command, (std::vector<std::string>{"sh", "-c", "echo $GPOOL_TASK_INDEX && env"}));
  EXPECT_EQ(group.env.at("A"), "b");
  EXPECT_EQ(group.resources.gpus, 1u);
}

TEST(JobSpecFileTest, StringCommandRunsThroughShell) {
  auto spec = ParseJobSpec("name: s\ntasks:\n  - command: 'for i in 1 2; do echo $i; done'\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tasks[0].command, (std::vector<std::string>{"sh", "-c", "for i in 1 2; do echo $i; done"}));
}

TEST(JobSpecFileTest, ExclusiveCoresIsABool) {
  auto spec = ParseJobSpec("name: p\ncommand: x\nresources: {cpus: 4, exclusive_cores: true}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->tasks[0].resources.exclusive_cores);
  EXPECT_EQ(spec->tasks[0].resources.cpu_milli, 4000u);
  EXPECT_EQ(ErrorOf("name: p\ncommand: x\nresources: {cpus: 4, exclusive_cores: yes}\n"),
            "resources.exclusive_cores: expected true or false, got 'yes'");
}

TEST(JobSpecFileTest, UnnamedGroupsGetDistinctNames) {
  auto spec = ParseJobSpec("name: s\ntasks:\n  - command: a\n  - command: b\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tasks[0].name, "task-0");
  EXPECT_EQ(spec->tasks[1].name, "task-1");
}

TEST(JobSpecFileTest, BadFieldValuesNameTheField) {
  const std::string head = "name: j\ntasks:\n  - command: [x]\n";
  EXPECT_EQ(ErrorOf(head + "    resources: {gpus: two}\n", "job.yaml"),
            "job.yaml: tasks[0].resources.gpus: expected a non-negative integer, got 'two'");
  EXPECT_EQ(ErrorOf(head + "    resources: {gpus: -1}\n"),
            "tasks[0].resources.gpus: expected a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf(head + "    resources: {gpus: 1.5}\n"),
            "tasks[0].resources.gpus: expected a non-negative integer, got '1.5'");
  EXPECT_EQ(ErrorOf(head + "    replicas: lots\n"),
            "tasks[0].replicas: expected a non-negative integer, got 'lots'");
  EXPECT_EQ(ErrorOf(head + "    replicas: 0\n"), "tasks[0].replicas: must be at least 1");
  EXPECT_NE(ErrorOf(head + "    resources: {cpus: fast}\n").find("tasks[0].resources.cpus: 'fast' is not a CPU count"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "    resources: {cpus: 0.0001}\n").find("tasks[0].resources.cpus: '0.0001' is finer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "    resources: {memory: 4XB}\n").find("tasks[0].resources.memory: '4XB' is not a memory size"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(head + "    resources: [1]\n"), "tasks[0].resources: expected a map, got a list");
  EXPECT_EQ(ErrorOf(head + "    env: [A]\n"), "tasks[0].env: expected a map of NAME: value, got a list");
  EXPECT_EQ(ErrorOf(head + "    env: {A: [1]}\n"), "tasks[0].env.A: expected a string, got a list");
  EXPECT_EQ(ErrorOf(head + "    env: {1BAD: x}\n"), "tasks[0].env: '1BAD' is not a valid environment variable name");
  EXPECT_EQ(ErrorOf("name: j\npriority: high\ncommand: x\n"), "priority: expected an integer, got 'high'");
  EXPECT_EQ(ErrorOf("name: j\npriority: 99999999999\ncommand: x\n"), "priority: out of range, got '99999999999'");
  EXPECT_EQ(ErrorOf("name: [a]\ncommand: x\n"), "name: expected a string, got a list");
  EXPECT_EQ(ErrorOf("name: 'bad name'\ncommand: x\n"),
            "name: 'bad name' may only contain letters, digits, '-', '_' and '.'");
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - command: [a, [b]]\n"), "tasks[0].command[1]: expected a string, got a list");
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - command: []\n"), "tasks[0].command: must name a program to run");
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - command: ''\n"), "tasks[0].command: must not be empty");
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - command: {a: b}\n"),
            "tasks[0].command: expected a list of strings or one string, got a map");
}

TEST(JobSpecFileTest, MissingAndMisplacedFields) {
  EXPECT_EQ(ErrorOf("command: x\n"), "name: required");
  EXPECT_EQ(ErrorOf("name: j\n"), "tasks: required (or give 'command' directly under the job for one task group)");
  EXPECT_EQ(ErrorOf("name: j\ntasks: []\n"), "tasks: at least one task group is required");
  EXPECT_EQ(ErrorOf("name: j\ntasks: x\n"), "tasks: expected a list of task groups, got 'x'");
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - replicas: 2\n"), "tasks[0].command: required");
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - x\n"), "tasks[0]: expected a map, got 'x'");
  EXPECT_NE(ErrorOf("name: j\ncommand: x\ntasks:\n  - command: y\n").find("command: cannot be combined with 'tasks'"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - {name: a, command: x}\n  - {name: a, command: y}\n"),
            "tasks[1].name: 'a' is used by another task group");
  EXPECT_EQ(ErrorOf("", "job.yaml"), "job.yaml: job spec is empty");
  EXPECT_EQ(ErrorOf("- a\n- b\n"), "job spec: expected a map, got a list");
}

TEST(JobSpecFileTest, UnknownKeysAreErrorsWithHints) {
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - command: x\n    replica: 2\n", "job.yaml"),
            "job.yaml: tasks[0].replica: unknown key (did you mean 'replicas'?); allowed keys: name, replicas, "
            "min_replicas, network_tier, command, env, resources, scale");
  EXPECT_EQ(ErrorOf("name: j\ncommand: x\nresources: {gpu: 1}\n"),
            "resources.gpu: unknown key (did you mean 'gpus'?); allowed keys: gpus, cpus, memory, gpu_model, gpu_memory, gpu_memory_pct, gpu_compute, sharing_qos, mig_profile, cores, exclusive_cores");
  EXPECT_EQ(ErrorOf("name: j\ncommand: x\nresources: {mem: 1}\n"),
            "resources.mem: unknown key; allowed keys: gpus, cpus, memory, gpu_model, gpu_memory, gpu_memory_pct, gpu_compute, sharing_qos, mig_profile, cores, exclusive_cores");
  std::string top = ErrorOf("name: j\ncommand: x\nprio: 1\n");
  EXPECT_EQ(top.rfind("prio: unknown key", 0), 0u) << top;
  EXPECT_NE(ErrorOf("{\"name\": \"j\", \"command\": \"x\", \"Queue\": \"q\"}").find("Queue: unknown key (did you "
                                                                                    "mean 'queue'?)"),
            std::string::npos);
}

TEST(JobSpecFileTest, DuplicateKeysAreErrors) {
  EXPECT_EQ(ErrorOf("name: j\nname: k\ncommand: x\n"), "name: duplicate key");
}

TEST(JobSpecFileTest, SyntaxErrorsGiveLineAndColumn) {
  std::string error = ErrorOf("name: j\ntasks: [\n", "job.yaml");
  EXPECT_EQ(error.rfind("job.yaml:", 0), 0u) << error;
  EXPECT_NE(error.find("not valid YAML or JSON"), std::string::npos) << error;
  error = ErrorOf("{\"name\": \"j\", \"command\": [\"x\"");
  EXPECT_EQ(error.rfind("line 1:", 0), 0u) << error;
}

TEST(JobSpecFileTest, ValidatorErrorsGetTheFileName) {
  EXPECT_EQ(ErrorOf("name: j\ncommand: x\nenv: {GPOOL_JOB_ID: '1'}\n", "a.yaml"),
            "a.yaml: tasks[0].env: GPOOL_JOB_ID is set by gpool and cannot be overridden");
  EXPECT_EQ(ErrorOf("name: j\ncommand: x\nresources: {gpus: 65}\n", "a.yaml"),
            "a.yaml: tasks[0].resources.gpus: 65 exceeds the per-task maximum of 64");
}

TEST(JobSpecFileTest, LoadsFilesAndReportsMissingOnes) {
  const std::string path = UniqueTempPath("gpool_spec_test");
  WriteFile(path, "name: filejob\ncommand: [true]\nresources: {gpus: x}\n");
  auto spec = LoadJobSpecFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), path + ": resources.gpus: expected a non-negative integer, got 'x'");
  WriteFile(path, "name: filejob\ncommand: [\"true\"]\n");
  spec = LoadJobSpecFile(path);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tasks[0].command, std::vector<std::string>{"true"});
  std::remove(path.c_str());

  auto missing = LoadJobSpecFile("/nonexistent/job.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(), "/nonexistent/job.yaml: cannot open the job spec file");
}

TEST(JobSpecFileTest, ExampleSpecsParse) {
  const std::string dir = GPOOL_CLIENT_EXAMPLES_DIR;
  auto hello = LoadJobSpecFile(dir + "/hello.yaml");
  ASSERT_TRUE(hello.ok()) << hello.status().ToString();
  EXPECT_EQ(hello->TotalTasks(), 2u);
  EXPECT_EQ(hello->tasks[0].resources.gpus, 1u);
  auto train = LoadJobSpecFile(dir + "/train.yaml");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->TotalTasks(), 2u);
  EXPECT_EQ(train->tasks[0].resources.gpus, 4u);
  auto mpi = LoadJobSpecFile(dir + "/mpi.yaml");
  ASSERT_TRUE(mpi.ok()) << mpi.status().ToString();
  EXPECT_EQ(mpi->name, "mpi");
  EXPECT_EQ(mpi->TotalTasks(), 4u);
  EXPECT_EQ(mpi->tasks[0].name, "worker");
  EXPECT_EQ(mpi->tasks[0].env.at("OMPI_ALLOW_RUN_AS_ROOT"), "1");
  auto big = LoadJobSpecFile(dir + "/too-big.yaml");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->TotalTasks(), 1u);
  EXPECT_EQ(big->tasks[0].resources.gpus, 9u);
  auto elastic = LoadJobSpecFile(dir + "/elastic.yaml");
  ASSERT_TRUE(elastic.ok()) << elastic.status().ToString();
  EXPECT_EQ(elastic->priority_class, "high");
  EXPECT_EQ(elastic->node_selector.at("rack"), "r1");
  EXPECT_EQ(elastic->tasks[0].replicas, 4u);
  EXPECT_EQ(elastic->tasks[0].MinReplicas(), 2u);
  EXPECT_EQ(elastic->tasks[0].resources.gpu_model, "A100-SXM4-80GB");
  auto tp = LoadJobSpecFile(dir + "/tensor-parallel.yaml");
  ASSERT_TRUE(tp.ok()) << tp.status().ToString();
  EXPECT_EQ(tp->network_mode, "single-switch");
  EXPECT_EQ(tp->network_tier, 2u);
  EXPECT_EQ(tp->tasks[1].network_tier, 1u);
  EXPECT_TRUE(ValidateJobSpec(*tp).ok());
}

TEST(JobSpecFileTest, NetworkFieldsAreCheckedByName) {
  auto bad_tier = ParseJobSpec("name: x\nnetwork_mode: single-switch\nnetwork_tier: 9\ncommand: [true]\n");
  ASSERT_FALSE(bad_tier.ok());
  EXPECT_NE(bad_tier.status().message().find("network_tier"), std::string::npos) << bad_tier.status().message();
}

// --- Policy fields ------------------------------------------------------------------

TEST(JobSpecFileTest, ParsesPolicyFieldsWithTheWireNames) {
  auto spec = ParseJobSpec(R"(
name: train
priority_class: high
pool: exclusive
user: alice
node_selector: {rack: r1, gpu: true}
prefer_labels:
  zone: a
tolerations: [maint, dedicated=ml]
tasks:
  - name: worker
    replicas: 4
    min_replicas: 2
    command: [python3, train.py]
    resources: {gpus: 2, gpu_model: A100-SXM4-80GB}
  - name: ps
    command: [ps.py]
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->priority_class, "high");
  EXPECT_EQ(spec->pool, "exclusive");
  EXPECT_EQ(spec->user, "alice");
  EXPECT_EQ(spec->node_selector, (std::map<std::string, std::string>{{"rack", "r1"}, {"gpu", "true"}}));
  EXPECT_EQ(spec->prefer_labels, (std::map<std::string, std::string>{{"zone", "a"}}));
  EXPECT_EQ(spec->tolerations, (std::vector<std::string>{"maint", "dedicated=ml"}));
  EXPECT_EQ(spec->tasks[0].min_replicas, 2u);
  EXPECT_EQ(spec->tasks[0].MinReplicas(), 2u);
  EXPECT_EQ(spec->tasks[0].resources, (Resources{2, 0, 0, "A100-SXM4-80GB"}));
  EXPECT_EQ(spec->tasks[1].min_replicas, 0u);  // all of its replicas
  EXPECT_EQ(spec->tasks[1].resources.gpu_model, "");
}

TEST(JobSpecFileTest, PolicyFieldsDefaultAsOnTheWire) {
  auto spec = ParseJobSpec("name: j\ncommand: x\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->priority_class, "medium");
  EXPECT_EQ(spec->pool, "");  // the coordinator chooses at submit
  EXPECT_EQ(spec->user, "");  // the CLI fills in $USER
  EXPECT_TRUE(spec->node_selector.empty());
  EXPECT_TRUE(spec->prefer_labels.empty());
  EXPECT_TRUE(spec->tolerations.empty());
  EXPECT_EQ(spec->tasks[0].min_replicas, 0u);
}

TEST(JobSpecFileTest, PolicyFieldsInJsonAndTheShorthand) {
  auto spec = ParseJobSpec(R"({"name": "j", "priority_class": "low", "tolerations": ["maint"],
                               "replicas": 3, "min_replicas": 1, "command": "x",
                               "resources": {"gpus": 1, "gpu_model": "H100"}})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->priority_class, "low");
  EXPECT_EQ(spec->tolerations, std::vector<std::string>{"maint"});
  ASSERT_EQ(spec->tasks.size(), 1u);
  EXPECT_EQ(spec->tasks[0].replicas, 3u);
  EXPECT_EQ(spec->tasks[0].min_replicas, 1u);
  EXPECT_EQ(spec->tasks[0].resources.gpu_model, "H100");
  EXPECT_NE(ErrorOf("name: j\nmin_replicas: 1\ntasks:\n  - command: x\n")
                .find("min_replicas: cannot be combined with 'tasks'"),
            std::string::npos);
}

TEST(JobSpecFileTest, BadPolicyFieldsNameTheField) {
  const std::string job = "name: j\ncommand: x\n";
  EXPECT_EQ(ErrorOf(job + "priority_class: urgent\n", "a.yaml"),
            "a.yaml: priority_class: 'urgent' is not system, high, medium or low");
  EXPECT_EQ(ErrorOf(job + "priority_class: [high]\n"), "priority_class: expected a string, got a list");
  EXPECT_EQ(ErrorOf(job + "pool: shared\n"), "pool: 'shared' is not public, pooled or exclusive");
  EXPECT_EQ(ErrorOf(job + "user: 'a b'\n"), "user: 'a b' may only contain letters, digits, '-', '_' and '.'");
  EXPECT_EQ(ErrorOf(job + "node_selector: [rack]\n"), "node_selector: expected a map of KEY: value, got a list");
  EXPECT_EQ(ErrorOf(job + "node_selector: {rack: {a: b}}\n"), "node_selector.rack: expected a string, got a map");
  EXPECT_EQ(ErrorOf(job + "node_selector: {'a b': x}\n"),
            "node_selector: label key 'a b': 1-63 characters of letters, digits, '.', '_', '/' and '-'");
  EXPECT_EQ(ErrorOf(job + "prefer_labels: {zone: 'a/b'}\n"),
            "prefer_labels: label zone: value 'a/b' must be at most 63 letters, digits, '.', '_' and '-'");
  EXPECT_EQ(ErrorOf(job + "tolerations: maint\n"), "tolerations: expected a list of strings, got 'maint'");
  EXPECT_EQ(ErrorOf(job + "tolerations: [[maint]]\n"), "tolerations[0]: expected a string, got a list");
  EXPECT_EQ(ErrorOf(job + "tolerations: ['=x']\n"),
            "tolerations: label key '': 1-63 characters of letters, digits, '.', '_', '/' and '-'");
  EXPECT_EQ(ErrorOf(job + "replicas: 2\nmin_replicas: 3\n"), "tasks[0].min_replicas: 3 is more than its 2 replicas");
  EXPECT_EQ(ErrorOf(job + "min_replicas: -1\n"), "min_replicas: expected a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - command: x\n    min_replicas: two\n"),
            "tasks[0].min_replicas: expected a non-negative integer, got 'two'");
  EXPECT_EQ(ErrorOf(job + "resources: {gpu_model: A100}\n"),
            "tasks[0].resources.gpu_model: set, but the task asks for no GPUs");
  EXPECT_EQ(ErrorOf(job + "resources: {gpus: 1, gpu_model: 'A 100'}\n"),
            "tasks[0].resources.gpu_model: 'A 100' must be at most 63 letters, digits, '.', '_' and '-'");
}

// Issue 50: the placement policies and an elastic group's scale rules.
TEST(JobSpecFileTest, PlacementPoliciesAndScaleRules) {
  auto spec = ParseJobSpec(
      "name: j\nnode_policy: spread\ngpu_policy: binpack\ncommand: x\nreplicas: 4\nmin_replicas: 1\n"
      "scale:\n  cooldown: 90s\n  rules:\n"
      "    - {trigger: queue-depth, grow_above: 2, shrink_below: 1, queue: batch, step: 2}\n"
      "    - {trigger: time-window, window: '22:00-06:00'}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->node_policy, "spread");
  EXPECT_EQ(spec->gpu_policy, "binpack");
  const ScaleSpec& scale = spec->tasks[0].scale;
  EXPECT_EQ(scale.cooldown_ms, 90'000u);
  ASSERT_EQ(scale.rules.size(), 2u);
  EXPECT_EQ(scale.rules[0], (ScaleRule{"queue-depth", 2, 1, "batch", "", 2}));
  EXPECT_EQ(scale.rules[1], (ScaleRule{"time-window", 0, 0, "", "22:00-06:00", 1}));
  const std::string job = "name: j\ncommand: x\nreplicas: 4\nmin_replicas: 1\n";
  EXPECT_EQ(ErrorOf(job + "node_policy: pack\n"), "node_policy: 'pack' is not default, binpack or spread");
  EXPECT_EQ(ErrorOf(job + "scale: {rules: [{trigger: cpu}]}\n"),
            "tasks[0].scale.rules[0].trigger: 'cpu' is not queue-depth, gpu-utilisation or time-window");
  EXPECT_EQ(ErrorOf(job + "scale: {rules: [{grow_above: 1}]}\n"), "scale.rules[0].trigger: required");
  EXPECT_EQ(ErrorOf(job + "scale: {cooldown: soon, rules: []}\n").rfind("scale.cooldown: ", 0), 0u);
  EXPECT_EQ(ErrorOf("name: j\ncommand: x\nscale: {rules: [{trigger: queue-depth}]}\n"),
            "tasks[0].scale: scale rules need an elastic group (min_replicas below replicas, here 1 of 1)");
}

TEST(JobSpecFileTest, NearMissPolicyKeysGetHints) {
  const std::string job = "name: j\ncommand: x\n";
  EXPECT_EQ(ErrorOf(job + "node_selectors: {a: b}\n").rfind("node_selectors: unknown key (did you mean "
                                                             "'node_selector'?); allowed keys: ",
                                                             0),
            0u);
  EXPECT_EQ(ErrorOf(job + "toleration: [a]\n").rfind("toleration: unknown key (did you mean 'tolerations'?)", 0), 0u);
  EXPECT_EQ(ErrorOf("name: j\ntasks:\n  - command: x\n    min_replica: 1\n")
                .rfind("tasks[0].min_replica: unknown key (did you mean 'min_replicas'?)", 0),
            0u);
  EXPECT_EQ(ErrorOf(job + "resources: {gpus: 1, gpu_modle: A100}\n")
                .rfind("resources.gpu_modle: unknown key (did you mean 'gpu_model'?)", 0),
            0u);
  // "class" is the CLI flag's name, not the file's.
  EXPECT_EQ(ErrorOf(job + "class: high\n").rfind("class: unknown key", 0), 0u);
  // Unlike the topology file's, the hint ignores case and reaches short keys.
  EXPECT_EQ(ErrorOf(job + "resources: {GPUS: 1}\n").rfind("resources.GPUS: unknown key (did you mean 'gpus'?)", 0),
            0u);
  EXPECT_EQ(ErrorOf(job + "e: {A: b}\n").rfind("e: unknown key (did you mean 'env'?)", 0), 0u);
}

}  // namespace
}  // namespace gpool

namespace gpool {
namespace {

TEST(JobSpecFileRestartTest, GracePeriodIsADuration) {
  auto spec = ParseJobSpec("name: t\ncommand: [true]\ngrace_period: 45s\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->grace_period_ms, 45'000u);
  auto bad = ParseJobSpec("name: t\ncommand: [true]\ngrace_period: soon\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("grace_period: 'soon' is not a duration"), std::string::npos)
      << bad.status().ToString();
  // Longer than the coordinator allows: refused by the shared validation, named.
  auto long_one = ParseJobSpec("name: t\ncommand: [true]\ngrace_period: 2h\n");
  ASSERT_FALSE(long_one.ok());
  EXPECT_NE(long_one.status().message().find("grace_period_ms: 7200000 is over the coordinator's maximum of 3600000"),
            std::string::npos)
      << long_one.status().ToString();
}

TEST(JobSpecFileRestartTest, MaxRuntimeIsADurationOfAtMostAYear) {
  auto spec = ParseJobSpec("name: t\ncommand: [true]\nmax_runtime: 90m\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->max_runtime_ms, 5'400'000u);
  auto bad = ParseJobSpec("name: t\ncommand: [true]\nmax_runtime: forever\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("max_runtime: 'forever' is not a duration"), std::string::npos)
      << bad.status().ToString();
  auto too_long = ParseJobSpec("name: t\ncommand: [true]\nmax_runtime: 9000h\n");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("max_runtime_ms: 32400000000 is over a year"), std::string::npos)
      << too_long.status().ToString();
}

TEST(JobSpecFileRestartTest, RestartPolicyIsReadAndCheckedByKey) {
  auto spec = ParseJobSpec("name: t\ncommand: [true]\nrestart: {policy: on-failure, max_attempts: 5}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->restart, (RestartSpec{"on-failure", 5}));
  auto plain = ParseJobSpec("name: t\ncommand: [true]\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->restart, RestartSpec{});
  EXPECT_FALSE(ParseJobSpec("name: t\ncommand: [true]\nrestart: {policy: sometimes}\n").ok());
  EXPECT_FALSE(ParseJobSpec("name: t\ncommand: [true]\nrestart: {max_attempts: 1000}\n").ok());
  EXPECT_FALSE(ParseJobSpec("name: t\ncommand: [true]\nrestart: {retries: 2}\n").ok());
}


// A 1 MB document whose aliases ask for 19 GB once copied into the spec's
// strings (the CLI used to abort with std::bad_alloc after 3 GB), and the
// classic nested "billion laughs" from the test data: both are refused
// before any field is read.
TEST(JobSpecFileTest, AliasBombsAreRefusedUnread) {
  std::string wide = "name: bomb\nenv: {A: &a \"" + std::string(64 * 1024, 'x') + "\"}\ncommand: [";
  for (int i = 0; i < 300'000; ++i) wide += i == 0 ? "*a" : ",*a";
  wide += "]\n";
  auto parsed = ParseJobSpec(wide, "wide.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kResourceExhausted) << parsed.status().ToString();
  EXPECT_NE(parsed.status().message().find("wide.yaml: with its YAML aliases expanded"), std::string::npos)
      << parsed.status().message();

  const std::string bomb = std::string(GPOOL_CLIENT_TESTDATA_DIR) + "/alias-bomb.yaml";
  auto loaded = LoadJobSpecFile(bomb);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kResourceExhausted) << loaded.status().ToString();
  EXPECT_NE(loaded.status().message().find("more than 1000000 nodes"), std::string::npos)
      << loaded.status().message();
}

TEST(JobSpecFileTest, AnchorsSharedBetweenGroupsStillWork) {
  auto spec = ParseJobSpec(R"(
name: shared
tasks:
  - {name: a, command: [run, a], env: &env {EPOCHS: "3", MODE: fast}}
  - {name: b, command: [run, b], env: *env}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tasks[1].env.at("MODE"), "fast");
}

TEST(JobSpecFileTest, AnOversizeSpecFileIsRefusedUnread) {
  const std::string path = UniqueTempPath("big-spec.yaml");
  WriteFile(path, "name: big\ncommand: [echo, \"" + std::string(kMaxSpecFileBytes, 'x') + "\"]\n");
  auto loaded = LoadJobSpecFile(path);
  std::remove(path.c_str());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(loaded.status().message().find(path + ": the job spec is " + std::to_string(kMaxSpecFileBytes + 30) +
                                           " bytes; spec files are limited to 4194304 bytes"),
            std::string::npos)
      << loaded.status().message();
  EXPECT_TRUE(CheckSpecFileSize(kMaxSpecFileBytes, "f").ok());
}

}  // namespace
}  // namespace gpool
