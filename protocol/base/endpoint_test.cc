#include "protocol/base/endpoint.h"

#include <gtest/gtest.h>

namespace gpool {
namespace {

TEST(EndpointTest, AnyEndpointMayUseTheBindWildcards) {
  for (const char* ok : {"tcp://127.0.0.1:7400", "tcp://*:7400", "tcp://h:*", "ipc:///tmp/x", "inproc://a"}) {
    EXPECT_TRUE(ValidateEndpoint(ok, "--x").ok()) << ok;
  }
  for (const char* bad : {"", "127.0.0.1:7400", "tcp://h", "tcp://h:", "tcp://:7400", "tcp://h:7a", "ipc://",
                          "tcp://h :1"}) {
    EXPECT_FALSE(ValidateEndpoint(bad, "--x").ok()) << bad;
  }
}

TEST(EndpointTest, AnEndpointOthersConnectToNamesAHostAndARealPort) {
  EXPECT_TRUE(ValidateConnectEndpoint("tcp://10.0.0.1:65535", "--peer-addr").ok());
  EXPECT_TRUE(ValidateConnectEndpoint("ipc:///run/gpool.sock", "--peer-addr").ok());
  for (const char* bad : {"tcp://h:0", "tcp://h:65536", "tcp://h:*", "tcp://h:99999999999999999999", "tcp://h\x01:1"}) {
    const Status status = ValidateConnectEndpoint(bad, "--peer-addr");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(status.message().rfind("--peer-addr: expected tcp://HOST:PORT", 0), 0u) << status.ToString();
  }
  EXPECT_EQ(ValidateConnectEndpoint("tcp://*:7402", "--peer-addr").message(),
            "--peer-addr: 'tcp://*:7402' is a bind address; give one that others can connect to");
}

TEST(EndpointTest, ReplicaIdsArePositiveIntegers) {
  EXPECT_EQ(*ParseReplicaId(" 3 "), 3u);
  for (const char* bad : {"0", "", "-1", "coordinator-1", "3x", "99999999999999999999"}) {
    EXPECT_FALSE(ParseReplicaId(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseReplicaId("x").status().message(), "expected a replica ID (a positive integer), got 'x'");
}

TEST(EndpointTest, ListsSkipEmptyEntriesAndMayDefaultToTcp) {
  auto list = ParseEndpointList(" h:1 ,, tcp://g:2", "--coordinator", /*default_tcp=*/true);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(*list, (std::vector<std::string>{"tcp://h:1", "tcp://g:2"}));
  EXPECT_FALSE(ParseEndpointList(" , ", "--coordinator", true).ok());
  EXPECT_FALSE(ParseEndpointList("h:1", "--coordinator", false).ok());
  EXPECT_EQ(BindableEndpoint("tcp://127.0.0.1:0"), "tcp://127.0.0.1:*");
}

}  // namespace
}  // namespace gpool
