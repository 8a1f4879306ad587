// The cluster-status views of client/format.h: `gpool status` (replicas,
// lag, the disk) as text and JSON. Split from format_test.cc.
#include "client/format.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpool {
namespace {

TEST(FormatTest, ClusterStatus) {
  ClusterStatusReply s;
  s.replica_id = "c1";
  s.role = "leader";
  s.term = 3;
  s.commit_index = 120;
  s.applied_index = 119;
  s.nodes_ready = 3;
  s.nodes_total = 4;
  s.gpus_used = 12;
  s.gpus_total = 32;
  s.jobs_pending = 2;
  s.jobs_running = 5;
  s.replicas = {ReplicaInfo{"c1", "tcp://10.0.0.1:7400", "leader", 120},
                ReplicaInfo{"c2", "tcp://10.0.0.2:7400", "follower", 118}};
  EXPECT_EQ(FormatClusterStatus(s),
            "Replica:  c1 (leader, term 3)\n"
            "Log:      commit 120, applied 119\n"
            "Nodes:    3 ready of 4\n"
            "GPUs:     12 used of 32\n"
            "Jobs:     2 pending, 5 running\n"
            "\n"
            "REPLICA  ADDRESS              ROLE      MATCH  LAG  HEARD  VERSION\n"
            "c1       tcp://10.0.0.1:7400  leader    120    0    -      -\n"
            "c2       tcp://10.0.0.2:7400  follower  118    2    -      -\n");
}

TEST(FormatTest, ClusterStatusShowsAFullDisk) {
  ClusterStatusReply s;
  s.replica_id = "c1";
  s.role = "leader";
  s.term = 3;
  s.disk_full = true;
  s.disk_error = "disk full (/var/lib/gpool/coordinator, 4096 bytes free)";
  EXPECT_EQ(FormatClusterStatus(s),
            "Replica:  c1 (leader, term 3)\n"
            "Log:      commit 0, applied 0\n"
            "Nodes:    0 ready of 0\n"
            "GPUs:     0 used of 0\n"
            "Jobs:     0 pending, 0 running\n"
            "Disk:     FULL, writes refused, reads served: disk full (/var/lib/gpool/coordinator, 4096 bytes free)\n");
}

// A three-replica status as the given replica sees it.
ClusterStatusReply ThreeReplicas(std::string role) {
  ClusterStatusReply s;
  s.replica_id = "1";
  s.role = std::move(role);
  s.commit_index = 57;
  s.replicas = {ReplicaInfo{"1", "tcp://10.0.0.1:7400", "leader", 60},
                ReplicaInfo{"2", "tcp://10.0.0.2:7400", "follower", 50},
                ReplicaInfo{"3", "tcp://10.0.0.3:7400", "follower", 0}};
  return s;
}

TEST(FormatTest, ReplicaLagOnTheLeader) {
  ClusterStatusReply s = ThreeReplicas("leader");
  EXPECT_EQ(ReplicaLag(s, s.replicas[0]), std::optional<uint64_t>(0));   // match past commit: 0, not negative
  EXPECT_EQ(ReplicaLag(s, s.replicas[1]), std::optional<uint64_t>(7));   // 57 - 50
  EXPECT_EQ(ReplicaLag(s, s.replicas[2]), std::nullopt);                 // match not known yet
  s.replicas[1].match_index = 57;
  EXPECT_EQ(ReplicaLag(s, s.replicas[1]), std::optional<uint64_t>(0));
  s.replicas[2].match_index = 1;
  EXPECT_EQ(ReplicaLag(s, s.replicas[2]), std::optional<uint64_t>(56));
  // The leader's own row counts even at match 0 (an empty log)...
  s.replicas[0].match_index = 0;
  s.commit_index = 0;
  EXPECT_EQ(ReplicaLag(s, s.replicas[0]), std::optional<uint64_t>(0));
  // ... also when only its id says it is the answering replica.
  s.replicas[0].role = "";
  s.commit_index = 4;
  EXPECT_EQ(ReplicaLag(s, s.replicas[0]), std::optional<uint64_t>(4));
  EXPECT_EQ(FormatReplicasTable(ThreeReplicas("leader")),
            "REPLICA  ADDRESS              ROLE      MATCH  LAG  HEARD  VERSION\n"
            "1        tcp://10.0.0.1:7400  leader    60     0    -      -\n"
            "2        tcp://10.0.0.2:7400  follower  50     7    -      -\n"
            "3        tcp://10.0.0.3:7400  follower  0      -    -      -\n");
}

TEST(FormatTest, ReplicaLagIsUnknownUnlessTheLeaderAnswers) {
  for (const char* role : {"follower", "candidate", "leader (catching up)", ""}) {
    ClusterStatusReply s = ThreeReplicas(role);
    for (const auto& r : s.replicas) EXPECT_EQ(ReplicaLag(s, r), std::nullopt) << role << " " << r.id;
  }
  ClusterStatusReply s = ThreeReplicas("follower");
  s.replica_id = "2";
  s.replicas[1].role = "follower";
  EXPECT_EQ(FormatReplicasTable(s),
            "REPLICA  ADDRESS              ROLE      MATCH  LAG  HEARD  VERSION\n"
            "1        tcp://10.0.0.1:7400  leader    60     -    -      -\n"
            "2        tcp://10.0.0.2:7400  follower  50     -    -      -\n"
            "3        tcp://10.0.0.3:7400  follower  0      -    -      -\n");
  // The follower's `status` ends with the same table.
  const std::string status = FormatClusterStatus(s);
  EXPECT_EQ(status.substr(status.size() - FormatReplicasTable(s).size()), FormatReplicasTable(s));
  EXPECT_EQ(FormatReplicasTable(ClusterStatusReply{}), "No replicas.\n");
}

TEST(FormatTest, HeardIsInTenthsOfASecondUnderAMinute) {
  EXPECT_EQ(FormatHeard(-1), "-");
  EXPECT_EQ(FormatHeard(0), "0.0s ago");
  EXPECT_EQ(FormatHeard(1499), "1.4s ago");
  EXPECT_EQ(FormatHeard(59'999), "59.9s ago");
  EXPECT_EQ(FormatHeard(61'000), "1m01s ago");
}

TEST(FormatTest, ClusterStatusJsonKeepsTheRawReplicaFields) {
  auto json = nlohmann::json::parse(ToJson(ThreeReplicas("leader")));
  EXPECT_EQ(json["commit_index"], 57);
  ASSERT_EQ(json["replicas"].size(), 3u);
  EXPECT_EQ(json["replicas"][1]["match_index"], 50);
  EXPECT_EQ(json["replicas"][1]["role"], "follower");
  EXPECT_FALSE(json["replicas"][1].contains("lag"));  // the wire form only; LAG is computed for people
}

}  // namespace
}  // namespace gpool
