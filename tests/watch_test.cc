// The watch API end to end (issue 35): a watcher follows a job on a
// 3-replica coordinator while the leader is killed, and sees every state of
// the job once, in order; `gpool wait` follows a job by push and shows its
// progress; `gpool events --follow` prints an event as it is committed.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "client/client.h"
#include "client/watcher.h"
#include "protocol/messages_client.h"
#include "protocol/messages_watch.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

TEST(WatchTest, AWatcherSeesEveryStateOnceAcrossALeaderKill) {
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 1;
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));
  // A second client for the watcher: its connection carries the watch.
  ClientOptions watch_options;
  watch_options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(watch_options);
  watch_options.timeout_ms = 2000;
  auto watch_client = Client::Connect(watch_options);
  ASSERT_TRUE(watch_client.ok());

  // The node is cordoned until the watch has the job Pending, so the job
  // cannot start before it is watched.
  ASSERT_EQ(cluster.Cli({"node", "cordon", cluster.NodeName(0)}).exit_code, 0);
  auto submitted = client->Submit(ShellJob("follow-me", 1, "sleep 6"), "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  Watch request;
  request.topic = "job";
  request.key = std::to_string(submitted->job_id);
  Watcher watcher(**watch_client, request, /*renew_every=*/1s);
  auto first = watcher.Next(10s);
  ASSERT_TRUE(first.ok() && first->has_value()) << (first.ok() ? "nothing" : first.status().ToString());
  std::vector<std::string> states;  // every summary's state, in the order seen
  for (const JobSummary& job : (*first)->items.jobs) states.push_back(job.state);
  ASSERT_EQ(cluster.Cli({"node", "uncordon", cluster.NodeName(0)}).exit_code, 0);

  bool killed = false;
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  while (states.empty() || states.back() != "Succeeded") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "states so far: " << ::testing::PrintToString(states);
    auto batch = watcher.Next(1s);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (!batch->has_value()) continue;
    for (const JobSummary& job : (*batch)->items.jobs) states.push_back(job.state);
    if (!killed && !states.empty() && states.back() == "Running") {
      const int leader = LeaderIndex(*client);
      ASSERT_GE(leader, 0);
      cluster.KillReplica(leader);
      killed = true;
    }
  }
  ASSERT_TRUE(killed);
  EXPECT_GE(watcher.reopened(), 1u) << "the watch was never re-opened: the leader kill was not crossed";
  // Each state once, in order (summaries within a state differ in other
  // fields, but a state never comes back).
  std::vector<std::string> distinct;
  for (const auto& state : states) {
    if (distinct.empty() || distinct.back() != state) distinct.push_back(state);
  }
  EXPECT_EQ(distinct, (std::vector<std::string>{"Pending", "Running", "Succeeded"}))
      << ::testing::PrintToString(states);
}

TEST(WatchTest, TheCliWaitsAndFollowsByPush) {
  LocalClusterOptions options;
  options.workers = 1;
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));
  auto submitted = client->Submit(ShellJob("short", 1, "sleep 1"), "");
  ASSERT_TRUE(submitted.ok());
  const CommandResult waited = cluster.Cli({"wait", std::to_string(submitted->job_id), "--timeout", "60"});
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_EQ(waited.out, "job " + std::to_string(submitted->job_id) + " Succeeded\n");
  EXPECT_NE(waited.err.find("job " + std::to_string(submitted->job_id) + ": Running (1/1 tasks running)"),
            std::string::npos)
      << waited.err;

  // An uncordon committed while `gpool events --follow` runs is printed by
  // it, after the listing of what was there (the cordon before it).
  ASSERT_EQ(cluster.Cli({"node", "cordon", cluster.NodeName(0)}).exit_code, 0);
  Process follower("follow",
                   [&] {
                     std::vector<std::string> argv = {GPOOL_CLI_BIN, "--coordinator", cluster.client_endpoint()};
                     for (auto& arg : cluster.CliSecurityArgs()) argv.push_back(arg);
                     for (const char* arg : {"events", "--follow", "--timeout", "30"}) argv.push_back(arg);
                     return argv;
                   }(),
                   cluster.dir() + "/follow.log");
  // An uncordon committed between its listing and its watch is replayed
  // to it all the same, so this only waits for the listing.
  ASSERT_TRUE(WaitFor([&] { return follower.Log().find("node-cordoned") != std::string::npos; }, 20s))
      << follower.Log();
  ASSERT_EQ(cluster.Cli({"node", "uncordon", cluster.NodeName(0)}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return follower.Log().find("node-uncordoned") != std::string::npos; }, 20s))
      << follower.Log();
}

}  // namespace
}  // namespace gpool::testing
