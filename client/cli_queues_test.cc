// `gpool queue create|update|delete|tree` and the quota flags (cli_queues.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/format.h"
#include "client/testing/fake_client.h"
#include "protocol/model/queue_update.h"

namespace gpool {
namespace {

using client::testing::QueueCliTest;

// --- queue create|update|delete|tree -------------------------------------------------

TEST(QuotaFlagTest, ParsesEveryResource) {
  auto quota = ParseQuota("--capability", "gpu=16,gpu/A100=8,cpu=64,memory=256Gi");
  ASSERT_TRUE(quota.ok()) << quota.status().ToString();
  EXPECT_EQ(*quota, (Quota{{"gpu", 16}, {"gpu/A100", 8}, {"cpu", 64000}, {"memory", 262144}}));
  struct Case {
    std::string text;
    Quota want;
  };
  const std::vector<Case> cases = {
      {"cpu=0.5", {{"cpu", 500}}},
      {"cpu=1.25", {{"cpu", 1250}}},
      {"cpu=250m", {{"cpu", 250}}},
      {"memory=512", {{"memory", 512}}},  // a bare number is MiB
      {"memory=512Mi", {{"memory", 512}}},
      {"memory=1.5Gi", {{"memory", 1536}}},
      {"memory=2Ti", {{"memory", 2097152}}},
      {"gpu=0", {{"gpu", 0}}},
      {"gpu/H100-SXM5_80GB.v2=1", {{"gpu/H100-SXM5_80GB.v2", 1}}},
      {"none", {}},
  };
  for (const auto& c : cases) {
    auto parsed = ParseQuota("--deserved", c.text);
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.status().ToString();
    EXPECT_EQ(*parsed, c.want) << c.text;
  }
  // What the CLI prints reads back as the same quota.
  for (const Quota& q : {*quota, Quota{{"cpu", 500}, {"memory", 1536}}, Quota{{"memory", 100}}, Quota{}}) {
    auto again = ParseQuota("--capability", FormatQuota(q));
    ASSERT_TRUE(again.ok()) << FormatQuota(q);
    EXPECT_EQ(*again, q) << FormatQuota(q);
  }
}

TEST(QuotaFlagTest, ErrorsAreTypedAndNameTheFlag) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "--guarantee: expected RESOURCE=AMOUNT,... (e.g. gpu=16,cpu=64,memory=256Gi) or none"},
      {"gpu", "--guarantee: expected RESOURCE=AMOUNT, got 'gpu'"},
      {"=4", "--guarantee: expected RESOURCE=AMOUNT, got '=4'"},
      {"gpu=1,", "--guarantee: expected RESOURCE=AMOUNT, got ''"},
      {"gpu=1,,cpu=1", "--guarantee: expected RESOURCE=AMOUNT, got ''"},
      {"gpus=4", "--guarantee: unknown resource 'gpus' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)"},
      {"GPU=4", "--guarantee: unknown resource 'GPU' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)"},
      {"gpu/=4", "--guarantee: unknown resource 'gpu/' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)"},
      {"gpu/A 100=4", "--guarantee: unknown resource 'gpu/A 100' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)"},
      {"gpu=1.5", "--guarantee: gpu: expected a whole number of GPUs, got '1.5'"},
      {"gpu=-1", "--guarantee: gpu: expected a whole number of GPUs, got '-1'"},
      {"gpu=", "--guarantee: gpu: expected a whole number of GPUs, got ''"},
      {"gpu/A100=x", "--guarantee: gpu/A100: expected a whole number of GPUs, got 'x'"},
      {"gpu=18446744073709551616", "--guarantee: gpu: expected a whole number of GPUs, got '18446744073709551616'"},
      {"cpu=fast", "--guarantee: cpu: 'fast' is not a CPU count (use cores such as 2 or 0.5, or milli-cores such as 500m)"},
      {"cpu=0.0001", "--guarantee: cpu: '0.0001' is finer than 1/1000 of a core"},
      {"memory=lots", "--guarantee: memory: 'lots' is not a memory size (use MiB such as 4096, or a number with Ki, Mi, Gi, Ti, "
                     "Pi or K, M, G, T, P such as 80Gi)"},
      {"gpu=1,gpu=2", "--guarantee: gpu is given twice"},
  };
  for (const auto& c : cases) {
    auto parsed = ParseQuota("--guarantee", c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(parsed.status().message(), c.message) << c.text;
  }
  auto unit = ParseQuota("--guarantee", "memory=4XB");
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.status().message().rfind("--guarantee: memory: '4XB' is not a memory size", 0), 0u) << unit.status().message();
}

TEST_F(QueueCliTest, CreateSendsTheSpecAndPrintsItsQuotas) {
  ASSERT_EQ(Run({"queue", "create", "research", "--capability", "gpu=16,gpu/A100=8,cpu=64,memory=256Gi",
                 "--deserved", "gpu=8,cpu=0.5", "--guarantee", "gpu=4"}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(), "queue research created under root: capability gpu=16,gpu/A100=8,cpu=64,memory=256Gi; "
                        "deserved gpu=8,cpu=0.5; guarantee gpu=4\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->queue_updates.size(), 1u);
  const UpdateQueue& request = cluster_->queue_updates[0];
  EXPECT_EQ(request.op, QueueOp::kCreate);
  EXPECT_EQ(request.spec.name, "research");
  EXPECT_EQ(request.spec.parent, "root");
  EXPECT_EQ(request.spec.capability, (Quota{{"gpu", 16}, {"gpu/A100", 8}, {"cpu", 64000}, {"memory", 262144}}));
  EXPECT_EQ(request.spec.deserved, (Quota{{"gpu", 8}, {"cpu", 500}}));
  EXPECT_EQ(request.spec.guarantee, (Quota{{"gpu", 4}}));
  EXPECT_EQ(Spec("research"), request.spec);

  ASSERT_EQ(Run({"queue", "create", "vision", "--parent", "research"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue vision created under research: capability none; deserved none; guarantee none\n");
  EXPECT_EQ(Spec("vision").parent, "research");

  ASSERT_EQ(Run({"queue", "create", "--json", "nlp", "--deserved", "gpu=2"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["queue"]["spec"]["name"], "nlp");
  EXPECT_EQ(json["queue"]["spec"]["parent"], "root");
  EXPECT_EQ(json["queue"]["spec"]["deserved"]["gpu"], 2);
}

TEST_F(QueueCliTest, CreateErrors) {
  AddResearch();
  ExpectRejected({"queue", "create", "research"}, kExitError, "gpool: AlreadyExists: queue 'research' already exists\n",
                 /*sent=*/true);
  ExpectRejected({"queue", "create", "x", "--parent", "nowhere"}, kExitNotFound,
                 "gpool: NotFound: parent queue 'nowhere' does not exist\n", /*sent=*/true);
  // The coordinator's rules against the rest of the tree.
  ExpectRejected({"queue", "create", "x", "--parent", "research", "--capability", "gpu=32"}, kExitError,
                 "gpool: FailedPrecondition: capability gpu=32 of queue x is more than its parent research's 16\n",
                 true);
  uint64_t job = AddJob("j", JobState::kPending);
  cluster_->jobs[job].spec.queue = "default";
  ExpectRejected({"queue", "create", "x", "--parent", "default"}, kExitError,
                 "gpool: FailedPrecondition: queue 'default' has unfinished jobs (job 1); jobs run only in leaf "
                 "queues\n",
                 true);

  // Checked before anything is sent.
  ExpectRejected({"queue", "create", "default"}, kExitError, "gpool: AlreadyExists: queue default always exists\n");
  ExpectRejected({"queue", "create", "x", "--capability", "gpu=4", "--deserved", "gpu=8"}, kExitUsage,
                 "gpool: InvalidArgument: deserved gpu=8 is more than capability 4\n");
  ExpectRejected({"queue", "create", "x", "--deserved", "memory=1Gi", "--guarantee", "memory=2Gi"}, kExitUsage,
                 "gpool: InvalidArgument: guarantee memory=2048 is more than deserved 1024\n");
  ExpectRejected({"queue", "create", "x", "--capability", "gpus=4"}, kExitUsage,
                 "gpool: InvalidArgument: --capability: unknown resource 'gpus' (expected gpu, cpu, memory, gpu_memory or "
                 "gpu/<model>)\n");
  ExpectRejected({"queue", "create", "x", "--deserved", "cpu=lots"}, kExitUsage,
                 "gpool: InvalidArgument: --deserved: cpu: 'lots' is not a CPU count (use cores such as 2 or 0.5, or "
                 "milli-cores such as 500m)\n");
  ExpectRejected({"queue", "create", "a b"}, kExitUsage,
                 "gpool: InvalidArgument: queue: 'a b' may only contain letters, digits, '-', '_' and '.'\n");
  ExpectRejected({"queue", "create", "x", "--parent", "x"}, kExitUsage,
                 "gpool: InvalidArgument: parent: a queue cannot be its own parent\n");
  EXPECT_EQ(cluster_->queue_updates.size(), 4u);  // only the four the coordinator refused
}

TEST_F(QueueCliTest, UpdateReplacesOnlyTheQuotasGiven) {
  AddResearch();
  ASSERT_EQ(Run({"queue", "update", "research", "--deserved", "gpu=10,cpu=8"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue research updated: capability gpu=16,cpu=64; deserved gpu=10,cpu=8; guarantee gpu=4\n");
  EXPECT_EQ(cluster_->list_queues_calls, 1);
  ASSERT_EQ(cluster_->queue_updates.size(), 1u);
  const UpdateQueue& request = cluster_->queue_updates[0];
  EXPECT_EQ(request.op, QueueOp::kUpdate);
  EXPECT_EQ(request.spec.name, "research");
  EXPECT_EQ(request.spec.parent, "root");
  EXPECT_EQ(request.spec.capability, (Quota{{"gpu", 16}, {"cpu", 64000}}));
  EXPECT_EQ(request.spec.deserved, (Quota{{"gpu", 10}, {"cpu", 8000}}));
  EXPECT_EQ(request.spec.guarantee, (Quota{{"gpu", 4}}));
  EXPECT_EQ(Spec("research"), request.spec);

  // A flag replaces its whole quota; "none" clears it.
  ASSERT_EQ(Run({"queue", "update", "research", "--capability", "memory=1Ti", "--guarantee", "none"}), kExitOk)
      << err_.str();
  EXPECT_EQ(Spec("research").capability, (Quota{{"memory", 1048576}}));
  EXPECT_EQ(Spec("research").deserved, (Quota{{"gpu", 10}, {"cpu", 8000}}));
  EXPECT_TRUE(Spec("research").guarantee.empty());

  // A child keeps its parent.
  ASSERT_EQ(Run({"queue", "update", "vision", "--deserved", "gpu/A100=2", "--json"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->queue_updates.back().spec.parent, "research");
  EXPECT_EQ(nlohmann::json::parse(out_.str())["queue"]["spec"]["capability"]["gpu/A100"], 8);

  // root and default have quotas too.
  ASSERT_EQ(Run({"queue", "update", "root", "--capability", "gpu=32"}), kExitOk) << err_.str();
  EXPECT_EQ(Spec("root").capability, (Quota{{"gpu", 32}}));
  EXPECT_EQ(Spec("root").parent, "");
}

TEST_F(QueueCliTest, PoolsRestrictAQueueAndAnyLiftsIt) {
  AddResearch();
  ASSERT_EQ(Run({"queue", "create", "serving", "--pools", "public,pooled"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue serving created under root: capability none; deserved none; guarantee none; pools "
                        "public,pooled\n");
  EXPECT_EQ(Spec("serving").pools, (std::vector<std::string>{"public", "pooled"}));
  // An update of a quota keeps the pools; --pools any lifts them.
  ASSERT_EQ(Run({"queue", "update", "serving", "--deserved", "gpu=2"}), kExitOk) << err_.str();
  EXPECT_EQ(Spec("serving").pools, (std::vector<std::string>{"public", "pooled"}));
  ASSERT_EQ(Run({"queue", "update", "serving", "--pools", "any"}), kExitOk) << err_.str();
  EXPECT_TRUE(Spec("serving").pools.empty());
  const size_t sent = cluster_->queue_updates.size();
  ExpectRejected({"queue", "create", "x", "--pools", "gold"}, kExitUsage,
                 "gpool: InvalidArgument: --pools: 'gold' is not public, pooled or exclusive\n");
  EXPECT_EQ(cluster_->queue_updates.size(), sent);
}

TEST_F(QueueCliTest, PreemptionPolicyIsSetKeptAndChecked) {
  AddResearch();
  ASSERT_EQ(Run({"queue", "create", "serving", "--preempting-classes", "system", "--low-reclaimable", "false"}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(), "queue serving created under root: capability none; deserved none; guarantee none; "
                        "preempting classes system; low work not reclaimable\n");
  EXPECT_EQ(Spec("serving").preempting_classes, (std::vector<std::string>{"system"}));
  EXPECT_FALSE(Spec("serving").low_reclaimable);
  // An update of a quota keeps the policy; "none" lets no class preempt.
  ASSERT_EQ(Run({"queue", "update", "serving", "--deserved", "gpu=2"}), kExitOk) << err_.str();
  EXPECT_EQ(Spec("serving").preempting_classes, (std::vector<std::string>{"system"}));
  EXPECT_FALSE(Spec("serving").low_reclaimable);
  ASSERT_EQ(Run({"queue", "update", "serving", "--preempting-classes", "none", "--low-reclaimable", "true"}), kExitOk)
      << err_.str();
  EXPECT_TRUE(Spec("serving").preempting_classes.empty());
  EXPECT_TRUE(Spec("serving").low_reclaimable);
  // A queue created without the flags has the class rule's defaults.
  EXPECT_EQ(Spec("research").preempting_classes, (std::vector<std::string>{"high", "system"}));
  EXPECT_TRUE(Spec("research").low_reclaimable);
  const size_t sent = cluster_->queue_updates.size();
  ExpectRejected({"queue", "create", "x", "--preempting-classes", "medium"}, kExitUsage,
                 "gpool: InvalidArgument: preempting_classes: 'medium' work never preempts (only high and system "
                 "may; medium takes no part in preemption and low is what preemption takes)\n");
  ExpectRejected({"queue", "create", "x", "--preempting-classes", "urgent"}, kExitUsage,
                 "gpool: InvalidArgument: preempting_classes: 'urgent' is not system, high, medium or low\n");
  ExpectRejected({"queue", "create", "x", "--preempting-classes", "high,high"}, kExitUsage,
                 "gpool: InvalidArgument: preempting_classes: 'high' is listed twice\n");
  ExpectRejected({"queue", "update", "serving", "--low-reclaimable", "maybe"}, kExitUsage,
                 "gpool: InvalidArgument: --low-reclaimable: 'maybe' is not one of true, false\n");
  EXPECT_EQ(cluster_->queue_updates.size(), sent);
}

TEST_F(QueueCliTest, UpdateChecksTheResultBeforeSending) {
  AddResearch();
  // deserved gpu=8 stays, so capability gpu=6 would be below it.
  ExpectRejected({"queue", "update", "research", "--capability", "gpu=6"}, kExitUsage,
                 "gpool: InvalidArgument: queue research with this update: deserved gpu=8 is more than capability "
                 "6\n");
  EXPECT_EQ(cluster_->list_queues_calls, 1);
  ExpectRejected({"queue", "update", "nowhere", "--deserved", "gpu=1"}, kExitNotFound,
                 "gpool: NotFound: queue 'nowhere' does not exist\n");
  // Bad flags are found without asking the coordinator anything.
  ExpectRejected({"queue", "update", "research", "--guarantee", "gpu=9", "--deserved", "gpu=8"}, kExitUsage,
                 "gpool: InvalidArgument: guarantee gpu=9 is more than deserved 8\n");
  ExpectRejected({"queue", "update", "research", "--capability", "gpu=x"}, kExitUsage,
                 "gpool: InvalidArgument: --capability: gpu: expected a whole number of GPUs, got 'x'\n");
  EXPECT_EQ(cluster_->list_queues_calls, 2);
  EXPECT_TRUE(cluster_->queue_updates.empty());
  // The coordinator's rules against the rest of the tree: vision may hold 8 A100s.
  ExpectRejected({"queue", "update", "research", "--capability", "gpu=16,gpu/A100=4"}, kExitError,
                 "gpool: FailedPrecondition: capability gpu/A100=8 of queue vision is more than its parent "
                 "research's 4\n",
                 true);
  EXPECT_EQ(Spec("research").capability, (Quota{{"gpu", 16}, {"cpu", 64000}}));
}

TEST_F(QueueCliTest, Delete) {
  AddResearch();
  ExpectRejected({"queue", "delete", "research"}, kExitError,
                 "gpool: FailedPrecondition: queue 'research' has child queue 'vision'; delete it first\n", true);
  ASSERT_EQ(Run({"queue", "delete", "vision"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue vision deleted\n");
  EXPECT_EQ(cluster_->queue_updates.back().op, QueueOp::kDelete);
  EXPECT_EQ(cluster_->queue_updates.back().spec.name, "vision");
  EXPECT_FALSE(cluster_->queues.count("vision"));

  // Unfinished jobs keep a queue; finished ones do not.
  uint64_t job = AddJob("j", JobState::kRunning);
  cluster_->jobs[job].spec.queue = "research";
  ExpectRejected({"queue", "delete", "research"}, kExitError,
                 "gpool: FailedPrecondition: queue 'research' has unfinished job 1\n", true);
  cluster_->SetJobState(job, JobState::kSucceeded);
  ASSERT_EQ(Run({"queue", "delete", "research", "--json"}), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["queue"]["spec"]["name"], "research");
  EXPECT_FALSE(cluster_->queues.count("research"));

  ExpectRejected({"queue", "delete", "research"}, kExitNotFound,
                 "gpool: NotFound: queue 'research' does not exist\n", true);
  const size_t sent = cluster_->queue_updates.size();
  ExpectRejected({"queue", "delete", "default"}, kExitError,
                 "gpool: FailedPrecondition: queue default always exists and cannot be deleted\n");
  ExpectRejected({"queue", "delete", "root"}, kExitError,
                 "gpool: FailedPrecondition: queue root always exists and cannot be deleted\n");
  EXPECT_EQ(cluster_->queue_updates.size(), sent);
  EXPECT_EQ(cluster_->queues.size(), 2u);
}

TEST_F(QueueCliTest, TreeShowsTheHierarchy) {
  AddResearch();
  ASSERT_EQ(Run({"queue", "tree"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "QUEUE       GPU       GPU/A100  CPU        MEM(GiB)  PENDING  RUNNING\n"
            "root        0/-/-/-   0/-/-/-   0/-/-/-    0/-/-/-   0        0\n"
            "  default   0/-/-/-   0/-/-/-   0/-/-/-    0/-/-/-   0        0\n"
            "  research  6/8/4/16  0/-/-/-   12/-/-/64  64/-/-/-  2        1\n"
            "    vision  0/-/-/-   0/-/-/8   0/-/-/-    0/-/-/-   0        0\n"
            "(each resource: allocated/deserved/guarantee/capability; - = not set)\n");
  ASSERT_EQ(Run({"queue", "tree", "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  ASSERT_EQ(json["queues"].size(), 4u);
  EXPECT_EQ(json["queues"][0]["spec"]["name"], "root");
  EXPECT_EQ(json["queues"][1]["spec"]["name"], "default");
  EXPECT_EQ(json["queues"][2]["spec"]["name"], "research");
  EXPECT_EQ(json["queues"][3]["spec"]["name"], "vision");
  EXPECT_EQ(json["queues"][2]["allocated"]["memory"], 65536);
  EXPECT_TRUE(cluster_->queue_updates.empty());
}

TEST_F(QueueCliTest, UsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string create = " (usage: gpool queue create NAME [--parent P] [--capability QUOTA] [--deserved QUOTA] "
                             "[--guarantee QUOTA] [--pools POOLS] [--preempting-classes CLASSES] [--low-reclaimable "
                             "true|false])";
  const std::vector<Case> cases = {
      {{"queue"}, "queue: expected a subcommand: create, update, delete, tree, grant-class or revoke-class"},
      {{"queue", "list"},
       "queue: unknown subcommand 'list'; expected create, update, delete, tree, grant-class or revoke-class"},
      {{"queue", "grant-class", "research"},
       "queue grant-class: expected QUEUE and CLASS, got 1 arguments (usage: gpool queue grant-class QUEUE "
       "high|system)"},
      {{"queue", "revoke-class", "research", "high", "--capability", "gpu=1"},
       "--capability only applies to 'queue create' and 'queue update'"},
      {{"queue", "create"}, "queue create: expected one queue NAME, got 0 arguments" + create},
      {{"queue", "create", "a", "b"}, "queue create: expected one queue NAME, got 2 arguments" + create},
      {{"queue", "delete"}, "queue delete: expected one queue NAME, got 0 arguments (usage: gpool queue delete NAME)"},
      {{"queue", "tree", "x"}, "queue tree: takes no arguments (usage: gpool queue tree)"},
      {{"queue", "update", "research"},
       "queue update: nothing to change; give --capability, --deserved, --guarantee, --pools, --preempting-classes "
       "or --low-reclaimable (usage: gpool queue update NAME [--capability QUOTA] [--deserved QUOTA] [--guarantee "
       "QUOTA] [--pools POOLS] [--preempting-classes CLASSES] [--low-reclaimable true|false])"},
      {{"queue", "update", "research", "--parent", "x", "--deserved", "gpu=1"},
       "--parent only applies to 'queue create'"},
      {{"queue", "delete", "research", "--capability", "gpu=1"},
       "--capability only applies to 'queue create' and 'queue update'"},
      {{"queue", "tree", "--guarantee", "none"}, "--guarantee only applies to 'queue create' and 'queue update'"},
      {{"queue", "delete", "research", "--low-reclaimable", "false"},
       "--low-reclaimable only applies to 'queue create' and 'queue update'"},
  };
  for (const auto& c : cases) {
    ExpectRejected(c.args, kExitUsage, "gpool: InvalidArgument: " + c.message + "\nRun 'gpool --help' for usage.\n");
  }
  EXPECT_EQ(Run({"queue", "tree", "--bogus"}), kExitUsage);
  EXPECT_EQ(err_.str().rfind("gpool: InvalidArgument: queue: ", 0), 0u) << err_.str();
  EXPECT_EQ(clients_made_, 0);
}

// Issue 50: grant-class and revoke-class send the class, print what the
// queue holds after, and refuse a class that is not granted before sending.
TEST_F(QueueCliTest, GrantAndRevokeClass) {
  AddResearch();
  ASSERT_EQ(Run({"queue", "grant-class", "research", "high"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue research: class high granted (granted to it now: high)\n");
  ASSERT_FALSE(cluster_->queue_updates.empty());
  EXPECT_EQ(cluster_->queue_updates.back().op, QueueOp::kGrantClass);
  EXPECT_EQ(cluster_->queue_updates.back().priority_class, "high");
  ASSERT_EQ(Run({"queue", "grant-class", "research", "system"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue research: class system granted (granted to it now: high,system)\n");
  ASSERT_EQ(Run({"queue", "tree"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("PENDING  RUNNING  GRANTED\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("1        high,system\n"), std::string::npos) << out_.str();
  ASSERT_EQ(Run({"queue", "revoke-class", "research", "high", "--json"}), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["queue"]["granted_classes"], nlohmann::json::array({"system"}));

  const size_t sent = cluster_->queue_updates.size();
  ExpectRejected({"queue", "grant-class", "research", "medium"}, kExitUsage,
                 "gpool: InvalidArgument: class: medium is open to every queue; only high and system are granted "
                 "per queue\n");
  ExpectRejected({"queue", "grant-class", "research", "urgent"}, kExitUsage,
                 "gpool: InvalidArgument: class: 'urgent' is not system, high, medium or low\n");
  EXPECT_EQ(cluster_->queue_updates.size(), sent) << "refused before anything is sent";
}

TEST_F(QueueCliTest, CoordinatorErrorsMapToExitCodes) {
  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"queue", "tree"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: Unavailable: coordinator at tcp://x:1 did not answer within 5 ms\n");
  cluster_->fail_next = Status::NotLeader("no leader");
  EXPECT_EQ(Run({"queue", "create", "x"}), kExitUnavailable);
  cluster_->fail_next = Status::InvalidArgument("capability: children's deserved exceeds the parent's");
  EXPECT_EQ(Run({"queue", "create", "x"}), kExitUsage);
  // An update fails at its first call, the ListQueues.
  cluster_->fail_next = Status::Unauthenticated("bad token");
  EXPECT_EQ(Run({"queue", "update", "default", "--deserved", "gpu=1"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: Unauthenticated: bad token\n");
  // Injected failures come before the fake records a request: nothing was applied.
  EXPECT_TRUE(cluster_->queue_updates.empty());
  EXPECT_EQ(cluster_->list_queues_calls, 0);
  EXPECT_EQ(cluster_->queues.size(), 2u);
}

TEST_F(QueueCliTest, Help) {
  ASSERT_EQ(Run({"help", "queue"}), kExitOk);
  const std::string help = out_.str();
  for (const char* line :
       {"  gpool queue create NAME [--parent P] [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]\n",
        "  gpool queue update NAME [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]\n",
        "  gpool queue delete NAME\n", "  gpool queue tree\n", "--capability QUOTA", "--parent P"}) {
    EXPECT_NE(help.find(line), std::string::npos) << line << help;
  }
  ASSERT_EQ(Run({"queue", "create", "--help"}), kExitOk);
  EXPECT_EQ(out_.str(), help);
  ASSERT_EQ(Run({"--help"}), kExitOk);
  for (const char* line : {"\n  queue create NAME [--parent P] [QUOTAS]  ", "\n  queue update NAME [QUOTAS]  ",
                           "\n  queue delete NAME  ", "\n  queue tree  ", "\n  explain ID  ",
                           "\n  node taint NAME KEY=VALUE... KEY-...  "}) {
    EXPECT_NE(out_.str().find(line), std::string::npos) << line << out_.str();
  }
  EXPECT_EQ(clients_made_, 0);
}

}  // namespace
}  // namespace gpool
