// `gpool submit`: specs from flags, files and stdin, the job-level flags, and
// --wait (cli_submit.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/test_support.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_client.h"

namespace gpool {
namespace {

using client::testing::CliTest;
using client::testing::UniqueTempPath;
using client::testing::WriteFile;

TEST_F(CliTest, SubmitFromFlagsBuildsTheSpec) {
  int rc = Run({"submit", "--gpus", "2", "--cpus", "0.5", "--mem", "4Gi", "--name", "exp", "--replicas", "3",
                "--queue", "q1", "--priority", "-5", "--env", "A=1,2", "-e", "B=x=y", "--env=C=", "--", "python3",
                "train.py", "--epochs", "3", "-v"});
  ASSERT_EQ(rc, 0) << err_.str();
  EXPECT_EQ(out_.str(), "job 1 submitted\n");
  ASSERT_EQ(cluster_->submits.size(), 1u);
  const SubmitJob& submit = cluster_->submits[0];
  EXPECT_FALSE(submit.idempotency_key.empty());
  const JobSpec& spec = submit.spec;
  EXPECT_EQ(spec.name, "exp");
  EXPECT_EQ(spec.queue, "q1");
  EXPECT_EQ(spec.priority, -5);
  ASSERT_EQ(spec.tasks.size(), 1u);
  const TaskGroupSpec& group = spec.tasks[0];
  EXPECT_EQ(group.replicas, 3u);
  EXPECT_EQ(group.command, (std::vector<std::string>{"python3", "train.py", "--epochs", "3", "-v"}));
  EXPECT_EQ(group.resources, (Resources{2, 500, 4096}));
  EXPECT_EQ(group.env, (std::map<std::string, std::string>{{"A", "1,2"}, {"B", "x=y"}, {"C", ""}}));
}

TEST_F(CliTest, SubmitFromFlagsDefaultsNameToTheProgram) {
  ASSERT_EQ(Run({"submit", "--", "/usr/bin/nvidia-smi", "-L"}), 0) << err_.str();
  const JobSpec& spec = cluster_->submits.at(0).spec;
  EXPECT_EQ(spec.name, "nvidia-smi");
  EXPECT_EQ(spec.queue, "default");
  EXPECT_EQ(spec.tasks[0].replicas, 1u);
  EXPECT_EQ(spec.tasks[0].resources, Resources{});
}

TEST_F(CliTest, SubmitJsonAndGlobalFlagsAfterTheCommand) {
  ASSERT_EQ(Run({"submit", "--json", "-c", "tcp://h:1", "--", "true"}), 0) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["job_id"], 1);
  EXPECT_EQ(options_.endpoints, "tcp://h:1");
}

TEST_F(CliTest, SubmitFromFileAndOverrides) {
  const std::string path = UniqueTempPath("gpool_cli_test");
  WriteFile(path, "name: fromfile\ncommand: [echo, hi]\nresources: {gpus: 1}\n");
  ASSERT_EQ(Run({"submit", path, "--priority", "9", "--idempotency-key", "k1"}), 0) << err_.str();
  ASSERT_EQ(cluster_->submits.size(), 1u);
  EXPECT_EQ(cluster_->submits[0].spec.name, "fromfile");
  EXPECT_EQ(cluster_->submits[0].spec.priority, 9);
  EXPECT_EQ(cluster_->submits[0].idempotency_key, "k1");

  // The same key again is a duplicate.
  ASSERT_EQ(Run({"submit", path, "--idempotency-key", "k1"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "job 1 submitted (already submitted earlier with this idempotency key)\n");
  std::remove(path.c_str());
}

TEST_F(CliTest, SubmitFromStdin) {
  stdin_.str("name: piped\ncommand: 'echo hi'\n");
  ASSERT_EQ(Run({"submit", "-"}), 0) << err_.str();
  EXPECT_EQ(cluster_->submits.at(0).spec.name, "piped");
}

TEST_F(CliTest, InvalidSpecsAreUsageErrorsAndNeverReachTheCoordinator) {
  stdin_.str("name: j\ncommand: x\nresources: {gpus: two}\n");
  EXPECT_EQ(Run({"submit", "-"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "gpool: InvalidArgument: <stdin>: resources.gpus: expected a non-negative integer, got 'two'\n");
  EXPECT_EQ(Run({"submit", "--gpus", "two", "--", "x"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --gpus: expected an integer from 0 to 4294967295, got 'two'\n");
  EXPECT_EQ(Run({"submit", "--mem", "lots", "--", "x"}), kExitUsage);
  EXPECT_EQ(err_.str().rfind("gpool: InvalidArgument: --mem: 'lots' is not a memory size (", 0), 0u) << err_.str();
  EXPECT_EQ(Run({"submit", "--env", "NOEQUALS", "--", "x"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --env: expected NAME=VALUE, got 'NOEQUALS'\n");
  EXPECT_EQ(Run({"submit", "--replicas", "0", "--", "x"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: tasks[0].replicas: must be at least 1\n");
  EXPECT_EQ(Run({"submit", "/nonexistent.yaml"}), kExitUsage);
  EXPECT_EQ(Run({"submit"}), kExitUsage);
  EXPECT_EQ(Run({"submit", "a.yaml", "--", "x"}), kExitUsage);
  EXPECT_EQ(Run({"submit", "a.yaml", "--gpus", "1"}), kExitUsage);
  EXPECT_EQ(Run({"submit", "--"}), kExitUsage);
  EXPECT_EQ(Run({"submit", "--bogus", "--", "x"}), kExitUsage);
  EXPECT_TRUE(cluster_->submits.empty());
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(CliTest, SubmitAndWait) {
  cluster_->on_get_job = [](FakeCluster& c, uint64_t job) { c.SetJobState(job, JobState::kFailed, "boom"); };
  EXPECT_EQ(Run({"submit", "--wait", "--", "false"}), kExitJobUnsuccessful);
  EXPECT_EQ(out_.str(), "job 1 submitted\njob 1 Failed: boom\n");
}

// --- submit: class, pool, user, placement, elastic groups ------------------------------

TEST_F(CliTest, SubmitPolicyFlagsBuildTheSpec) {
  ASSERT_EQ(Run({"submit", "--class", "high", "--pool", "exclusive", "--user", "bob", "--selector", "rack=r1,zone=a",
                 "--selector", "gpu=a100", "--prefer", "zone=b", "--toleration", "maint", "--toleration",
                 "dedicated=ml,spot", "--replicas", "4", "--min-replicas", "2", "--gpus", "2", "--gpu-model",
                 "A100-SXM4-80GB", "--numa", "single-numa-node", "--network", "single-switch", "--network-tier",
                 "2", "--grace-period", "2m", "--max-runtime", "3h", "--node-policy", "spread", "--gpu-policy",
                 "binpack", "--", "python3", "train.py"}),
            kExitOk)
      << err_.str();
  ASSERT_EQ(cluster_->submits.size(), 1u);
  const JobSpec& spec = cluster_->submits[0].spec;
  EXPECT_EQ(spec.grace_period_ms, 120'000u);
  EXPECT_EQ(spec.max_runtime_ms, 10'800'000u);
  EXPECT_EQ(spec.numa_policy, "single-numa-node");
  EXPECT_EQ(spec.node_policy, "spread");
  EXPECT_EQ(spec.gpu_policy, "binpack");
  EXPECT_EQ(spec.network_mode, "single-switch");
  EXPECT_EQ(spec.network_tier, 2u);
  EXPECT_EQ(spec.priority_class, "high");
  EXPECT_EQ(spec.pool, "exclusive");
  EXPECT_EQ(spec.user, "bob");
  EXPECT_EQ(spec.node_selector,
            (std::map<std::string, std::string>{{"rack", "r1"}, {"zone", "a"}, {"gpu", "a100"}}));
  EXPECT_EQ(spec.prefer_labels, (std::map<std::string, std::string>{{"zone", "b"}}));
  EXPECT_EQ(spec.tolerations, (std::vector<std::string>{"maint", "dedicated=ml", "spot"}));
  ASSERT_EQ(spec.tasks.size(), 1u);
  EXPECT_EQ(spec.tasks[0].replicas, 4u);
  EXPECT_EQ(spec.tasks[0].min_replicas, 2u);
  EXPECT_EQ(spec.tasks[0].resources, (Resources{2, 0, 0, "A100-SXM4-80GB"}));

  // `gpool job` shows what was asked for.
  ASSERT_EQ(Run({"job", "1"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("  Class:          high\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("  User:           bob\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("  Tolerates:      maint, dedicated=ml, spot\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("  Placement:      nodes spread, GPUs binpack\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("4 (min 2)  2 GPUs (A100-SXM4-80GB)"), std::string::npos) << out_.str();
}

TEST_F(CliTest, SubmitDefaultsClassPoolAndUserFromTheEnvironment) {
  ASSERT_EQ(Run({"submit", "--", "true"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.priority_class, "medium");
  EXPECT_EQ(cluster_->submits.back().spec.pool, "");  // the coordinator chooses at submit
  EXPECT_EQ(cluster_->submits.back().spec.user, "");  // no $USER: no user
  EXPECT_EQ(cluster_->submits.back().spec.tasks[0].min_replicas, 0u);

  environment_["USER"] = "alice";
  ASSERT_EQ(Run({"submit", "--", "true"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "alice");
  ASSERT_EQ(Run({"submit", "--user", "bob", "--", "true"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "bob");

  // The spec file's user wins over $USER; --user wins over both.
  stdin_.str("name: j\nuser: carol\ncommand: x\n");
  ASSERT_EQ(Run({"submit", "-"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "carol");
  stdin_.clear();
  stdin_.str("name: j\nuser: carol\ncommand: x\n");
  ASSERT_EQ(Run({"submit", "-", "--user", "dave"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "dave");
  stdin_.clear();
  stdin_.str("name: j\ncommand: x\n");
  ASSERT_EQ(Run({"submit", "-"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "alice");
  EXPECT_EQ(cluster_->submits.size(), 6u);

  // A login name the coordinator would refuse is reported with the way out.
  environment_["USER"] = "DOMAIN\\alice";
  EXPECT_EQ(Run({"submit", "--", "true"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: $USER is not a valid gpool user (user: 'DOMAIN\\alice' may only "
                        "contain letters, digits, '-', '_' and '.'); give one with --user NAME\n");
  ASSERT_EQ(Run({"submit", "--user", "alice", "--", "true"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.size(), 7u);
}

TEST_F(CliTest, SubmitFileKeepsItsPolicyFieldsAndFlagsAddToThem) {
  const std::string path = UniqueTempPath("gpool_cli_policy");
  WriteFile(path,
            "name: p\npriority_class: low\npool: pooled\nnode_selector: {rack: r1, zone: a}\n"
            "prefer_labels: {ssd: 'yes'}\ntolerations: [maint]\nnuma_policy: best-effort\nnode_policy: binpack\n"
            "gpu_policy: spread\nreplicas: 3\n"
            "min_replicas: 1\ncommand: x\nresources: {gpus: 1, gpu_model: H100}\n");
  ASSERT_EQ(Run({"submit", path}), kExitOk) << err_.str();
  JobSpec spec = cluster_->submits.back().spec;
  EXPECT_EQ(spec.priority_class, "low");
  EXPECT_EQ(spec.pool, "pooled");
  EXPECT_EQ(spec.node_selector, (std::map<std::string, std::string>{{"rack", "r1"}, {"zone", "a"}}));
  EXPECT_EQ(spec.prefer_labels, (std::map<std::string, std::string>{{"ssd", "yes"}}));
  EXPECT_EQ(spec.tolerations, std::vector<std::string>{"maint"});
  EXPECT_EQ(spec.numa_policy, "best-effort");
  EXPECT_EQ(spec.node_policy, "binpack");
  EXPECT_EQ(spec.gpu_policy, "spread");
  EXPECT_EQ(spec.tasks[0].min_replicas, 1u);
  EXPECT_EQ(spec.tasks[0].resources.gpu_model, "H100");

  ASSERT_EQ(Run({"submit", path, "--class", "high", "--pool", "public", "--selector", "rack=r2",
                 "--toleration", "maint,spot"}),
            kExitOk)
      << err_.str();
  spec = cluster_->submits.back().spec;
  EXPECT_EQ(spec.priority_class, "high");
  EXPECT_EQ(spec.pool, "public");
  EXPECT_EQ(spec.node_selector, (std::map<std::string, std::string>{{"rack", "r2"}, {"zone", "a"}}));
  EXPECT_EQ(spec.tolerations, (std::vector<std::string>{"maint", "spot"}));

  // Group settings belong in the file.
  for (const char* flag : {"--min-replicas", "--gpu-model"}) {
    EXPECT_EQ(Run({"submit", path, flag, "1"}), kExitUsage) << flag;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + std::string(flag) +
                              " only applies to 'submit -- CMD'; set resources in the spec file\n"
                              "Run 'gpool --help' for usage.\n");
  }
  EXPECT_EQ(cluster_->submits.size(), 2u);
  std::remove(path.c_str());
}

TEST_F(CliTest, BadPolicyFlagsNameTheFlagAndNeverReachTheCoordinator) {
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--class", "urgent"}, "--class: 'urgent' is not system, high, medium or low"},
      {{"--class", "High"}, "--class: 'High' is not system, high, medium or low"},
      {{"--pool", "shared"}, "--pool: 'shared' is not public, pooled or exclusive"},
      {{"--numa", "strict"}, "--numa: 'strict' is not none, best-effort or single-numa-node"},
      {{"--network", "leaf"}, "--network: 'leaf' is not none, best-effort or single-switch"},
      {{"--node-policy", "pack"}, "--node-policy: 'pack' is not default, binpack or spread"},
      {{"--gpu-policy", "Spread"}, "--gpu-policy: 'Spread' is not default, binpack or spread"},
      {{"--network", "single-switch", "--network-tier", "0"}, "--network-tier: tiers count from 1 (the leaf switch)"},
      {{"--network", "single-switch", "--network-tier", "9"}, "--network-tier: expected an integer from 0 to 8, got '9'"},
      {{"--selector", "rack"}, "--selector: expected KEY=VALUE, got 'rack'"},
      {{"--selector", "rack=r1,zone"}, "--selector: expected KEY=VALUE, got 'zone'"},
      {{"--selector", "a b=1"}, "--selector: label key 'a b' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"--selector", "=r1"}, "--selector: '=r1': the label key is empty"},
      {{"--selector", "rack=r1", "--selector", "rack=r2"}, "--selector: rack is set twice ('r1' and 'r2')"},
      {{"--prefer", "zone=a/b"},
       "--prefer: the value of zone ('a/b') may only contain letters, digits, '.', '_' and '-'"},
      {{"--toleration", "=x"}, "--toleration: '=x': the taint key is empty"},
      {{"--toleration", "ma int"}, "--toleration: taint key 'ma int' may only contain letters, digits, '.', '_', '/' "
                                   "and '-'"},
      {{"--toleration", "k=a b"}, "--toleration: the value of k ('a b') may only contain letters, digits, '.', '_' "
                                  "and '-'"},
      {{"--min-replicas", "two"}, "--min-replicas: expected an integer from 0 to 4294967295, got 'two'"},
      {{"--replicas", "2", "--min-replicas", "3"}, "--min-replicas: 3 is more than the 2 replicas (--replicas)"},
      {{"--min-replicas", "2"}, "--min-replicas: 2 is more than the 1 replicas (--replicas)"},
      {{"--gpu-model", "A100"}, "--gpu-model: needs --gpus (the task asks for no GPUs)"},
      {{"--gpus", "1", "--gpu-model", "A 100"},
       "tasks[0].resources.gpu_model: 'A 100' must be at most 63 letters, digits, '.', '_' and '-'"},
      {{"--user", "a b"}, "user: 'a b' may only contain letters, digits, '-', '_' and '.'"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"submit"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    args.insert(args.end(), {"--", "x"});
    EXPECT_EQ(Run(args), kExitUsage) << c.message;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + c.message + "\n");
  }
  EXPECT_TRUE(cluster_->submits.empty());
  EXPECT_EQ(clients_made_, 0);
}

}  // namespace
}  // namespace gpool

namespace gpool {
namespace {

TEST_F(CliTest, SubmitRestartFlagsSetThePolicy) {
  ASSERT_EQ(Run({"submit", "--restart", "on-failure", "--max-attempts", "2", "--", "true"}), 0) << err_.str();
  ASSERT_EQ(cluster_->submits.size(), 1u);
  EXPECT_EQ(cluster_->submits[0].spec.restart, (RestartSpec{"on-failure", 2}));
  EXPECT_NE(Run({"submit", "--restart", "always", "--", "true"}), 0);
  EXPECT_NE(err_.str().find("--restart"), std::string::npos) << err_.str();
}

}  // namespace
}  // namespace gpool
