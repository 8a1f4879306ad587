// Metrics end to end (issue 34): the coordinator's and the workers' /metrics
// pages on a real cluster, linted by promtool and scraped by the real
// Prometheus server, behind the cluster's own authentication; and the JSON
// API the dashboard reads. promtool and prometheus come from Debian's
// `prometheus` package; without it the parts that need them skip.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <cstring>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "client/client.h"
#include "protocol/http/http_server.h"
#include "protocol/messages_client.h"
#include "protocol/security/keys.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr const char* kPrometheus = "/usr/bin/prometheus";

httplib::Result Get(const std::string& address, const std::string& path, const std::string& bearer = "") {
  auto host_port = http::ParseHostPort(address);
  EXPECT_TRUE(host_port.ok()) << address;
  httplib::Client client(host_port->first, host_port->second);
  client.set_read_timeout(10, 0);
  httplib::Headers headers;
  if (!bearer.empty()) headers.emplace("Authorization", "Bearer " + bearer);
  return client.Get(path, headers);
}

// The value of the first sample of `series` (exact name and labels as
// written), or -1.
double SampleValue(const std::string& page, const std::string& series) {
  const std::string prefix = series + " ";
  for (size_t at = page.find(prefix); at != std::string::npos; at = page.find(prefix, at + 1)) {
    if (at == 0 || page[at - 1] == '\n') return std::stod(page.substr(at + prefix.size()));
  }
  return -1;
}

// `promtool check metrics` over a page: its exit code and what it said.
CommandResult Promtool(const std::string& page, const TempDir& dir, const std::string& name) {
  const std::string path = dir.Join(name + ".prom");
  WriteFile(path, page);
  return RunCommand({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + path});
}

std::string AdminSecret(LocalCluster& cluster) {
  auto keys = security::ReadSecretKeyFile(cluster.SecretKeyFile("admin"));
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  return keys.ok() ? keys->secret_key : "";
}

class MetricsTest : public ::testing::Test {
 protected:
  void Start(LocalClusterOptions options) {
    cluster_ = std::make_unique<LocalCluster>(std::move(options));
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_));
  }
  // One job that runs (2 GPUs) and one that cannot (more GPUs than a node has).
  void SubmitRunningAndPending() {
    ASSERT_TRUE(client_->Submit(ShellJob("runs", 2, "sleep 300"), "").ok());
    ASSERT_TRUE(client_->Submit(ShellJob("waits", 64, "true"), "").ok());
  }
  std::string WorkerHttp(int index) {
    std::string address;
    WaitFor([&] {
      std::ifstream in(cluster_->WorkerDataDir(index) + "/http");
      return static_cast<bool>(in >> address);
    }, 10s);
    return address;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(MetricsTest, PagesNeedAUsersKeyAndReportTheCluster) {
  LocalClusterOptions options;
  options.workers = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  ASSERT_NO_FATAL_FAILURE(SubmitRunningAndPending());
  const std::string http = cluster_->http_address();
  ASSERT_FALSE(http.empty());

  // No credential, a malformed one, and a well-formed key nobody holds.
  auto none = Get(http, "/metrics");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"gpool\"");
  EXPECT_EQ(Get(http, "/metrics", "not-a-key")->status, 401);
  auto stranger = security::GenerateKeyPair();
  ASSERT_TRUE(stranger.ok());
  EXPECT_EQ(Get(http, "/metrics", stranger->secret_key)->status, 401);
  EXPECT_EQ(Get(http, "/api/v1/ListJobs", stranger->secret_key)->status, 401);

  const std::string admin = AdminSecret(*cluster_);
  std::string page;
  int status = 0;
  ASSERT_TRUE(WaitFor([&] {
    auto got = Get(http, "/metrics", admin);
    status = got ? got->status : 0;
    page = got ? got->body : "";
    // The pending job's reason comes with the scheduler's next cycle, which
    // a fast worker's "started" can beat: wait for it too.
    return SampleValue(page, "gpool_jobs{state=\"Pending\"}") == 1 &&
           SampleValue(page, "gpool_jobs{state=\"Running\"}") == 1 &&
           SampleValue(page, "gpool_jobs_pending{reason=\"task_gpus_over_largest\"}") == 1;
  }, 30s)) << "HTTP " << status << "\n" << page;
  EXPECT_EQ(SampleValue(page, "gpool_coordinator_leader"), 1);
  EXPECT_GE(SampleValue(page, "gpool_scheduler_cycles_total"), 1);
  EXPECT_GE(SampleValue(page, "gpool_raft_commits_total"), 2);
  EXPECT_EQ(SampleValue(page, "gpool_workers_connected"), 1);
  // Two of the node's GPUs are held whole: the per-GPU series say which.
  size_t held = 0;
  for (int gpu = 0; gpu < 4; ++gpu) {
    const std::regex series("gpool_gpu_allocated\\{node=\"" + cluster_->NodeName(0) + "\",gpu=\"" +
                            std::to_string(gpu) + "\",model=\"[^\"]*\"\\} 1\n");
    held += std::regex_search(page, series) ? 1 : 0;
  }
  EXPECT_EQ(held, 2u) << page;

  // The JSON API answers as the ZeroMQ API does, reads only.
  auto jobs = Get(http, "/api/v1/ListJobs?include_finished=true", admin);
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->status, 200) << jobs->body;
  EXPECT_EQ(nlohmann::json::parse(jobs->body)["jobs"].size(), 2u);
  auto write = Get(http, "/api/v1/CancelJob?job_id=1", admin);
  EXPECT_EQ(write->status, 404) << write->body;
  auto bad = Get(http, "/api/v1/GetJob?job_id=999", admin);
  EXPECT_EQ(bad->status, 404) << bad->body;
  EXPECT_EQ(nlohmann::json::parse(bad->body)["error"]["code"], "NotFound");

  // The worker's page: registered, the task it runs.
  const std::string worker_http = WorkerHttp(0);
  ASSERT_FALSE(worker_http.empty());
  std::string worker_page;
  ASSERT_TRUE(WaitFor([&] {
    auto got = Get(worker_http, "/metrics");
    worker_page = got && got->status == 200 ? got->body : "";
    return SampleValue(worker_page, "gpool_worker_tasks_running") == 1;
  }, 30s)) << worker_page;
  EXPECT_EQ(SampleValue(worker_page, "gpool_worker_registered"), 1);
  EXPECT_GE(SampleValue(worker_page, "gpool_worker_commands_total{type=\"bind\"}"), 1);

  // Every series the Grafana dashboard queries is one the pages export
  // (the NVML ones only where NVML measures: worker_metrics_test covers them).
  std::ifstream dashboard_file(std::string(GPOOL_SOURCE_DIR) + "/deploy/grafana/gpool-dashboard.json");
  const nlohmann::json dashboard = nlohmann::json::parse(dashboard_file);
  const std::set<std::string> nvml_only = {"gpool_gpu_utilization_ratio", "gpool_gpu_memory_used_bytes"};
  size_t queried = 0;
  for (const auto& panel : dashboard["panels"]) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel["targets"]) {
      const std::string expr = target["expr"];
      const std::regex name("gpool_[a-z_]+");
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator(); ++it) {
        std::string metric = it->str();
        for (const char* suffix : {"_bucket", "_count", "_sum"}) {
          if (metric.size() > std::strlen(suffix) && metric.ends_with(suffix)) metric.resize(metric.size() - std::strlen(suffix));
        }
        ++queried;
        if (nvml_only.count(metric) != 0) continue;
        const std::string type = "# TYPE " + metric + " ";
        EXPECT_TRUE(page.find(type) != std::string::npos || worker_page.find(type) != std::string::npos)
            << "the Grafana dashboard queries " << metric << ", which no page exports";
      }
    }
  }
  EXPECT_GT(queried, 20u);

  if (access(kPromtool, X_OK) != 0) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  TempDir dir;
  const CommandResult coordinator_lint = Promtool(page, dir, "coordinator");
  EXPECT_EQ(coordinator_lint.exit_code, 0) << coordinator_lint.out << coordinator_lint.err;
  const CommandResult worker_lint = Promtool(worker_page, dir, "worker");
  EXPECT_EQ(worker_lint.exit_code, 0) << worker_lint.out << worker_lint.err;
}

// Prometheus scrapes every replica of a 3-replica cluster and its workers
// with a viewer's credential in a file, as an operator would configure it,
// and a PromQL query returns the pending-job count.
TEST_F(MetricsTest, PrometheusScrapesAThreeReplicaCluster) {
  if (access(kPrometheus, X_OK) != 0) GTEST_SKIP() << "prometheus is not installed";
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 2;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  ASSERT_NO_FATAL_FAILURE(SubmitRunningAndPending());
  ASSERT_TRUE(client_->Submit(ShellJob("waits-too", 64, "true"), "").ok());

  TempDir dir;
  const std::string credentials = dir.Join("scrape.key");
  WriteFile(credentials, AdminSecret(*cluster_));
  std::string coordinators, workers;
  for (int i = 0; i < 3; ++i) coordinators += (i ? ", '" : "'") + cluster_->http_address(i) + "'";
  for (int i = 0; i < 2; ++i) workers += (i ? ", '" : "'") + WorkerHttp(i) + "'";
  WriteFile(dir.Join("prometheus.yml"),
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: gpool-coordinator\n"
            "    authorization: {type: Bearer, credentials_file: " + credentials + "}\n"
            "    static_configs: [{targets: [" + coordinators + "]}]\n"
            "  - job_name: gpool-worker\n"
            "    static_configs: [{targets: [" + workers + "]}]\n");
  int port = 0;
  {
    ReservedPort reserved;  // released just before Prometheus binds it
    port = reserved.port();
  }
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  Process prometheus("prometheus",
                     {kPrometheus, "--config.file=" + dir.Join("prometheus.yml"), "--storage.tsdb.path=" + dir.Join("tsdb"),
                      "--web.listen-address=" + listen, "--log.level=warn"},
                     dir.Join("prometheus.log"));
  auto query = [&](const std::string& promql) -> std::string {
    httplib::Client client("127.0.0.1", port);
    auto got = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!got || got->status != 200) return "";
    auto json = nlohmann::json::parse(got->body, nullptr, false);
    if (json.is_discarded() || json["data"]["result"].empty()) return "";
    return json["data"]["result"][0]["value"][1].get<std::string>();
  };
  std::string up, pending;
  ASSERT_TRUE(WaitFor([&] {
    up = query("count(up == 1)");
    pending = query("max(gpool_jobs{state=\"Pending\"})");
    return up == "5" && pending == "2";
  }, 60s)) << "up=" << up << " pending=" << pending << "\n" << prometheus.Log();
  // Exactly one replica says it leads.
  EXPECT_EQ(query("sum(gpool_coordinator_leader)"), "1");
  EXPECT_EQ(query("sum(gpool_worker_registered)"), "2");
  prometheus.Stop(SIGTERM);
}

}  // namespace
}  // namespace gpool::testing
