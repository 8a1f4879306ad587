// Snapshots off the loop (issue 49), on a real coordinator: while the
// snapshot's child is held up the coordinator goes on committing and
// answering; a killed child is retried; the snapshot saved by the retry is
// the one the coordinator recovers from after a SIGKILL.
//
// The child is held up without any hook in the coordinator: its image file
// ("snapshot-<coordinator pid>-<n>.tmp" in the data dir, snapshot_fork.h) is
// made a FIFO before the first snapshot, so the child blocks opening it for
// writing until the test kills it.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

// 'R', 'S', 'Z', ... of /proc/<pid>/stat; 0 when there is no such process.
char SnapshotChildState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? 0 : text[paren + 2];
}

TEST(SnapshotLoopTest, TheCoordinatorServesWhileTheSnapshotChildIsHeldAndRetriesAKilledOne) {
  LocalClusterOptions options;
  options.workers = 0;
  options.coordinator_flags = {"--heartbeat-ms", "200", "--snapshot-every", "3", "--snapshot-log-ratio", "0"};
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  const pid_t coordinator = cluster.coordinator()->pid();
  const std::filesystem::path fifo = std::filesystem::path(cluster.ReplicaDataDir(0)) /
                                     ("snapshot-" + std::to_string(coordinator) + "-1.tmp");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << fifo;

  ClientOptions client_options;
  client_options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(client_options);
  auto client = Client::Connect(client_options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  int submitted = 0;
  auto submit = [&] {
    auto job = (*client)->Submit(ShellJob("job-" + std::to_string(submitted), 1, "true"), "");
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    ++submitted;
  };
  // Enough entries that a snapshot is due: its child blocks on the FIFO.
  for (int i = 0; i < 4; ++i) submit();
  std::string log;  // outlives `started`, which points into it
  std::smatch started;
  const std::regex started_line("snapshot started index=\\d+ pid=(\\d+)");
  ASSERT_TRUE(WaitFor(
      [&] {
        log = cluster.coordinator()->Log();
        return std::regex_search(log, started, started_line);
      },
      30s))
      << cluster.coordinator()->Log();
  const pid_t child = static_cast<pid_t>(std::stol(started[1].str()));
  ASSERT_NE(SnapshotChildState(child), 0);

  // The loop commits and answers while the child is held.
  for (int i = 0; i < 20; ++i) submit();
  auto jobs = (*client)->ListJobs(true, 0);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ(jobs->jobs.size(), static_cast<size_t>(submitted));
  const char held = SnapshotChildState(child);
  EXPECT_TRUE(held != 0 && held != 'Z') << "the child was to be blocked on the FIFO, state " << held;
  EXPECT_EQ(cluster.coordinator()->Log().find("snapshot saved"), std::string::npos);

  // Killed: reported, its file removed, and retried with a new one.
  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return cluster.coordinator()->Log().find("killed by signal 9") != std::string::npos; },
                      30s))
      << cluster.coordinator()->Log();
  ASSERT_TRUE(WaitFor([&] { return cluster.coordinator()->Log().find("snapshot saved") != std::string::npos; }, 30s))
      << cluster.coordinator()->Log();
  EXPECT_FALSE(std::filesystem::exists(fifo));

  cluster.KillCoordinator();
  cluster.StartCoordinator();
  EXPECT_NE(cluster.coordinator()->Log().find("state recovered snapshot_index="), std::string::npos);
  auto after = (*client)->ListJobs(true, 0);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->jobs.size(), static_cast<size_t>(submitted));
}

}  // namespace
}  // namespace gpool::testing
