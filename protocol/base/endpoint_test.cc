#include "protocol/base/endpoint.h"

#include <gtest/gtest.h>

#include <string>

namespace gpool {
namespace {

// The reason alone, as Parse words it (callers add the flag or field).
std::string Why(std::string_view text, EndpointUse use = EndpointUse::kConnect) {
  auto parsed = Endpoint::Parse(text, use);
  return parsed.ok() ? "ok" : parsed.status().message();
}

TEST(EndpointTest, ParsesEachSchemeIntoParts) {
  auto tcp = Endpoint::Parse("tcp://node-1.example:7400", EndpointUse::kConnect);
  ASSERT_TRUE(tcp.ok()) << tcp.status().ToString();
  EXPECT_EQ(*tcp, (Endpoint{"tcp", "node-1.example", 7400}));
  auto v6 = Endpoint::Parse("tcp://[fe80::1%eth0]:1", EndpointUse::kConnect);
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(v6->host, "fe80::1%eth0");
  EXPECT_EQ(*Endpoint::Parse("ipc:///run/gpool.sock", EndpointUse::kConnect), (Endpoint{"ipc", "/run/gpool.sock", 0}));
  EXPECT_EQ(*Endpoint::Parse("inproc://a", EndpointUse::kConnect), (Endpoint{"inproc", "a", 0}));
  EXPECT_EQ(*Endpoint::ParseHostPort("[::1]:8080", EndpointUse::kConnect), (Endpoint{"tcp", "::1", 8080}));
}

TEST(EndpointTest, RoundTripsThroughBothSpellings) {
  for (const char* text : {"tcp://10.0.0.1:7400", "tcp://[::1]:65535", "tcp://h:1", "ipc:///tmp/x", "inproc://n"}) {
    auto parsed = Endpoint::Parse(text, EndpointUse::kConnect);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->ZmqAddress(), text);
  }
  for (const char* text : {"10.0.0.1:7400", "[::1]:1", "localhost:65535"}) {
    auto parsed = Endpoint::ParseHostPort(text, EndpointUse::kConnect);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->HostPort(), text);
    EXPECT_EQ(*Endpoint::Parse(parsed->ZmqAddress(), EndpointUse::kConnect), *parsed);
  }
  // Leading zeros are read, and not written back.
  EXPECT_EQ(Endpoint::ParseHostPort("h:00080", EndpointUse::kConnect)->HostPort(), "h:80");
}

TEST(EndpointTest, PortBoundariesDependOnTheUse) {
  EXPECT_EQ(Why("tcp://h:1"), "ok");
  EXPECT_EQ(Why("tcp://h:65535"), "ok");
  for (const char* bad : {"tcp://h:0", "tcp://h:65536", "tcp://h:*", "tcp://h:123456", "tcp://h:+1", "tcp://h:-1",
                          "tcp://h:0x10", "tcp://h:99999999999999999999"}) {
    EXPECT_EQ(Why(bad), "expected a port from 1 to 65535") << bad;
  }
  // Binding: 0 and '*' both mean "any free port", which ZeroMQ spells '*'.
  auto any = Endpoint::Parse("tcp://127.0.0.1:0", EndpointUse::kBind);
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->port, 0);
  EXPECT_EQ(any->ZmqAddress(), "tcp://127.0.0.1:*");
  EXPECT_EQ(any->HostPort(), "127.0.0.1:0");
  EXPECT_EQ(*Endpoint::Parse("tcp://127.0.0.1:*", EndpointUse::kBind), *any);
  EXPECT_EQ(Why("tcp://h:65536", EndpointUse::kBind), "expected a port from 0 to 65535");
}

TEST(EndpointTest, BadInputHasAReason) {
  EXPECT_EQ(Why(""), "expected tcp://HOST:PORT, ipc://PATH or inproc://NAME");
  EXPECT_EQ(Why("h:1"), "expected tcp://HOST:PORT, ipc://PATH or inproc://NAME");
  EXPECT_EQ(Why("udp://h:1"), "unknown scheme 'udp': expected tcp://, ipc:// or inproc://");
  EXPECT_EQ(Why("tcp://h"), "expected HOST:PORT");
  EXPECT_EQ(Why("tcp://:1"), "expected HOST:PORT");
  EXPECT_EQ(Why("tcp://h:"), "expected a port from 1 to 65535");
  EXPECT_EQ(Why("tcp://::1:5"), "an IPv6 host goes in brackets: [::1]:PORT");
  for (const char* bad : {"tcp://[::1:5", "tcp://::1]:5", "tcp://[]:5", "tcp://[host]:5"}) {
    EXPECT_EQ(Why(bad), "expected [IPV6]:PORT") << bad;
  }
  for (const char* bad : {"tcp://a/b:1", "tcp://a@b:1", "tcp://[::1/64]:1", "tcp://h\xc3\xa9:1"}) {
    EXPECT_EQ(Why(bad), "the host has a character hosts do not have") << bad;
  }
  EXPECT_EQ(Why("tcp://h :1"), "has a space or a control character");
  EXPECT_EQ(Why("ipc://a\nb"), "has a space or a control character");
  EXPECT_EQ(Why("ipc://"), "expected a path after ipc://");
  EXPECT_EQ(Why("inproc://"), "expected a name after inproc://");
  EXPECT_EQ(Why("tcp://*:1"), "'*' is a bind address, not one to connect to");
  EXPECT_EQ(Why("tcp://*:1", EndpointUse::kBind), "ok");
  EXPECT_EQ(Why("tcp://" + std::string(254, 'a') + ":1"), "the host is longer than 253 bytes");
  EXPECT_EQ(Why("ipc:///" + std::string(kMaxEndpointBytes, 'a')), "longer than 1024 bytes");
}

TEST(EndpointTest, FormatsHostsForEitherFamily) {
  EXPECT_EQ(FormatHostPort("::1", 7000), "[::1]:7000");
  EXPECT_EQ(FormatHostPort("10.0.0.1", 7000), "10.0.0.1:7000");
  EXPECT_EQ((Endpoint{"tcp", "::", 0}).ZmqAddress(), "tcp://[::]:*");
  EXPECT_EQ(BindableEndpoint("tcp://[::1]:0"), "tcp://[::1]:*");
  EXPECT_EQ(BindableEndpoint("not an endpoint"), "not an endpoint");
}

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
  // Every entry is one to connect to.
  EXPECT_EQ(ParseEndpointList("tcp://h:1,tcp://h:*", "--coordinator", false).status().message(),
            "--coordinator: 'tcp://h:*': expected a port from 1 to 65535");
  EXPECT_EQ(ParseEndpointList("h:0", "coordinator endpoint", true).status().message(),
            "coordinator endpoint: 'h:0': expected a port from 1 to 65535");
  EXPECT_EQ(*ParseConnectEndpoint("[::1]:7400", /*default_tcp=*/true), "tcp://[::1]:7400");
  EXPECT_FALSE(ParseConnectEndpoint("", true).ok());
  EXPECT_EQ(BindableEndpoint("tcp://127.0.0.1:0"), "tcp://127.0.0.1:*");
}

}  // namespace
}  // namespace gpool
