// A client for benches that start their own coordinators: short connect
// timeouts and many retries (the replicas may still be electing), and an
// exit with the reason when none answers, since a bench has nothing to
// measure without one.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "client/client.h"

namespace gpool::bench {

inline std::unique_ptr<gpool::Client> ConnectOrExit(const std::string& endpoints, int timeout_ms) {
  gpool::ClientOptions options;
  options.endpoints = endpoints;
  options.timeout_ms = timeout_ms;
  options.connect_timeout_ms = 100;
  options.retries = 60;
  auto client = gpool::Client::Connect(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(client).value();
}

}  // namespace gpool::bench
