// Plain HTTP only with --http-insecure (issue 48), on loopback too, for the
// coordinator and the worker as started from their command lines: without
// TLS or the flag an --http-address is a usage error naming both options
// (and the process changes nothing); with the flag the port serves plain
// HTTP and the process warns once, with key=value fields.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <httplib.h>

#include "protocol/http/http_server.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

size_t PlainHttpCountOf(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

int PlainHealthz(const std::string& address) {
  auto host_port = http::ParseHostPort(address);
  if (!host_port.ok()) return -1;
  httplib::Client client(host_port->first, host_port->second);
  client.set_read_timeout(10, 0);
  auto got = client.Get("/healthz");
  return got ? got->status : -1;
}

void ExpectRefusalNamingBothOptions(const CommandResult& result) {
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("--http-address 127.0.0.1:0"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("--http-cert"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("--http-insecure"), std::string::npos) << result.err;
}

TEST(PlainHttpTest, LoopbackWithoutTlsOrTheFlagIsRefusedAtStart) {
  TempDir dir;
  const std::string coordinator_dir = dir.Join("coordinator");
  ExpectRefusalNamingBothOptions(RunCommand({GPOOL_COORDINATOR_BIN, "--insecure", "--data-dir", coordinator_dir,
                                             "--client-addr", "tcp://127.0.0.1:0", "--worker-addr",
                                             "tcp://127.0.0.1:0", "--http-address", "127.0.0.1:0"}));
  EXPECT_FALSE(std::filesystem::exists(coordinator_dir)) << "a refused start writes nothing";
  const std::string worker_dir = dir.Join("worker");
  ExpectRefusalNamingBothOptions(RunCommand({GPOOL_WORKER_BIN, "--insecure", "--coordinator", "tcp://127.0.0.1:1",
                                             "--data-dir", worker_dir, "--http-address", "127.0.0.1:0"}));
  EXPECT_FALSE(std::filesystem::exists(worker_dir)) << "a refused start writes nothing";
}

TEST(PlainHttpTest, WithTheFlagBothServePlainHttpAndWarnOnce) {
  LocalClusterOptions options;
  options.secure = false;  // the HTTP rule does not depend on CurveZMQ
  options.workers = 1;
  LocalCluster cluster(options);  // passes --http-address 127.0.0.1:0 --http-insecure to both
  cluster.StartCoordinator();
  cluster.StartWorkers();
  const std::string coordinator_http = cluster.http_address();
  ASSERT_FALSE(coordinator_http.empty()) << cluster.coordinator()->Log();
  std::string worker_http;
  ASSERT_TRUE(WaitFor([&] { return !(worker_http = ReadFile(cluster.WorkerDataDir(0) + "/http")).empty(); }, 20s))
      << cluster.worker(0)->Log();
  worker_http.erase(worker_http.find_last_not_of("\n") + 1);
  EXPECT_EQ(PlainHealthz(coordinator_http), 200);
  EXPECT_EQ(PlainHealthz(worker_http), 200);

  const std::string warning = "http serves plain HTTP address=";
  for (Process* process : {cluster.coordinator(), cluster.worker(0)}) {
    ASSERT_TRUE(WaitFor([&] { return process->Log().find(warning) != std::string::npos; }, 10s)) << process->Log();
    const std::string log = process->Log();
    EXPECT_EQ(PlainHttpCountOf(log, warning), 1u) << log;
    EXPECT_NE(log.find("insecure_flag=true"), std::string::npos) << log;
  }
  EXPECT_NE(cluster.coordinator()->Log().find(warning + coordinator_http), std::string::npos);
  EXPECT_NE(cluster.worker(0)->Log().find(warning + worker_http), std::string::npos);
}

}  // namespace
}  // namespace gpool::testing
