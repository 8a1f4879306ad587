// A planned stop of the leading coordinator (issue 49): SIGTERM makes the
// leader hand leadership to a caught-up follower (Raft's TimeoutNow) before
// it exits, so the cluster has a new leader long before any follower's
// election timeout could have fired, and nothing acknowledged is lost.
//
// Three real replicas, no workers. The election timeout is set long (2-4 s)
// so the test discriminates: a new leader within 1.6 s of the SIGTERM can
// only come from the handover, and a loaded CI box is far from stalling a
// heartbeat for 2 s, so no election nobody asked for moves the leader first.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <string>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;
using HandoverClock = std::chrono::steady_clock;

constexpr int kHandoverReplicas = 3;
constexpr int kHandoverElectionTimeoutMs = 2000;

std::unique_ptr<Client> HandoverClient(const LocalCluster& cluster, int timeout_ms) {
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(options);
  options.timeout_ms = timeout_ms;
  options.connect_timeout_ms = 200;
  options.retries = 20;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(client).value();
}

// The serving leader's index (replica id - 1) and term, or -1.
struct LeaderSeen {
  int index = -1;
  uint64_t term = 0;
};

LeaderSeen SeeLeader(Client& client) {
  auto status = client.ClusterStatus();
  if (!status.ok() || status->role != "leader") return {};
  return {std::atoi(status->replica_id.c_str()) - 1, status->term};
}

// Three replicas, no workers, a long election timeout (so a handover that
// waited one out would show).
LocalClusterOptions HandoverClusterOptions() {
  LocalClusterOptions options;
  options.coordinators = kHandoverReplicas;
  options.workers = 0;
  options.coordinator_flags = {"--heartbeat-ms", "200", "--node-timeout-ms", "3000", "--election-timeout-ms",
                               std::to_string(kHandoverElectionTimeoutMs)};
  return options;
}

TEST(LeaderHandoverTest, ASigtermedLeaderHandsOverWithoutWaitingOutAnElectionTimeout) {
  LocalCluster cluster(HandoverClusterOptions());
  cluster.StartCoordinator();
  auto client = HandoverClient(cluster, 1000);

  LeaderSeen old;
  ASSERT_TRUE(WaitFor([&] { return (old = SeeLeader(*client)).index >= 0; }, 30s)) << "no leader";
  // Something committed in the leader's term, so its followers hold its log
  // (and the acknowledgement must survive the handover).
  auto submitted = client->Submit(ShellJob("before-stop", 0, "true"), "key-before-stop");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();

  const auto stopped_at = HandoverClock::now();
  cluster.coordinator(old.index)->Signal(SIGTERM);
  LeaderSeen next;
  ASSERT_TRUE(WaitFor(
      [&] {
        next = SeeLeader(*client);
        return next.index >= 0 && next.index != old.index;
      },
      std::chrono::milliseconds(kHandoverElectionTimeoutMs * 5 / 6)))
      << "no new leader within " << kHandoverElectionTimeoutMs * 5 / 6 << " ms of the SIGTERM, less than the "
      << kHandoverElectionTimeoutMs << " ms election timeout; the old leader's log:\n"
      << cluster.coordinator(old.index)->Log();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(HandoverClock::now() - stopped_at);
  std::cout << "replica " << next.index + 1 << " leads term " << next.term << " " << took.count()
            << " ms after replica " << old.index + 1 << " (term " << old.term << ") got SIGTERM\n";

  // The old leader exits cleanly (status 0) once it has handed over.
  const int status = cluster.coordinator(old.index)->Stop(SIGTERM, 10s);
  ASSERT_TRUE(WIFEXITED(status)) << "wait status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string old_log = cluster.coordinator(old.index)->Log();
  EXPECT_NE(old_log.find("handing leadership over first to=" + std::to_string(next.index + 1)), std::string::npos)
      << old_log;
  EXPECT_NE(old_log.find("leadership handed over leader=" + std::to_string(next.index + 1)), std::string::npos)
      << old_log;

  // One election, started by TimeoutNow: the term moved by exactly one and the
  // new leader never went through pre-vote (which an election timeout starts).
  EXPECT_EQ(next.term, old.term + 1);
  const std::string next_log = cluster.coordinator(next.index)->Log();
  EXPECT_EQ(next_log.find("role=precandidate"), std::string::npos) << next_log;

  // Nothing acknowledged was lost; the cluster of two keeps committing.
  auto job = client->GetJob(JobId(submitted->job_id));
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  auto after = client->Submit(ShellJob("after-stop", 0, "true"), "key-after-stop");
  EXPECT_TRUE(after.ok()) << after.status().ToString();
}

// A follower stopped with SIGTERM has nothing to hand over: it exits at once
// and the leader keeps its term.
TEST(LeaderHandoverTest, ASigtermedFollowerExitsWithoutAnElection) {
  LocalCluster cluster(HandoverClusterOptions());
  cluster.StartCoordinator();
  auto client = HandoverClient(cluster, 1000);
  LeaderSeen leader;
  ASSERT_TRUE(WaitFor([&] { return (leader = SeeLeader(*client)).index >= 0; }, 30s)) << "no leader";
  const int follower = (leader.index + 1) % kHandoverReplicas;

  const int status = cluster.coordinator(follower)->Stop(SIGTERM, 10s);
  ASSERT_TRUE(WIFEXITED(status)) << "wait status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(cluster.coordinator(follower)->Log().find("handing leadership over"), std::string::npos);
  const LeaderSeen after = SeeLeader(*client);
  EXPECT_EQ(after.index, leader.index);
  EXPECT_EQ(after.term, leader.term);
}

}  // namespace
}  // namespace gpool::testing
