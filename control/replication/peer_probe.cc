#include "control/replication/peer_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "protocol/base/endpoint.h"

namespace gpool::replication {
namespace {

constexpr size_t kSignatureBytes = 10;

}  // namespace

PeerProbe::PeerProbe(std::string endpoint, int64_t now_ms, int64_t timeout_ms)
    : endpoint_(std::move(endpoint)), deadline_ms_(now_ms + timeout_ms) {
  // The gateway has checked the address already (ValidateConnectEndpoint);
  // this refuses what slipped past it instead of handing it to getaddrinfo.
  auto parsed = Endpoint::Parse(endpoint_, EndpointUse::kConnect);
  if (!parsed.ok()) {
    Decide(Status::InvalidArgument("peer address " + endpoint_.substr(0, 128) + ": " + parsed.status().message()));
    return;
  }
  if (parsed->scheme != "tcp") {
    Decide(Status::Ok());  // not a TCP endpoint: nothing to probe
    return;
  }
  const std::string& host = parsed->host;
  const std::string port = std::to_string(parsed->port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0 || found == nullptr) {
    Decide(Status::Unavailable("peer address " + endpoint_ + " does not resolve: " + gai_strerror(rc)));
    return;
  }
  fd_ = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    freeaddrinfo(found);
    Decide(Status::Unavailable("peer address " + endpoint_ + ": socket: " + std::strerror(errno)));
    return;
  }
  const int rc = connect(fd_, found->ai_addr, found->ai_addrlen);
  const int err = errno;
  freeaddrinfo(found);
  if (rc != 0 && err != EINPROGRESS) {
    Decide(Status::Unavailable("peer address " + endpoint_ + " does not answer: " + std::strerror(err)));
  }
}

PeerProbe::PeerProbe(PeerProbe&& other) noexcept
    : endpoint_(std::move(other.endpoint_)),
      deadline_ms_(other.deadline_ms_),
      fd_(std::exchange(other.fd_, -1)),
      greeting_(std::move(other.greeting_)),
      verdict_(std::move(other.verdict_)) {}

PeerProbe& PeerProbe::operator=(PeerProbe&& other) noexcept {
  if (this == &other) return *this;
  if (fd_ >= 0) close(fd_);
  endpoint_ = std::move(other.endpoint_);
  deadline_ms_ = other.deadline_ms_;
  fd_ = std::exchange(other.fd_, -1);
  greeting_ = std::move(other.greeting_);
  verdict_ = std::move(other.verdict_);
  return *this;
}

PeerProbe::~PeerProbe() {
  if (fd_ >= 0) close(fd_);
}

void PeerProbe::Decide(Status verdict) {
  verdict_ = std::move(verdict);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::optional<Status> PeerProbe::Poll(int64_t now_ms) {
  if (verdict_.has_value()) return verdict_;
  pollfd p{fd_, POLLIN | POLLOUT, 0};
  if (::poll(&p, 1, 0) > 0) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      Decide(Status::Unavailable("peer address " + endpoint_ + " does not answer: " + std::strerror(err)));
      return verdict_;
    }
    if (p.revents & (POLLIN | POLLHUP)) {
      char buf[kSignatureBytes];
      const ssize_t n = recv(fd_, buf, kSignatureBytes - greeting_.size(), 0);
      if (n > 0) greeting_.append(buf, static_cast<size_t>(n));
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        Decide(Status::Unavailable("peer address " + endpoint_ +
                                   " accepted a connection and closed it without a ZeroMQ greeting"));
        return verdict_;
      }
      if (greeting_.size() >= kSignatureBytes) {
        const bool zmtp = static_cast<unsigned char>(greeting_[0]) == 0xFF &&
                          static_cast<unsigned char>(greeting_[kSignatureBytes - 1]) == 0x7F;
        Decide(zmtp ? Status::Ok()
                    : Status::Unavailable("peer address " + endpoint_ + " answers, but not as a ZeroMQ endpoint"));
        return verdict_;
      }
    }
  }
  if (now_ms >= deadline_ms_) {
    Decide(Status::Unavailable("peer address " + endpoint_ + " did not answer with a ZeroMQ greeting in time"));
  }
  return verdict_;
}

}  // namespace gpool::replication
