// The replicated control plane cannot be wedged by its peers' numbers or
// lose its quorum to a mistaken membership change (issue 29), over three
// real coordinator processes on 127.0.0.1:
//   - forged Raft frames with term 2^64-1 (which once wedged a cluster for
//     good) and fifty forged higher-term heartbeats (which once caused 56
//     leader changes), sent under a member replica's own key, leave it
//     electing and committing;
//   - adding replicas whose addresses do not answer is refused and changes
//     nothing; removing a voter while another is down is refused unless
//     forced.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "client/client.h"
#include "control/raft/config.h"
#include "control/raft/messages.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kSafetyReplicas = 3;

LocalClusterOptions SafetyClusterOptions() {
  LocalClusterOptions options;
  options.coordinators = kSafetyReplicas;
  options.workers = 0;
  // Elections after 1-2 s of silence: a loaded CI box must not elect anew
  // on its own while the test counts leader changes.
  options.coordinator_flags = {"--heartbeat-ms", "200", "--election-timeout-ms", "1000"};
  return options;
}

class ReplicaSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.StartCoordinator();
    ClientOptions options;
    options.endpoints = cluster_.client_endpoint();
    cluster_.SecureClient(options);
    options.timeout_ms = 2000;
    options.connect_timeout_ms = 200;
    options.retries = 40;
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    ASSERT_GE(AwaitLeader(), 0);
  }

  Result<ClusterStatusReply> Status() { return client_->ClusterStatus(); }

  int AwaitLeader() {
    int leader = -1;
    EXPECT_TRUE(WaitFor(
        [&] {
          auto status = Status();
          leader = status.ok() && status->role == "leader" ? std::stoi(status->replica_id) - 1 : -1;
          return leader >= 0;
        },
        20s));
    return leader;
  }

  // Sends raw Raft frames to replica `index`'s peer port over a connection
  // authenticated with replica `as`'s own key pair: what a compromised or
  // buggy replica of the configuration could send (anyone else is refused at
  // the handshake, CurveZap.PeerNotInTheConfigurationIsRefused).
  void SendFrames(int index, uint64_t as, const std::vector<raft::Message>& messages) {
    zmq::socket_t socket(context_, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 2000);
    // A refused or slow handshake must not block the test: frames that
    // cannot be queued within a second are dropped, and the assertions below
    // then fail on the counts instead of hanging.
    socket.set(zmq::sockopt::sndtimeo, 1000);
    cluster_.SecureSocket(socket, "replica-" + std::to_string(as), index);
    socket.connect(cluster_.peer_endpoint(index));
    for (const auto& m : messages) {
      const std::string bytes = raft::EncodeMessage(m);
      sent_ += socket.send(zmq::buffer(bytes), zmq::send_flags::none).has_value();
    }
    socket.close();  // linger: the frames go out first
  }

  int SubmitMany(const std::string& prefix, int n) {
    int ok = 0;
    for (int i = 0; i < n; ++i) {
      auto reply = client_->Submit(ShellJob(prefix + std::to_string(i), 0, "true"), prefix + std::to_string(i));
      ok += reply.ok();
    }
    return ok;
  }

  LocalCluster cluster_{SafetyClusterOptions()};
  std::unique_ptr<Client> client_;
  zmq::context_t context_;
  size_t sent_ = 0;
};

raft::Message ForgedFrame(raft::MessageType type, uint64_t from, uint64_t to, uint64_t term) {
  raft::Message m;
  m.type = type;
  m.from = from;
  m.to = to;
  m.term = term;
  return m;
}

TEST_F(ReplicaSafetyTest, ForgedMaximalAndHigherTermFramesLeaveTheClusterElectingAndCommitting) {
  auto before = Status();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  const uint64_t term = before->term;
  const std::string leader_id = before->replica_id;
  size_t forged = 0;
  for (int i = 0; i < kSafetyReplicas; ++i) {
    const uint64_t to = static_cast<uint64_t>(i + 1);
    const uint64_t from = to == 1 ? 2 : 1;
    std::vector<raft::Message> frames;
    for (auto type : {raft::MessageType::kHeartbeat, raft::MessageType::kVote, raft::MessageType::kPreVote,
                      raft::MessageType::kAppend, raft::MessageType::kAppendResponse}) {
      frames.push_back(ForgedFrame(type, from, to, UINT64_MAX));
      frames.push_back(ForgedFrame(type, from, to, raft::kMaxTerm + 1));
    }
    SendFrames(i, from, frames);
    forged += frames.size();
    // Fifty heartbeats with ordinary higher terms from a member that is not
    // the leader, under its own key.
    const uint64_t impostor = std::to_string(to) == leader_id ? (to % kSafetyReplicas) + 1 : to == 1 ? 2 : 1;
    if (std::to_string(impostor) == leader_id) continue;
    std::vector<raft::Message> heartbeats;
    for (uint64_t k = 1; k <= 50; ++k) heartbeats.push_back(ForgedFrame(raft::MessageType::kHeartbeat, impostor, to, term + k));
    SendFrames(i, impostor, heartbeats);
    forged += heartbeats.size();
  }
  EXPECT_EQ(sent_, forged) << "the forged frames were not all sent";
  EXPECT_EQ(SubmitMany("after-forgery-", 30), 30) << "every submission commits";
  auto after = Status();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_LE(after->term, term + 1) << "forged frames moved the term (leader changes)";
  EXPECT_LT(after->term, raft::kMaxTerm);

  // And an election still works: no replica is stuck near the top of the range.
  const int leader = std::stoi(after->replica_id) - 1;
  cluster_.KillReplica(leader);
  int next = -1;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto s = Status();
        next = s.ok() && s->role == "leader" ? std::stoi(s->replica_id) - 1 : -1;
        return next >= 0 && next != leader;
      },
      30s))
      << "no new leader after the forged frames";
  EXPECT_EQ(SubmitMany("after-election-", 5), 5);
  auto elected = Status();
  ASSERT_TRUE(elected.ok());
  EXPECT_LE(elected->term, after->term + 3);
}

TEST_F(ReplicaSafetyTest, AddingUnreachableReplicasIsRefusedAndTheQuorumKept) {
  for (int id : {4, 5, 6}) {
    ReservedPort dead;  // bound, never listening: connections are refused
    CommandResult added = cluster_.Cli({"admin", "replica", "add", std::to_string(id), "--peer-addr", dead.endpoint(),
                                        "--replica-key", cluster_.PublicKeyFile("replica-" + std::to_string(id))});
    EXPECT_NE(added.exit_code, 0) << added.out;
    EXPECT_NE(added.err.find("Unavailable"), std::string::npos) << added.err;
    EXPECT_NE(added.err.find("nothing was changed"), std::string::npos) << added.err;
  }
  auto status = Status();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->replicas.size(), static_cast<size_t>(kSafetyReplicas)) << "a refused add changed the configuration";
  CommandResult undo = cluster_.Cli({"admin", "replica", "remove", "6"});
  EXPECT_NE(undo.err.find("NotFound"), std::string::npos) << undo.err << " (and never NotLeader: the quorum is whole)";

  // With one follower down, removing the other would leave one live voter
  // of two: refused, unless forced.
  const int leader = AwaitLeader();
  const int down = (leader + 1) % kSafetyReplicas;
  const int other = (leader + 2) % kSafetyReplicas;
  cluster_.KillReplica(down);
  EXPECT_EQ(SubmitMany("one-down-", 3), 3) << "two of three still commit";
  // Until an election timeout has passed without a word from it, the leader
  // still counts the killed replica as live.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto s = Status();
        if (!s.ok() || s->replica_id != std::to_string(leader + 1)) return false;
        for (const auto& r : s->replicas) {
          if (r.id == std::to_string(down + 1)) return r.heard_ms_ago > 1500;
        }
        return false;
      },
      20s))
      << "the leader never noticed replica " << down + 1 << " was gone (or leadership moved)";
  CommandResult removed = cluster_.Cli({"admin", "replica", "remove", std::to_string(other + 1)});
  EXPECT_NE(removed.exit_code, 0) << removed.out;
  EXPECT_NE(removed.err.find("fewer than the quorum"), std::string::npos) << removed.err;
  EXPECT_NE(removed.err.find("--force"), std::string::npos) << removed.err;
  status = Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->replicas.size(), static_cast<size_t>(kSafetyReplicas));
  // Removing the replica that is down leaves two live voters: allowed.
  CommandResult removed_down = cluster_.Cli({"admin", "replica", "remove", std::to_string(down + 1)});
  EXPECT_EQ(removed_down.exit_code, 0) << removed_down.out << removed_down.err;
  EXPECT_EQ(SubmitMany("two-voters-", 3), 3);
}

}  // namespace
}  // namespace gpool::testing
