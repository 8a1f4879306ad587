// Replica key rotation without downtime (issue 48), on a real three-replica
// CurveZMQ cluster with a worker: an admin rotates a follower's key with a
// grace (`gpool admin replica rotate-key ID --replica-key new.pub --grace`);
// the follower, restarted on the new key with its data dir, rejoins as the
// same id and the leader reaches it (a write committed afterwards is applied
// there); the worker stays Ready and a job submitted afterwards runs; once
// the grace has ended the old key is refused on the peer port.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/security/handshake_probe.h"
#include "protocol/security/keys.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kRotationGraceMs = 8000;

int64_t RotationWallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

security::Handshake PeerHandshake(LocalCluster& cluster, int replica, const std::string& key_name,
                                  const std::string& server_key_name) {
  zmq::context_t context(1);
  auto own = security::ReadSecretKeyFile(cluster.SecretKeyFile(key_name));
  auto server = security::ReadPublicKeyFile(cluster.PublicKeyFile(server_key_name));
  EXPECT_TRUE(own.ok() && server.ok());
  if (!own.ok() || !server.ok()) return security::Handshake::kFailed;
  auto outcome = security::ProbeHandshake(context, cluster.peer_endpoint(replica), *own, *server, 10'000);
  EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
  return outcome.ok() ? *outcome : security::Handshake::kFailed;
}

TEST(ReplicaKeyRotation, ARotatedReplicaRejoinsOnItsNewKeyAndTheOldIsRefusedAfterTheGrace) {
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 1;
  LocalCluster cluster(options);
  std::unique_ptr<Client> any;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, any));
  int leader = -1;
  ASSERT_TRUE(WaitFor([&] { return (leader = LeaderIndex(*any)) >= 0; }, 20s));
  // The follower with the highest index is rotated; the test's client talks
  // to the other two, whose keys do not change.
  const int rotated = leader == 2 ? 1 : 2;
  const int other = 3 - leader - rotated;
  const std::string id = std::to_string(rotated + 1);
  ClientOptions client_options;
  client_options.endpoints = cluster.client_endpoint(leader) + "," + cluster.client_endpoint(other);
  cluster.SecureClient(client_options);
  client_options.timeout_ms = 3000;
  auto connected = Client::Connect(client_options);
  ASSERT_TRUE(connected.ok()) << connected.status().ToString();
  std::unique_ptr<Client> client = std::move(connected).value();

  const std::string new_name = "replica-" + id + "-new";
  const std::string new_pub = cluster.PublicKeyFile(new_name);
  const std::string old_pub = cluster.PublicKeyFile("replica-" + id);
  // Refusals first: each is typed and changes nothing.
  CommandResult same = cluster.Cli({"admin", "replica", "rotate-key", id, "--replica-key", old_pub});
  EXPECT_NE(same.exit_code, 0);
  EXPECT_NE(same.err.find("AlreadyExists"), std::string::npos) << same.err;
  CommandResult unknown = cluster.Cli({"admin", "replica", "rotate-key", "9", "--replica-key", new_pub});
  EXPECT_NE(unknown.err.find("NotFound"), std::string::npos) << unknown.err;
  CommandResult too_long =
      cluster.Cli({"admin", "replica", "rotate-key", id, "--replica-key", new_pub, "--grace", "745h"});
  EXPECT_NE(too_long.err.find("InvalidArgument"), std::string::npos) << too_long.err;
  // Nothing changed: the old key is still the replica's on the leader's peer port.
  EXPECT_EQ(PeerHandshake(cluster, leader, "replica-" + id, "replica-" + std::to_string(leader + 1)),
            security::Handshake::kAdmitted);
  EXPECT_EQ(PeerHandshake(cluster, leader, new_name, "replica-" + std::to_string(leader + 1)),
            security::Handshake::kRefused);

  const int64_t rotated_ms = RotationWallMs();
  CommandResult rotate = cluster.Cli({"admin", "replica", "rotate-key", id, "--replica-key", new_pub, "--grace",
                                      std::to_string(kRotationGraceMs / 1000) + "s"});
  ASSERT_EQ(rotate.exit_code, 0) << rotate.err;
  EXPECT_NE(rotate.out.find("still admitted"), std::string::npos) << rotate.out;
  // During the grace both keys are the replica on every peer port.
  EXPECT_EQ(PeerHandshake(cluster, leader, "replica-" + id, "replica-" + std::to_string(leader + 1)),
            security::Handshake::kAdmitted);
  // (The other follower applies the entry within a heartbeat of the leader.)
  EXPECT_TRUE(WaitFor([&] {
    return PeerHandshake(cluster, other, new_name, "replica-" + std::to_string(other + 1)) ==
           security::Handshake::kAdmitted;
  }, 5s));
  // The audit records the rotation with its grace.
  CommandResult audit = cluster.Cli({"audit", "--json"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  EXPECT_NE(audit.out.find("replica " + id + " key-rotation grace_ms=" + std::to_string(kRotationGraceMs)),
            std::string::npos)
      << audit.out;

  // Restart it on the new key, with its data dir: same id, no removal.
  cluster.KillReplica(rotated);
  cluster.SetReplicaKeyName(rotated, new_name);
  cluster.StartReplica(rotated);

  // A write committed after the restart reaches it: the leader's transport
  // found it under its new key.
  JobSpec spec = ShellJob("after-rotation", 1, "true");
  auto submitted = client->Submit(spec, "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  auto leader_status = client->ClusterStatus();
  ASSERT_TRUE(leader_status.ok());
  const uint64_t written = leader_status->commit_index;
  // Followers redirect every request but ClusterStatus-without-a-leader to
  // the leader, so the leader's view says how far the rotated replica got:
  // a follower again, holding the entry committed after its restart.
  std::string seen;
  const auto rotated_reached = [&](uint64_t index) {
    auto status = client->ClusterStatus();
    if (!status.ok()) return false;
    for (const auto& replica : status->replicas) {
      if (replica.id != id) continue;
      seen = replica.role + " match " + std::to_string(replica.match_index);
      return replica.role == "follower" && replica.match_index >= index;
    }
    return false;
  };
  ASSERT_TRUE(WaitFor([&] { return rotated_reached(written); }, 20s))
      << "want match >= " << written << ", last seen: " << seen << "\n"
      << cluster.Cli({"admin", "replica", "list"}).out;
  // Its client port serves the new key now (what workers and users pin).
  {
    zmq::context_t context(1);
    auto admin = security::ReadSecretKeyFile(cluster.SecretKeyFile("admin"));
    auto served = security::ReadPublicKeyFile(new_pub);
    ASSERT_TRUE(admin.ok() && served.ok());
    auto handshake = security::ProbeHandshake(context, cluster.client_endpoint(rotated), *admin, *served, 10'000);
    ASSERT_TRUE(handshake.ok()) << handshake.status().ToString();
    EXPECT_EQ(*handshake, security::Handshake::kAdmitted);
  }

  // The worker stayed Ready and the job ran.
  EXPECT_TRUE(cluster.AllNodesReady()) << cluster.Cli({"nodes"}).out;
  ASSERT_TRUE(WaitFor([&] {
    auto job = client->GetJob(JobId(submitted->job_id));
    return job.ok() && job->summary.state == "Succeeded";
  }, 30s)) << cluster.Cli({"job", std::to_string(submitted->job_id)}).out;

  // After the grace the old key is no longer the replica on the peer port.
  ASSERT_TRUE(WaitFor([&] { return RotationWallMs() > rotated_ms + kRotationGraceMs + 500; }, 30s));
  EXPECT_EQ(PeerHandshake(cluster, leader, "replica-" + id, "replica-" + std::to_string(leader + 1)),
            security::Handshake::kRefused);
  EXPECT_EQ(PeerHandshake(cluster, other, "replica-" + id, "replica-" + std::to_string(other + 1)),
            security::Handshake::kRefused);
  EXPECT_EQ(PeerHandshake(cluster, leader, new_name, "replica-" + std::to_string(leader + 1)),
            security::Handshake::kAdmitted);
  // And replication still reaches it.
  auto second = client->Submit(ShellJob("after-grace", 1, "true"), "");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto later = client->ClusterStatus();
  ASSERT_TRUE(later.ok());
  ASSERT_TRUE(WaitFor([&] { return rotated_reached(later->commit_index); }, 20s)) << seen;
}

}  // namespace
}  // namespace gpool::testing
