// PeerProbe against real sockets on 127.0.0.1: a ZeroMQ endpoint passes;
// a refused connection, a silent listener and a non-ZeroMQ server fail
// with reasons.
#include "control/replication/peer_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "protocol/base/clock.h"

namespace gpool::replication {
namespace {

int64_t Now() { return SystemClock::Get().MonoMs(); }

// Polls until a verdict (the probe's own deadline bounds it).
Status Verdict(PeerProbe& probe) {
  for (;;) {
    if (auto v = probe.Poll(Now())) return *v;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// A TCP socket on 127.0.0.1 bound to a free port; listening if asked.
struct RawSocket {
  explicit RawSocket(bool listen_too) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    if (listen_too) listen(fd, 4);
  }
  ~RawSocket() { close(fd); }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port); }
  int fd = -1;
  int port = 0;
};

TEST(PeerProbeTest, AZeroMqEndpointAnswers) {
  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router);
  router.bind("tcp://127.0.0.1:*");
  PeerProbe probe(router.get(zmq::sockopt::last_endpoint), Now(), 3000);
  EXPECT_TRUE(Verdict(probe).ok());
}

TEST(PeerProbeTest, ARefusedConnectionFailsAtOnce) {
  RawSocket bound(/*listen_too=*/false);
  const int64_t start = Now();
  PeerProbe probe(bound.endpoint(), start, 3000);
  Status s = Verdict(probe);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("does not answer"), std::string::npos) << s.message();
  EXPECT_LT(Now() - start, 1000);
}

TEST(PeerProbeTest, ASilentListenerTimesOut) {
  RawSocket listener(/*listen_too=*/true);
  PeerProbe probe(listener.endpoint(), Now(), 200);
  Status s = Verdict(probe);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("in time"), std::string::npos) << s.message();
}

TEST(PeerProbeTest, AServerThatIsNotZeroMqFails) {
  RawSocket listener(/*listen_too=*/true);
  std::thread server([&] {
    const int client = accept(listener.fd, nullptr, nullptr);
    const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    (void)!write(client, reply, sizeof(reply) - 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    close(client);
  });
  PeerProbe probe(listener.endpoint(), Now(), 3000);
  Status s = Verdict(probe);
  server.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("not as a ZeroMQ endpoint"), std::string::npos) << s.message();
}

TEST(PeerProbeTest, OtherTransportsAreNotProbed) {
  PeerProbe probe("ipc:///tmp/gpool-replica.sock", Now(), 10);
  EXPECT_TRUE(Verdict(probe).ok());
}

TEST(PeerProbeTest, AnAddressNotToConnectToFailsAtOnce) {
  for (const char* bad : {"tcp://h4:0", "tcp://*:7402", "tcp://::1:7402", "udp://h4:7402"}) {
    PeerProbe probe(bad, Now(), 3000);
    auto verdict = probe.Poll(Now());
    ASSERT_TRUE(verdict.has_value()) << bad;
    EXPECT_EQ(verdict->code(), StatusCode::kInvalidArgument) << bad << ": " << verdict->ToString();
  }
}

}  // namespace
}  // namespace gpool::replication
