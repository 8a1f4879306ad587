// Recovery from a snapshot plus the log after it: with a snapshot every few
// entries, a SIGKILLed coordinator comes back with every job, and keeps
// numbering jobs where it left off.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

TEST(RestartTest, RecoversFromSnapshotAndLogTailAfterSigkill) {
  LocalClusterOptions options;
  options.workers = 1;
  options.coordinator_flags = {"--heartbeat-ms", "200", "--snapshot-every", "3", "--snapshot-log-ratio", "0"};
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  cluster.StartWorkers();
  ASSERT_TRUE(WaitFor([&] { return cluster.AllNodesReady(); }, 30s));

  ClientOptions client_options;
  client_options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(client_options);
  auto client = Client::Connect(client_options);
  ASSERT_TRUE(client.ok());
  std::vector<uint64_t> ids;
  for (int i = 0; i < 7; ++i) {
    JobSpec spec;
    spec.name = "job-" + std::to_string(i);
    TaskGroupSpec group;
    group.command = {"sh", "-c", "exit " + std::to_string(i % 2)};
    group.resources.gpus = 1;
    spec.tasks.push_back(group);
    auto submitted = (*client)->Submit(spec, "");
    ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
    ids.push_back(submitted->job_id);
  }
  auto all_finished = [&] {
    auto jobs = (*client)->ListJobs(false, 0);
    return jobs.ok() && jobs->jobs.empty();
  };
  ASSERT_TRUE(WaitFor(all_finished, 30s));
  auto before = (*client)->ListJobs(true, 0);
  ASSERT_TRUE(before.ok());
  ASSERT_NE(cluster.coordinator()->Log().find("snapshot saved"), std::string::npos);

  cluster.KillCoordinator();
  cluster.StartCoordinator();
  EXPECT_NE(cluster.coordinator()->Log().find("state recovered snapshot_index="), std::string::npos);

  auto after = (*client)->ListJobs(true, 0);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ASSERT_EQ(after->jobs.size(), before->jobs.size());
  for (size_t i = 0; i < after->jobs.size(); ++i) {
    EXPECT_EQ(after->jobs[i].job_id, before->jobs[i].job_id);
    EXPECT_EQ(after->jobs[i].state, before->jobs[i].state);
    EXPECT_EQ(after->jobs[i].finish_ms, before->jobs[i].finish_ms);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    auto job = (*client)->GetJob(JobId(ids[i]));
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->summary.state, i % 2 == 0 ? "Succeeded" : "Failed") << "job " << ids[i];
  }
  JobSpec next;
  next.name = "next";
  next.tasks.push_back(TaskGroupSpec{.command = {"true"}});
  auto submitted = (*client)->Submit(next, "");
  ASSERT_TRUE(submitted.ok());
  EXPECT_EQ(submitted->job_id, ids.back() + 1);
}

}  // namespace
}  // namespace gpool::testing

namespace gpool::testing {
namespace {

// SIGTERM is how operators and systemd stop processes: both must exit 0.
TEST(ShutdownTest, SigtermStopsCoordinatorAndWorkerCleanly) {
  LocalClusterOptions options;
  options.workers = 1;
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  cluster.StartWorkers();
  ASSERT_TRUE(WaitFor([&] { return cluster.AllNodesReady(); }, 30s));
  int worker_status = cluster.worker(0)->Stop(SIGTERM);
  ASSERT_TRUE(WIFEXITED(worker_status)) << cluster.worker(0)->Log();
  EXPECT_EQ(WEXITSTATUS(worker_status), 0);
  int coordinator_status = cluster.coordinator()->Stop(SIGTERM);
  ASSERT_TRUE(WIFEXITED(coordinator_status)) << cluster.coordinator()->Log();
  EXPECT_EQ(WEXITSTATUS(coordinator_status), 0) << cluster.coordinator()->Log();
  EXPECT_NE(cluster.coordinator()->Log().find("coordinator stopping"), std::string::npos);
}

}  // namespace
}  // namespace gpool::testing
