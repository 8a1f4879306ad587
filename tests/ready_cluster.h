// Starting a LocalCluster for a test and connecting a client to it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "tests/local_cluster.h"

namespace gpool::testing {

// Starts the coordinator and every worker, waits until all nodes are Ready,
// and connects `client` (its calls waiting `timeout_ms` for an answer). Call
// under ASSERT_NO_FATAL_FAILURE.
inline void StartReadyCluster(LocalCluster& cluster, std::unique_ptr<Client>& client, int timeout_ms = 3000) {
  using namespace std::chrono_literals;
  cluster.StartCoordinator();
  cluster.StartWorkers();
  ASSERT_TRUE(WaitFor([&] { return cluster.AllNodesReady(); }, 30s)) << cluster.Cli({"nodes"}).out;
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(options);
  options.timeout_ms = timeout_ms;
  auto connected = Client::Connect(options);
  ASSERT_TRUE(connected.ok()) << connected.status().ToString();
  client = std::move(connected).value();
}

}  // namespace gpool::testing

namespace gpool::testing {

// The index of the replica that leads as `client` (which follows redirects)
// sees it; -1 while none answers as the leader.
inline int LeaderIndex(Client& client) {
  auto status = client.ClusterStatus();
  return status.ok() && status->role == "leader" ? std::stoi(status->replica_id) - 1 : -1;
}

}  // namespace gpool::testing
