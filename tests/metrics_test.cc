// Metrics end to end (issue 34): the coordinator's and the workers' /metrics
// pages on a real cluster, linted by promtool and scraped by the real
// Prometheus server over HTTPS with an API token (issue 48), behind the
// cluster's own authentication; and the JSON API the dashboard reads, with
// token scopes, secret keys refused, and revocation seen by every replica. promtool and prometheus come from Debian's
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
#include "protocol/messages_tokens.h"
#include "protocol/security/keys.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr const char* kPrometheus = "/usr/bin/prometheus";

// A GET over HTTPS trusting `ca` (the cluster's self-signed certificate),
// or over plain HTTP when `ca` is empty.
httplib::Result Get(const std::string& address, const std::string& path, const std::string& bearer = "",
                    const std::string& ca = "") {
  auto host_port = http::ParseHostPort(address);
  EXPECT_TRUE(host_port.ok()) << address;
  httplib::Headers headers;
  if (!bearer.empty()) headers.emplace("Authorization", "Bearer " + bearer);
  if (ca.empty()) {
    httplib::Client client(host_port->first, host_port->second);
    client.set_read_timeout(10, 0);
    return client.Get(path, headers);
  }
  httplib::SSLClient client(host_port->first, host_port->second);
  client.set_ca_cert_path(ca.c_str());
  client.enable_server_certificate_verification(true);
  client.set_read_timeout(10, 0);
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
    options.http_tls = true;
    cluster_ = std::make_unique<LocalCluster>(std::move(options));
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_));
    ca_ = cluster_->HttpCertFile();
  }
  // A token of the test user (the --admin-key's holder), as `gpool token create` makes it.
  std::string Token(TokenScope scope, std::string* id = nullptr) {
    CreateToken request;
    request.scope = scope;
    auto reply = client_->CreateToken(request);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    if (!reply.ok()) return "";
    if (id != nullptr) *id = reply->info.id;
    return reply->token;
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
  std::string ca_;
};

TEST_F(MetricsTest, PagesNeedATokenOverTlsAndReportTheCluster) {
  LocalClusterOptions options;
  options.workers = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  ASSERT_NO_FATAL_FAILURE(SubmitRunningAndPending());
  const std::string http = cluster_->http_address();
  ASSERT_FALSE(http.empty());

  // No credential, a malformed one, and a well-formed token nobody made.
  auto none = Get(http, "/metrics", "", ca_);
  ASSERT_TRUE(none) << httplib::to_string(none.error());
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"gpool\"");
  EXPECT_EQ(Get(http, "/metrics", "not-a-token", ca_)->status, 401);
  EXPECT_EQ(Get(http, "/metrics", "gpt_" + std::string(64, 'a'), ca_)->status, 401);
  // A secret key is never a credential over HTTP, not even the admin's: it
  // is refused with how to make a token.
  const std::string admin_key = AdminSecret(*cluster_);
  for (const std::string path : {"/metrics", "/api/v1/ListJobs"}) {
    auto key = Get(http, path, admin_key, ca_);
    ASSERT_TRUE(key);
    EXPECT_EQ(key->status, 401) << path << " " << key->body;
    EXPECT_NE(key->body.find("gpool token create"), std::string::npos) << key->body;
  }
  // Plain HTTP to the TLS port gets no HTTP answer at all.
  const std::string metrics_token = Token(TokenScope::kMetrics);
  auto plain = Get(http, "/metrics", metrics_token);
  EXPECT_FALSE(plain && plain->status == 200);

  std::string page;
  int status = 0;
  ASSERT_TRUE(WaitFor([&] {
    auto got = Get(http, "/metrics", metrics_token, ca_);
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
  // Issue 49: the loop's turns are measured on the live loop (Coordinator::Run).
  EXPECT_GE(SampleValue(page, "gpool_loop_iteration_seconds_count"), 1);
  EXPECT_GE(SampleValue(page, "gpool_loop_iteration_max_seconds"), 0);
  // Two of the node's GPUs are held whole: the per-GPU series say which.
  size_t held = 0;
  for (int gpu = 0; gpu < 4; ++gpu) {
    const std::regex series("gpool_gpu_allocated\\{node=\"" + cluster_->NodeName(0) + "\",gpu=\"" +
                            std::to_string(gpu) + "\",model=\"[^\"]*\"\\} 1\n");
    held += std::regex_search(page, series) ? 1 : 0;
  }
  EXPECT_EQ(held, 2u) << page;

  // The metrics token opens /metrics only.
  auto metrics_on_api = Get(http, "/api/v1/ListJobs", metrics_token, ca_);
  ASSERT_TRUE(metrics_on_api);
  EXPECT_EQ(metrics_on_api->status, 403) << metrics_on_api->body;
  EXPECT_NE(metrics_on_api->body.find("scope metrics"), std::string::npos) << metrics_on_api->body;

  // A read token: the JSON API answers as the ZeroMQ API does, reads only.
  const std::string read_token = Token(TokenScope::kRead);
  auto jobs = Get(http, "/api/v1/ListJobs?include_finished=true", read_token, ca_);
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->status, 200) << jobs->body;
  EXPECT_EQ(nlohmann::json::parse(jobs->body)["jobs"].size(), 2u);
  // The JSON API serves reads only (gateway_bridge.h), whatever the token's
  // scope; scopes against mutations are gateway_tokens_test.cc's.
  auto write = Get(http, "/api/v1/CancelJob?job_id=1", read_token, ca_);
  EXPECT_EQ(write->status, 404) << write->body;
  auto bad = Get(http, "/api/v1/GetJob?job_id=999", read_token, ca_);
  EXPECT_EQ(bad->status, 404) << bad->body;
  EXPECT_EQ(nlohmann::json::parse(bad->body)["error"]["code"], "NotFound");
  EXPECT_EQ(Get(http, "/api/v1/CreateToken?scope=write", read_token, ca_)->status, 404);

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

// Prometheus scrapes every replica of a 3-replica cluster over HTTPS (the
// cluster's self-signed certificate as its CA) with a metrics token in a
// file, as an operator would configure it, and its workers; a PromQL query
// returns the pending-job count.
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
  WriteFile(credentials, Token(TokenScope::kMetrics));
  std::string coordinators, workers;
  for (int i = 0; i < 3; ++i) coordinators += (i ? ", '" : "'") + cluster_->http_address(i) + "'";
  for (int i = 0; i < 2; ++i) workers += (i ? ", '" : "'") + WorkerHttp(i) + "'";
  WriteFile(dir.Join("prometheus.yml"),
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: gpool-coordinator\n"
            "    scheme: https\n"
            "    tls_config: {ca_file: " + ca_ + "}\n"
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

// A token is replicated state: every replica takes it, and once it is
// revoked every replica refuses it (on /metrics and on the API), whichever
// replica it was made through. Removing its owner revokes it too.
TEST_F(MetricsTest, ARevokedTokenIsRefusedByEveryReplica) {
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  std::string id;
  const std::string token = Token(TokenScope::kRead, &id);
  ASSERT_FALSE(token.empty());
  // Made by the --admin-key's holder; another user's token, for the removal.
  ASSERT_EQ(cluster_->Cli({"admin", "user", "create", "carol", "--key", cluster_->PublicKeyFile("carol"), "--uid",
                           "4242"}).exit_code, 0);
  ASSERT_EQ(cluster_->Cli({"admin", "role", "grant", "carol", "viewer"}).exit_code, 0);
  ClientOptions carol_options;
  carol_options.endpoints = cluster_->client_endpoint();
  cluster_->SecureClient(carol_options);
  auto carol_keys = security::ReadSecretKeyFile(cluster_->SecretKeyFile("carol"));
  ASSERT_TRUE(carol_keys.ok());
  carol_options.curve_keys = *carol_keys;
  auto carol = Client::Connect(carol_options);
  ASSERT_TRUE(carol.ok()) << carol.status().ToString();
  auto carols = (*carol)->CreateToken(CreateToken{TokenScope::kMetrics, 0});
  ASSERT_TRUE(carols.ok()) << carols.status().ToString();

  // Every replica takes both (a follower as soon as it has applied them).
  const auto status_on = [&](int replica, const std::string& path, const std::string& bearer) {
    auto got = Get(cluster_->http_address(replica), path, bearer, ca_);
    return got ? got->status : 0;
  };
  for (int replica = 0; replica < 3; ++replica) {
    EXPECT_TRUE(WaitFor([&] { return status_on(replica, "/metrics", token) == 200; }, 10s)) << replica;
    EXPECT_TRUE(WaitFor([&] { return status_on(replica, "/metrics", carols->token) == 200; }, 10s)) << replica;
  }
  // `gpool token list` shows it without its text or hash.
  const CommandResult listed = cluster_->Cli({"token", "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find(id), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find(token.substr(4)), std::string::npos);

  const CommandResult revoked = cluster_->Cli({"token", "revoke", id});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
  ASSERT_EQ(cluster_->Cli({"admin", "user", "delete", "carol"}).exit_code, 0);
  for (int replica = 0; replica < 3; ++replica) {
    EXPECT_TRUE(WaitFor([&] { return status_on(replica, "/metrics", token) == 401; }, 10s)) << replica;
    EXPECT_EQ(status_on(replica, "/api/v1/ListJobs", token), 401) << replica;
    EXPECT_TRUE(WaitFor([&] { return status_on(replica, "/metrics", carols->token) == 401; }, 10s)) << replica;
  }
  // Revoking again: nothing to revoke.
  EXPECT_NE(cluster_->Cli({"token", "revoke", id}).exit_code, 0);
}

}  // namespace
}  // namespace gpool::testing

namespace gpool::testing {
namespace {

// The dashboard's sign-in (issue 48): a read token buys a session cookie
// that is HttpOnly, Secure and SameSite=Strict; the cookie reads the API and
// changes nothing; signing out ends it on the server, and so does revoking
// its token. A metrics token or a secret key buys no session.
TEST_F(MetricsTest, DashboardSessionsAreCookiesThatReadOnly) {
  LocalClusterOptions options;
  options.workers = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  auto host_port = http::ParseHostPort(cluster_->http_address());
  ASSERT_TRUE(host_port.ok());
  httplib::SSLClient https(host_port->first, host_port->second);
  https.set_ca_cert_path(ca_.c_str());
  https.enable_server_certificate_verification(true);
  const auto sign_in = [&](const std::string& token) {
    return https.Post("/ui/session", nlohmann::json{{"token", token}}.dump(), "application/json");
  };
  const auto with_cookie = [&](const std::string& path, const std::string& cookie) {
    return https.Get(path, httplib::Headers{{"Cookie", cookie}});
  };

  EXPECT_EQ(sign_in(Token(TokenScope::kMetrics))->status, 403);
  EXPECT_EQ(sign_in(AdminSecret(*cluster_))->status, 401);
  EXPECT_EQ(https.Post("/ui/session", "not json", "application/json")->status, 400);

  std::string id;
  const std::string token = Token(TokenScope::kWrite, &id);
  auto signed_in = sign_in(token);
  ASSERT_TRUE(signed_in);
  ASSERT_EQ(signed_in->status, 200) << signed_in->body;
  const std::string set_cookie = signed_in->get_header_value("Set-Cookie");
  for (const char* attribute : {"; HttpOnly", "; Secure", "; SameSite=Strict", "; Path=/", "; Max-Age="}) {
    EXPECT_NE(set_cookie.find(attribute), std::string::npos) << attribute << " in " << set_cookie;
  }
  ASSERT_EQ(set_cookie.rfind("gpool_session=", 0), 0u) << set_cookie;
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  EXPECT_EQ(cookie.find(token), std::string::npos) << "the cookie must not carry the token";

  EXPECT_EQ(with_cookie("/api/v1/ListNodes", cookie)->status, 200);
  EXPECT_EQ(with_cookie("/metrics", cookie)->status, 200);
  // Read-only, whatever the token's scope: a cookie is sent by the browser on its own.
  auto cancel = with_cookie("/api/v1/CancelJob?job_id=1", cookie);
  EXPECT_EQ(cancel->status, 403) << cancel->body;
  EXPECT_EQ(with_cookie("/api/v1/ListNodes", "gpool_session=" + std::string(64, '0'))->status, 401);

  // Signing out ends it on the server: the same cookie no longer opens anything.
  auto out = https.Post("/ui/session/end", httplib::Headers{{"Cookie", cookie}}, "", "application/json");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, 200);
  EXPECT_NE(out->get_header_value("Set-Cookie").find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(with_cookie("/api/v1/ListNodes", cookie)->status, 401);

  // Revoking the token ends a session made with it.
  auto again = sign_in(token);
  ASSERT_EQ(again->status, 200);
  const std::string second = again->get_header_value("Set-Cookie").substr(0, again->get_header_value("Set-Cookie").find(';'));
  EXPECT_EQ(with_cookie("/api/v1/ListNodes", second)->status, 200);
  ASSERT_EQ(cluster_->Cli({"token", "revoke", id}).exit_code, 0);
  EXPECT_EQ(with_cookie("/api/v1/ListNodes", second)->status, 401);
}

}  // namespace
}  // namespace gpool::testing
