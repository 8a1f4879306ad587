// What gpool-bench-scale reads from a coordinator's /metrics (issue 49): a
// plain HTTP GET on loopback (the replicas serve plain HTTP on 127.0.0.1)
// and the loop-stall histogram's buckets, to diff two scrapes into the
// quantiles of the time between them.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

namespace gpool::bench {

// The body of GET `path` from 127.0.0.1:`port`; "" when it fails.
inline std::string ScaleHttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[65536];
      for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, static_cast<size_t>(n));
    }
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos) return "";
  return response.substr(body + 4);
}

// The value of the sample written exactly as `series` (name and labels), or -1.
inline double ScaleSample(const std::string& page, const std::string& series) {
  const std::string prefix = series + " ";
  for (size_t at = page.find(prefix); at != std::string::npos; at = page.find(prefix, at + 1)) {
    if (at == 0 || page[at - 1] == '\n') return std::strtod(page.c_str() + at + prefix.size(), nullptr);
  }
  return -1;
}

// A histogram's cumulative buckets by upper bound (+Inf as a large number).
using ScaleBuckets = std::map<double, double>;

inline ScaleBuckets ScaleHistogram(const std::string& page, const std::string& name) {
  ScaleBuckets buckets;
  const std::string prefix = name + "_bucket{le=\"";
  for (size_t at = page.find(prefix); at != std::string::npos; at = page.find(prefix, at + 1)) {
    const size_t le = at + prefix.size();
    const size_t quote = page.find('"', le);
    const size_t space = page.find(' ', quote);
    if (quote == std::string::npos || space == std::string::npos) break;
    const std::string bound = page.substr(le, quote - le);
    buckets[bound == "+Inf" ? 1e300 : std::strtod(bound.c_str(), nullptr)] =
        std::strtod(page.c_str() + space + 1, nullptr);
  }
  return buckets;
}

// The upper bound of the bucket that holds quantile `q` of what was
// observed between scrapes `before` and `after` (Prometheus'
// histogram_quantile without the interpolation: an upper bound), and the
// number observed.
inline double ScaleQuantile(const ScaleBuckets& before, const ScaleBuckets& after, double q, double* count = nullptr) {
  const double total = after.empty() ? 0 : after.rbegin()->second - (before.empty() ? 0 : before.rbegin()->second);
  if (count != nullptr) *count = total;
  if (total <= 0) return 0;
  for (const auto& [bound, cumulative] : after) {
    auto it = before.find(bound);
    const double in = cumulative - (it == before.end() ? 0 : it->second);
    if (in >= q * total) return bound;
  }
  return after.rbegin()->first;
}

}  // namespace gpool::bench
