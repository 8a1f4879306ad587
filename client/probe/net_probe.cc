#include "client/probe/net_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "client/probe/outliers.h"
#include "protocol/base/endpoint.h"

namespace gpool::probe {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunkBytes = 256 * 1024;
constexpr double kMiB = 1024.0 * 1024.0;

// Closes a descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Milliseconds left until `deadline`, rounded up; 0 when it has passed.
int RemainingMs(Deadline deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1'000'000'000));
}

// Waits until `fd` is ready for `events` or the deadline passes.
Status WaitReady(int fd, short events, Deadline deadline, const char* what) {
  while (true) {
    const int left = RemainingMs(deadline);
    if (left == 0) return Status::DeadlineExceeded(std::string("timed out ") + what);
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, left);
    if (r > 0) return Status::Ok();
    if (r < 0 && errno != EINTR) return Status::IoError(Errno("poll"));
  }
}

Status SendAll(int fd, const void* data, size_t size, Deadline deadline) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    GPOOL_RETURN_IF_ERROR(WaitReady(fd, POLLOUT, deadline, "sending"));
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET) return Status::Unavailable(Errno("the peer went away"));
      return Status::IoError(Errno("send"));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Reads at least 1 and at most `size` bytes.
Result<size_t> RecvSome(int fd, void* data, size_t size, Deadline deadline) {
  while (true) {
    GPOOL_RETURN_IF_ERROR(WaitReady(fd, POLLIN, deadline, "receiving"));
    const ssize_t n = ::recv(fd, data, size, MSG_DONTWAIT);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) return Status::Unavailable("the peer closed the connection");
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
    if (errno == ECONNRESET) return Status::Unavailable(Errno("the peer went away"));
    return Status::IoError(Errno("recv"));
  }
}

Status RecvAll(int fd, void* data, size_t size, Deadline deadline) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    GPOOL_ASSIGN_OR_RETURN(size_t n, RecvSome(fd, p, size, deadline));
    p += n;
    size -= n;
  }
  return Status::Ok();
}

Status SendFrame(int fd, const Frame& frame, Deadline deadline) {
  const auto bytes = EncodeFrame(frame);
  return SendAll(fd, bytes.data(), bytes.size(), deadline);
}

Result<Frame> RecvFrame(int fd, Deadline deadline) {
  std::array<uint8_t, kFrameSize> bytes{};
  GPOOL_RETURN_IF_ERROR(RecvAll(fd, bytes.data(), bytes.size(), deadline));
  return DecodeFrame(bytes);
}

Status Expect(const Frame& got, Op op, uint64_t value) {
  if (got.op == op && got.value == value) return Status::Ok();
  return Status::Malformed("expected frame '" + std::string(1, static_cast<char>(op)) + "' " + std::to_string(value) +
                           ", got '" + std::string(1, static_cast<char>(got.op)) + "' " + std::to_string(got.value));
}

void NoDelay(int fd) {
  const int one = 1;
  // Fails on a Unix socket (tests use socketpairs): nothing to turn off there.
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One bulk transfer of `bytes`, timed until the receiver's ack; MiB/s.
Result<double> BulkRound(int fd, const LinkOptions& options, std::vector<uint8_t>& buffer, Deadline deadline) {
  const auto start = Clock::now();
  GPOOL_RETURN_IF_ERROR(SendFrame(fd, {Op::kBulk, options.bytes}, deadline));
  uint64_t sent = 0;
  while (sent < options.bytes) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(buffer.size(), options.bytes - sent));
    GPOOL_RETURN_IF_ERROR(SendAll(fd, buffer.data(), chunk, deadline));
    sent += chunk;
  }
  GPOOL_ASSIGN_OR_RETURN(Frame ack, RecvFrame(fd, deadline));
  GPOOL_RETURN_IF_ERROR(Expect(ack, Op::kBulkAck, options.bytes));
  const double seconds = std::max(Seconds(Clock::now() - start), 1e-9);
  return static_cast<double>(options.bytes) / kMiB / seconds;
}

// A listening TCP socket on every interface: IPv6 with IPv4 mapped where the
// host has IPv6, else IPv4.
Result<Fd> Listen(uint16_t port) {
  Fd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  if (fd.get() >= 0) {
    const int zero = 0;
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(port);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && ::listen(fd.get(), 8) == 0) {
      return fd;
    }
    if (errno == EADDRINUSE) return Status::Unavailable("cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno));
  }
  fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Status::IoError(Errno("socket"));
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd.get(), 8) != 0) {
    return Status::Unavailable("cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno));
  }
  return fd;
}

// One non-blocking connect attempt to each address of `peer`.
Result<Fd> ConnectOnce(const HostPort& peer, Deadline deadline, std::string& last_error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(peer.port);
  const int rc = ::getaddrinfo(peer.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    last_error = std::string("cannot resolve ") + peer.host + ": " + ::gai_strerror(rc);
    if (rc == EAI_AGAIN) return Status::Unavailable(last_error);
    return Status::NotFound(last_error);
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (fd.get() < 0) {
      last_error = Errno("socket");
      continue;
    }
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = Errno("connect");
        continue;
      }
      Status ready = WaitReady(fd.get(), POLLOUT, std::min(deadline, Clock::now() + std::chrono::seconds(2)), "connecting");
      int error = 0;
      socklen_t len = sizeof(error);
      if (!ready.ok() || ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
        last_error = ready.ok() ? std::string("connect: ") + std::strerror(error) : ready.message();
        continue;
      }
    }
    return fd;
  }
  return Status::Unavailable(last_error);
}

// Connects to `peer`, retrying (50 ms, doubling to 500 ms) while it is not up
// yet, until the deadline.
Result<Fd> ConnectWithRetry(const HostPort& peer, Deadline deadline) {
  std::string last_error = "no attempt";
  auto backoff = std::chrono::milliseconds(50);
  while (true) {
    auto fd = ConnectOnce(peer, deadline, last_error);
    if (fd.ok()) return fd;
    if (fd.status().code() == StatusCode::kNotFound) return Status::Unavailable(fd.status().message());
    if (Clock::now() + backoff >= deadline) {
      return Status::DeadlineExceeded("could not connect to " + peer.ToString() + " in time: " + last_error);
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

// The receiver's hello: Malformed when the peer is not a gpool-probe of this version.
Status ServeHello(int fd, Deadline deadline) {
  NoDelay(fd);
  auto hello = RecvFrame(fd, deadline);
  if (!hello.ok()) return hello.status().WithContext("hello");
  if (hello->op != Op::kHello || hello->value != kMagic) {
    return Status::Malformed("hello: not a gpool-probe peer (or another version)");
  }
  return SendFrame(fd, {Op::kHelloAck, kMagic}, deadline);
}

// The receiver after the hello: answers until 'Q'.
Status ServeFrames(int fd, Deadline deadline) {
  std::vector<uint8_t> buffer(kChunkBytes);
  while (true) {
    GPOOL_ASSIGN_OR_RETURN(Frame frame, RecvFrame(fd, deadline));
    switch (frame.op) {
      case Op::kPing:
        GPOOL_RETURN_IF_ERROR(SendFrame(fd, {Op::kPong, frame.value}, deadline));
        break;
      case Op::kBulk: {
        if (frame.value > kMaxBulkBytes) {
          return Status::Malformed("bulk transfer of " + std::to_string(frame.value) + " bytes is over the limit");
        }
        uint64_t left = frame.value;
        while (left > 0) {
          const size_t want = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
          GPOOL_ASSIGN_OR_RETURN(size_t got, RecvSome(fd, buffer.data(), want, deadline));
          left -= got;
        }
        GPOOL_RETURN_IF_ERROR(SendFrame(fd, {Op::kBulkAck, frame.value}, deadline));
        break;
      }
      case Op::kQuit:
        return Status::Ok();
      default:
        return Status::Malformed("unexpected frame '" + std::string(1, static_cast<char>(frame.op)) + "'");
    }
  }
}

// Accepts connections until one says hello, and serves it.
Status Serve(int listen_fd, Deadline deadline) {
  while (true) {
    GPOOL_RETURN_IF_ERROR(WaitReady(listen_fd, POLLIN, deadline, "waiting for the previous ring member"));
    Fd conn(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
      return Status::IoError(Errno("accept"));
    }
    // A connection that is not a probe (no hello, or a wrong one): drop it,
    // keep listening.
    Status hello = ServeHello(conn.get(), deadline);
    if (hello.code() == StatusCode::kDeadlineExceeded) return hello;
    if (!hello.ok()) continue;
    return ServeFrames(conn.get(), deadline);
  }
}

}  // namespace

std::array<uint8_t, kFrameSize> EncodeFrame(const Frame& frame) {
  std::array<uint8_t, kFrameSize> bytes{};
  bytes[0] = static_cast<uint8_t>(frame.op);
  for (int i = 0; i < 8; ++i) bytes[1 + i] = static_cast<uint8_t>(frame.value >> (56 - 8 * i));
  return bytes;
}

Result<Frame> DecodeFrame(const std::array<uint8_t, kFrameSize>& bytes) {
  switch (static_cast<Op>(bytes[0])) {
    case Op::kHello:
    case Op::kHelloAck:
    case Op::kPing:
    case Op::kPong:
    case Op::kBulk:
    case Op::kBulkAck:
    case Op::kQuit:
      break;
    default:
      return Status::Malformed("unknown frame op " + std::to_string(bytes[0]));
  }
  Frame frame;
  frame.op = static_cast<Op>(bytes[0]);
  for (int i = 0; i < 8; ++i) frame.value = (frame.value << 8) | bytes[1 + i];
  return frame;
}

Result<LinkMeasurement> MeasureLink(int fd, const LinkOptions& options, Deadline deadline) {
  if (options.rounds == 0 || options.bytes == 0 || options.bytes > kMaxBulkBytes) {
    return Status::InvalidArgument("a link measurement needs rounds >= 1 and 1 to 16 GiB per round");
  }
  NoDelay(fd);
  GPOOL_RETURN_IF_ERROR(SendFrame(fd, {Op::kHello, kMagic}, deadline));
  GPOOL_ASSIGN_OR_RETURN(Frame hello, RecvFrame(fd, deadline));
  GPOOL_RETURN_IF_ERROR(Expect(hello, Op::kHelloAck, kMagic));

  LinkMeasurement m;
  std::vector<double> rtts_us;
  rtts_us.reserve(options.pings);
  for (uint32_t i = 0; i < options.pings; ++i) {
    const auto start = Clock::now();
    GPOOL_RETURN_IF_ERROR(SendFrame(fd, {Op::kPing, i}, deadline));
    GPOOL_ASSIGN_OR_RETURN(Frame pong, RecvFrame(fd, deadline));
    GPOOL_RETURN_IF_ERROR(Expect(pong, Op::kPong, i));
    rtts_us.push_back(Seconds(Clock::now() - start) * 1e6);
  }
  m.latency_us = Median(std::move(rtts_us));

  std::vector<uint8_t> buffer(static_cast<size_t>(std::min<uint64_t>(kChunkBytes, options.bytes)));
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i * 131);
  for (uint32_t round = 0; round < options.rounds; ++round) {
    GPOOL_ASSIGN_OR_RETURN(double mib_s, BulkRound(fd, options, buffer, deadline));
    m.bandwidth_mib_s = std::max(m.bandwidth_mib_s, mib_s);
  }
  GPOOL_RETURN_IF_ERROR(SendFrame(fd, {Op::kQuit, 0}, deadline));
  return m;
}

Status ServeLink(int fd, Deadline deadline) {
  GPOOL_RETURN_IF_ERROR(ServeHello(fd, deadline));
  return ServeFrames(fd, deadline);
}

std::string HostPort::ToString() const { return FormatHostPort(host, port); }

Result<std::vector<HostPort>> ParseRing(std::string_view text) {
  std::vector<HostPort> ring;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view entry = text.substr(start, end - start);
    start = end + 1;
    // Ring members connect to each other: ports 1-65535, no wildcard host.
    auto parsed = Endpoint::ParseHostPort(entry, EndpointUse::kConnect);
    if (!parsed.ok()) {
      return Status::InvalidArgument("--ring: '" + std::string(entry.substr(0, 128)) + "': " +
                                     parsed.status().message());
    }
    ring.push_back({std::move(parsed->host), parsed->port});
    if (end == text.size()) break;
  }
  return ring;
}

Result<NetworkProbeResult> RunNetworkProbe(const NetworkProbeOptions& options,
                                           const std::function<void(const NetworkProbeResult&)>& on_measured) {
  if (options.ring.empty()) return Status::InvalidArgument("--ring: empty");
  if (options.rank >= options.ring.size()) {
    return Status::InvalidArgument("--rank " + std::to_string(options.rank) + " is not below the ring's size, " +
                                   std::to_string(options.ring.size()));
  }
  const Deadline deadline = Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  GPOOL_ASSIGN_OR_RETURN(Fd listener, Listen(options.ring[options.rank].port));

  NetworkProbeResult result;
  result.served = Status::Internal("still serving");
  Status served;
  std::thread server([&] { served = Serve(listener.get(), deadline); });
  const HostPort& next = options.ring[(options.rank + 1) % options.ring.size()];
  result.peer = next.ToString();
  Result<LinkMeasurement> measured = [&]() -> Result<LinkMeasurement> {
    GPOOL_ASSIGN_OR_RETURN(Fd conn, ConnectWithRetry(next, deadline));
    return MeasureLink(conn.get(), options.link, deadline);
  }();
  if (measured.ok()) {
    result.measurement = *measured;
    if (on_measured) on_measured(result);
  }
  server.join();
  result.served = served;
  if (!measured.ok()) return measured.status().WithContext("measuring the link to " + result.peer);
  return result;
}

}  // namespace gpool::probe
