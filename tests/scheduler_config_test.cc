// The scheduler config file on a real coordinator: validated at start, and
// re-read on SIGHUP, where a file that does not parse changes nothing.
#include <gtest/gtest.h>

#include <csignal>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

JobSpec ClassJob(const std::string& name, const std::string& cls) {
  JobSpec spec = ShellJob(name, 2, "sleep 600");
  spec.priority_class = cls;
  return spec;
}

TEST(SchedulerConfigTest, SighupReloadsThePolicyAndABadFileChangesNothing) {
  TempDir dir;
  const std::string config = dir.Join("scheduler.conf");
  WriteFile(config, "# no preemption yet\nactions = enqueue, allocate, backfill\n");
  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 2;
  options.coordinator_flags.insert(options.coordinator_flags.end(), {"--scheduler-config", config});
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));

  auto low = client->Submit(ClassJob("low", "low"), "");
  ASSERT_TRUE(low.ok()) << low.status().ToString();
  auto job_of = [&](uint64_t id) { return client->GetJob(JobId(id)); };
  // The job reads Running as soon as it is bound; its task reads Running only
  // once the worker reports the process started, which is what we check below.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto j = job_of(low->job_id);
        return j.ok() && j->summary.state == "Running" && !j->tasks.empty() && j->tasks[0].state == "Running";
      },
      20s));
  auto high = client->Submit(ClassJob("high", "high"), "");
  ASSERT_TRUE(high.ok()) << high.status().ToString();
  // A cycle has run (the high job has its reasons) and, without the preempt
  // action, evicted nothing.
  ASSERT_TRUE(WaitFor([&] { auto j = job_of(high->job_id); return j.ok() && !j->reasons.empty(); }, 20s));
  auto before = job_of(low->job_id);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->tasks[0].state, "Running");
  EXPECT_EQ(before->tasks[0].attempt, 0u);

  WriteFile(config, "actions = enqueue, allocate, fly\n");
  cluster.coordinator()->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return cluster.coordinator()->Log().find("scheduler config reload refused") != std::string::npos; }, 10s))
      << cluster.coordinator()->Log();
  EXPECT_NE(cluster.coordinator()->Log().find("line 1: actions: unknown action 'fly'"), std::string::npos)
      << cluster.coordinator()->Log();
  EXPECT_TRUE(cluster.coordinator()->Running());
  auto unchanged = job_of(low->job_id);
  ASSERT_TRUE(unchanged.ok());
  EXPECT_EQ(unchanged->tasks[0].state, "Running");

  WriteFile(config, "actions = enqueue, allocate, backfill, preempt, reclaim\n");
  cluster.coordinator()->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return cluster.coordinator()->Log().find("scheduler config reloaded") != std::string::npos; }, 10s))
      << cluster.coordinator()->Log();
  // Now the high job preempts the low one.
  EXPECT_TRUE(WaitFor([&] { auto j = job_of(high->job_id); return j.ok() && j->summary.state == "Running"; }, 20s))
      << cluster.Cli({"job", std::to_string(high->job_id)}).out;
  auto after = job_of(low->job_id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->tasks[0].attempt, 1u) << cluster.Cli({"job", std::to_string(low->job_id)}).out;
}

TEST(SchedulerConfigTest, ABadFileIsRefusedAtStartNamingTheLine) {
  TempDir dir;
  const std::string config = dir.Join("scheduler.conf");
  WriteFile(config, "[nodeorder]\nstrategy = fastest\n");
  auto result = RunCommand({GPOOL_COORDINATOR_BIN, "--data-dir", dir.Join("data"), "--client-addr",
                            "tcp://127.0.0.1:0", "--worker-addr", "tcp://127.0.0.1:0", "--scheduler-config", config});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("line 2: [nodeorder] strategy: unknown placement strategy 'fastest'"), std::string::npos)
      << result.err;
  auto missing = RunCommand({GPOOL_COORDINATOR_BIN, "--data-dir", dir.Join("data"), "--scheduler-config",
                             dir.Join("nope.conf")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.conf"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gpool::testing
