#include "control/replication/peer_list.h"

#include <gtest/gtest.h>

namespace gpool::replication {
namespace {

TEST(PeerListTest, ParsesIdsAndEndpoints) {
  auto peers = ParsePeerList(" 1=tcp://127.0.0.1:7402, 2=tcp://h2:7402,3=ipc:///tmp/c3 ", "--peers");
  ASSERT_TRUE(peers.ok()) << peers.status().ToString();
  ASSERT_EQ(peers->size(), 3u);
  EXPECT_EQ(peers->at(1), "tcp://127.0.0.1:7402");
  EXPECT_EQ(peers->at(2), "tcp://h2:7402");
  EXPECT_EQ(peers->at(3), "ipc:///tmp/c3");
}

TEST(PeerListTest, RefusesBadEntriesWithTheirName) {
  for (const char* bad : {"", "1", "0=tcp://h:1", "x=tcp://h:1", "1=h:7402", "1=tcp://h", "1=tcp://h:port",
                          "1=tcp://h:1,1=tcp://h:2", "-1=tcp://h:1", "18446744073709551616=tcp://h:1"}) {
    auto peers = ParsePeerList(bad, "--peers");
    ASSERT_FALSE(peers.ok()) << bad;
    EXPECT_EQ(peers.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(peers.status().message().find("--peers"), std::string::npos) << peers.status().ToString();
  }
}

TEST(PeerListTest, ReplicaIds) {
  EXPECT_EQ(*ParseReplicaId("3"), 3u);
  EXPECT_FALSE(ParseReplicaId("0").ok());
  EXPECT_FALSE(ParseReplicaId("coordinator-1").ok());
  EXPECT_FALSE(ParseReplicaId("").ok());
}

}  // namespace
}  // namespace gpool::replication
