#include "client/probe/net_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace gpool::probe {
namespace {

using namespace std::chrono_literals;

Deadline In(std::chrono::milliseconds ms) { return std::chrono::steady_clock::now() + ms; }

// A connected pair of stream sockets, closed at the end of the test.
struct SocketPair {
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~SocketPair() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  void Close(int i) {
    ::close(fds[i]);
    fds[i] = -1;
  }
  int fds[2] = {-1, -1};
};

// Measures over a socketpair with the other end served by a thread.
Result<LinkMeasurement> MeasureServed(const LinkOptions& options, Status* served = nullptr) {
  SocketPair pair;
  auto server = std::async(std::launch::async, [&] { return ServeLink(pair.fds[1], In(20s)); });
  auto measured = MeasureLink(pair.fds[0], options, In(20s));
  Status s = server.get();
  if (served != nullptr) *served = s;
  return measured;
}

// A fake link of `mib_s` between the measuring end and a server thread: a
// relay between two socketpairs that holds each piece the measurer sends
// for as long as the link would take to carry it (answers pass at once).
// The probe must see the link's rate, whatever its own sending does.
class SlowLink {
 public:
  explicit SlowLink(double mib_s)
      : up_([this, mib_s] { Relay(near_.fds[1], far_.fds[0], mib_s); }),
        down_([this] { Relay(far_.fds[0], near_.fds[1], 0); }) {}
  ~SlowLink() {
    // Wakes both relays: their reads return 0.
    ::shutdown(near_.fds[1], SHUT_RDWR);
    ::shutdown(far_.fds[0], SHUT_RDWR);
    up_.join();
    down_.join();
  }
  int measurer() const { return near_.fds[0]; }
  int server() const { return far_.fds[1]; }

 private:
  static void Relay(int from, int to, double mib_s) {
    std::vector<char> buffer(64 * 1024);
    for (ssize_t n; (n = ::read(from, buffer.data(), buffer.size())) > 0;) {
      if (mib_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(static_cast<double>(n) / (1 << 20) / mib_s));
      for (ssize_t done = 0, w; done < n; done += w) {
        if ((w = ::send(to, buffer.data() + done, static_cast<size_t>(n - done), MSG_NOSIGNAL)) <= 0) return;
      }
    }
    ::shutdown(to, SHUT_WR);
  }

  SocketPair near_, far_;
  std::thread up_, down_;
};

// A port on 127.0.0.1 that was free a moment ago.
uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(FrameTest, EncodesBigEndianAndRoundTrips) {
  const auto bytes = EncodeFrame({Op::kBulk, 0x0102030405060708});
  EXPECT_EQ(bytes, (std::array<uint8_t, kFrameSize>{'B', 1, 2, 3, 4, 5, 6, 7, 8}));
  auto frame = DecodeFrame(bytes);
  ASSERT_TRUE(frame.ok());
  EXPECT_EQ(*frame, (Frame{Op::kBulk, 0x0102030405060708}));
  EXPECT_EQ(DecodeFrame({'X', 0, 0, 0, 0, 0, 0, 0, 0}).status().code(), StatusCode::kMalformed);
}

TEST(LinkTest, MeasuresLatencyAndBandwidthAndEndsCleanly) {
  Status served;
  auto m = MeasureServed({.bytes = 1 << 20, .rounds = 2, .pings = 20}, &served);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_GT(m->bandwidth_mib_s, 0);
  EXPECT_GT(m->latency_us, 0);
  EXPECT_TRUE(served.ok()) << served.ToString();
}

TEST(LinkTest, ASlowLinkLowersTheMeasuredBandwidth) {
  auto fast = MeasureServed({.bytes = 4 << 20, .rounds = 1, .pings = 1});
  SlowLink link(20);
  auto server = std::async(std::launch::async, [&] { return ServeLink(link.server(), In(20s)); });
  auto slow = MeasureLink(link.measurer(), {.bytes = 4 << 20, .rounds = 1, .pings = 1}, In(20s));
  EXPECT_TRUE(server.get().ok());
  ASSERT_TRUE(fast.ok() && slow.ok());
  // The round is timed until the server's ack, so it lasts at least 4 MiB / 20 MiB/s.
  EXPECT_LE(slow->bandwidth_mib_s, 20.0);
  EXPECT_LT(slow->bandwidth_mib_s, fast->bandwidth_mib_s);
}

TEST(LinkTest, ASilentPeerEndsAtTheDeadline) {
  SocketPair pair;  // nobody serves fds[1]
  auto m = MeasureLink(pair.fds[0], {.bytes = 1024, .rounds = 1, .pings = 1}, In(200ms));
  EXPECT_EQ(m.status().code(), StatusCode::kDeadlineExceeded) << m.status().ToString();
  EXPECT_EQ(ServeLink(pair.fds[1], In(100ms)).code(), StatusCode::kDeadlineExceeded);
}

TEST(LinkTest, TheServerRefusesStrangersAndOversizedTransfers) {
  {
    SocketPair pair;
    const char junk[] = "GET / HTTP/1.0\r\n\r\n";
    ASSERT_EQ(::write(pair.fds[0], junk, sizeof(junk)), static_cast<ssize_t>(sizeof(junk)));
    EXPECT_EQ(ServeLink(pair.fds[1], In(5s)).code(), StatusCode::kMalformed);
  }
  {
    SocketPair pair;
    auto hello = EncodeFrame({Op::kHello, kMagic});
    auto bulk = EncodeFrame({Op::kBulk, kMaxBulkBytes + 1});
    ASSERT_EQ(::write(pair.fds[0], hello.data(), hello.size()), 9);
    ASSERT_EQ(::write(pair.fds[0], bulk.data(), bulk.size()), 9);
    EXPECT_EQ(ServeLink(pair.fds[1], In(5s)).code(), StatusCode::kMalformed);
  }
  {
    SocketPair pair;
    pair.Close(0);
    EXPECT_EQ(ServeLink(pair.fds[1], In(5s)).code(), StatusCode::kUnavailable);
  }
}

TEST(LinkTest, BadOptionsAreRefused) {
  SocketPair pair;
  EXPECT_EQ(MeasureLink(pair.fds[0], {.bytes = 0}, In(1s)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MeasureLink(pair.fds[0], {.rounds = 0}, In(1s)).status().code(), StatusCode::kInvalidArgument);
}

TEST(RingTest, ThreeMembersOnLoopbackEachMeasureTheirSuccessor) {
  std::vector<HostPort> ring;
  for (int i = 0; i < 3; ++i) ring.push_back({"127.0.0.1", FreePort()});
  std::vector<std::future<Result<NetworkProbeResult>>> runs;
  for (size_t rank = 0; rank < ring.size(); ++rank) {
    NetworkProbeOptions options;
    options.rank = rank;
    options.ring = ring;
    options.link = {.bytes = 1 << 20, .rounds = 1, .pings = 10};
    options.timeout_ms = 20'000;
    runs.push_back(std::async(std::launch::async, [options] { return RunNetworkProbe(options); }));
  }
  for (size_t rank = 0; rank < ring.size(); ++rank) {
    auto result = runs[rank].get();
    ASSERT_TRUE(result.ok()) << rank << ": " << result.status().ToString();
    EXPECT_EQ(result->peer, ring[(rank + 1) % ring.size()].ToString());
    EXPECT_GT(result->measurement.bandwidth_mib_s, 0);
    EXPECT_TRUE(result->served.ok()) << result->served.ToString();
  }
}

TEST(RingTest, AMissingSuccessorIsADeadlineNotAHang) {
  NetworkProbeOptions options;
  options.rank = 0;
  options.ring = {{"127.0.0.1", FreePort()}, {"127.0.0.1", FreePort()}};
  options.timeout_ms = 300;
  auto result = RunNetworkProbe(options);
  EXPECT_EQ(result.status().code(), StatusCode::kDeadlineExceeded) << result.status().ToString();
}

TEST(RingTest, AMemberOfOneMeasuresItself) {
  NetworkProbeOptions options;
  options.ring = {{"localhost", FreePort()}};
  options.link = {.bytes = 1 << 16, .rounds = 1, .pings = 2};
  options.timeout_ms = 10'000;
  bool reported = false;
  auto result = RunNetworkProbe(options, [&](const NetworkProbeResult& r) { reported = r.measurement.bandwidth_mib_s > 0; });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(reported);
}

}  // namespace
}  // namespace gpool::probe
