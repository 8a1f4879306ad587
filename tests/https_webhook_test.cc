// An https webhook through a whole coordinator (issue 48): a coordinator
// whose [health.webhook.*] sinks point at an https receiver in this test,
// whose certificate a throwaway CA signed (made with the openssl CLI). The
// sink that trusts that CA (ca_file) delivers an operator's cordon and
// uncordon, signed with the HMAC key of its secret_file, and the payload is
// the committed event; the sink that trusts another CA delivers nothing,
// logs the refused certificate, gives the event up, and the coordinator
// goes on serving; /metrics counts both sinks' requests and events. control/health/webhook_tls_test.cc covers the sink
// alone; this covers the config file, the leader's driver and the wiring.
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "client/client.h"
#include "protocol/event.h"
#include "protocol/messages_client.h"
#include "protocol/messages_tokens.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kHttpsHookSecret[] = "https-webhook-hmac-key-0123456789";

// The receiver's certificate for 127.0.0.1, signed by ca.pem; other-ca.pem
// is a CA that signed nothing here.
struct HttpsHookPki {
  std::string ca;
  std::string other_ca;
  std::string cert;
  std::string key;
};

HttpsHookPki MakeHttpsHookPki(const TempDir& dir) {
  WriteFile(dir.Join("san.ext"), "subjectAltName=IP:127.0.0.1\n");
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const CommandResult made = RunCommand(
      {"/bin/sh", "-c",
       "cd '" + dir.path() + "' && set -e;" +
           "openssl req -x509" + ec + " -keyout ca.key -out ca.pem -days 2 -subj /CN=gpool-hook-ca;" +
           "openssl req -x509" + ec + " -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=gpool-other-ca;" +
           "openssl req" + ec + " -keyout server.key -out server.csr -subj /CN=127.0.0.1;" +
           "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
           "-extfile san.ext"});
  EXPECT_EQ(made.exit_code, 0) << made.out << made.err;
  return {dir.Join("ca.pem"), dir.Join("other-ca.pem"), dir.Join("server.pem"), dir.Join("server.key")};
}

// HMAC-SHA256 over what docs/operations.md 3.6 says is signed, computed here
// rather than with the coordinator's own function, so a change to what the
// coordinator signs fails the test.
std::string ExpectedHookSignature(const std::string& timestamp, const std::string& body) {
  const std::string text = timestamp + "." + body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), kHttpsHookSecret, sizeof(kHttpsHookSecret) - 1,
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &length);
  std::string hex = "sha256=";
  char byte[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", mac[i]);
    hex += byte;
  }
  return hex;
}

struct HookRequest {
  std::string path;
  std::string body;
  httplib::Headers headers;
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// An https receiver on 127.0.0.1 (an ephemeral port) that records every POST
// under /hook/ and answers 200; the test judges what it got.
class HttpsHookReceiver {
 public:
  explicit HttpsHookReceiver(const HttpsHookPki& pki) : server_(pki.cert.c_str(), pki.key.c_str()) {
    server_.Post(R"(/hook/[a-z-]+)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      requests_.push_back({req.path, req.body, req.headers});
      res.status = 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~HttpsHookReceiver() {
    server_.stop();
    thread_.join();
  }
  HttpsHookReceiver(const HttpsHookReceiver&) = delete;
  HttpsHookReceiver& operator=(const HttpsHookReceiver&) = delete;

  bool valid() const { return server_.is_valid() && port_ > 0; }
  std::string Url(const std::string& sink) const {
    return "https://127.0.0.1:" + std::to_string(port_) + "/hook/" + sink;
  }
  std::vector<HookRequest> To(const std::string& sink) {
    std::lock_guard lock(mu_);
    std::vector<HookRequest> out;
    for (const auto& r : requests_) {
      if (r.path == "/hook/" + sink) out.push_back(r);
    }
    return out;
  }

 private:
  httplib::SSLServer server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<HookRequest> requests_;
};

// The first request to `sink` whose body is an event of `kind`.
std::optional<HookRequest> RequestOfKind(HttpsHookReceiver& receiver, const std::string& sink,
                                         const std::string& kind) {
  for (const auto& r : receiver.To(sink)) {
    const auto json = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (json.is_object() && json.value("kind", "") == kind) return r;
  }
  return std::nullopt;
}

// What a receiver does with a request: the signature over the timestamp and
// the raw body, and a timestamp within five minutes of its clock.
void ExpectSignedByTheSinkKey(const HookRequest& request) {
  const std::string timestamp = request.Header("X-Gpool-Timestamp");
  ASSERT_FALSE(timestamp.empty()) << "a sink with a secret_file signs every request";
  EXPECT_EQ(request.Header("X-Gpool-Signature"), ExpectedHookSignature(timestamp, request.body)) << request.body;
  EXPECT_LT(std::llabs(std::time(nullptr) - std::stoll(timestamp)), 300) << timestamp;
}

size_t CountOf(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// The value of the sample written exactly so (name and labels), or -1.
double HookSample(const std::string& page, const std::string& series) {
  const std::string prefix = series + " ";
  for (size_t at = page.find(prefix); at != std::string::npos; at = page.find(prefix, at + 1)) {
    if (at == 0 || page[at - 1] == '\n') return std::stod(page.substr(at + prefix.size()));
  }
  return -1;
}

TEST(HttpsWebhookTest, ASinkTrustingTheReceiversCaDeliversSignedEventsAndAWrongCaDeliversNone) {
  TempDir pki_dir;
  const HttpsHookPki pki = MakeHttpsHookPki(pki_dir);
  HttpsHookReceiver receiver(pki);
  ASSERT_TRUE(receiver.valid()) << "the receiver could not load its certificate";
  const std::string secret_file = pki_dir.Join("hook.secret");
  WriteFile(secret_file, std::string(kHttpsHookSecret) + "\n");
  chmod(secret_file.c_str(), 0600);
  // Both sinks take the operator's cordon and uncordon only; the untrusting
  // one gives an event up after two attempts, so its failure shows soon.
  const std::string filter = "\nsecret_file = " + secret_file + "\nkinds = node-cordoned, node-uncordoned" +
                             "\nbackoff_initial_ms = 50\nbackoff_max_ms = 100\n";
  const std::string config = pki_dir.Join("scheduler.conf");
  WriteFile(config, "[health.webhook.trusted]\nurl = " + receiver.Url("trusted") + "\nca_file = " + pki.ca + filter +
                        "\n[health.webhook.untrusted]\nurl = " + receiver.Url("untrusted") +
                        "\nca_file = " + pki.other_ca + "\nmax_attempts = 2" + filter);

  LocalClusterOptions options;
  options.workers = 1;
  options.coordinator_flags.insert(options.coordinator_flags.end(), {"--scheduler-config", config});
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));

  const std::string node = cluster.NodeName(0);
  const CommandResult cordoned = cluster.Cli({"node", "cordon", node});
  ASSERT_EQ(cordoned.exit_code, 0) << cordoned.err;
  std::optional<HookRequest> cordon;
  ASSERT_TRUE(WaitFor([&] { return (cordon = RequestOfKind(receiver, "trusted", "node-cordoned")).has_value(); }, 30s))
      << cluster.coordinator()->Log();
  ASSERT_NO_FATAL_FAILURE(ExpectSignedByTheSinkKey(*cordon));
  const nlohmann::json body = nlohmann::json::parse(cordon->body);
  EXPECT_EQ(body.value("node", ""), node) << body.dump();
  EXPECT_EQ(body.value("status", ""), "firing");
  EXPECT_EQ(body.value("reason", ""), "operator");
  EXPECT_EQ(body.value("sink", ""), "trusted");
  EXPECT_EQ(cordon->Header("X-Gpool-Sink"), "trusted");
  EXPECT_EQ(cordon->Header("Idempotency-Key"), body.value("dedupe_key", "-"));
  EXPECT_EQ(cordon->Header("X-Gpool-Attempt"), "1");
  // The payload is the committed event: same seq, kind, node and key.
  ListEvents request;
  request.limit = 500;
  auto events = client->ListEvents(request);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  bool committed = false;
  for (const ClusterEvent& event : events->events) {
    if (event.seq != body.value("seq", uint64_t{0})) continue;
    committed = event.kind == "node-cordoned" && event.node == node && event.dedupe_key == body.value("dedupe_key", "");
  }
  EXPECT_TRUE(committed) << body.dump();

  // The sink that trusts another CA: the receiver's certificate is refused
  // in the handshake (no request reaches it), said in the log, and the
  // event given up after its two attempts.
  const std::string given_up = "webhook untrusted: gave up on event seq=" + std::to_string(body.value("seq", 0));
  ASSERT_TRUE(WaitFor([&] { return cluster.coordinator()->Log().find(given_up) != std::string::npos; }, 30s))
      << cluster.coordinator()->Log();
  const std::string log = cluster.coordinator()->Log();
  EXPECT_GE(CountOf(log, "webhook TLS failed sink=untrusted"), 2u) << log;
  EXPECT_NE(log.find("error=\"SSLServerVerification\""), std::string::npos) << log;
  EXPECT_EQ(CountOf(log, "webhook TLS failed sink=trusted"), 0u) << log;
  EXPECT_TRUE(receiver.To("untrusted").empty());

  // No crash: the coordinator still serves, and the trusted sink delivers
  // the uncordon as the cordon's resolution (same dedupe key).
  ASSERT_TRUE(cluster.coordinator()->Running());
  ASSERT_EQ(cluster.Cli({"node", "uncordon", node}).exit_code, 0);
  std::optional<HookRequest> uncordon;
  ASSERT_TRUE(
      WaitFor([&] { return (uncordon = RequestOfKind(receiver, "trusted", "node-uncordoned")).has_value(); }, 30s))
      << cluster.coordinator()->Log();
  ASSERT_NO_FATAL_FAILURE(ExpectSignedByTheSinkKey(*uncordon));
  const nlohmann::json resolved = nlohmann::json::parse(uncordon->body);
  EXPECT_EQ(resolved.value("status", ""), "resolved");
  EXPECT_EQ(resolved.value("dedupe_key", ""), body.value("dedupe_key", "-"));
  EXPECT_GT(resolved.value("seq", uint64_t{0}), body.value("seq", uint64_t{0}));
  EXPECT_EQ(receiver.To("trusted").size(), 2u) << "each event once, nothing else";
  EXPECT_TRUE(receiver.To("untrusted").empty());

  // The leader's /metrics counts both: the trusted sink's two deliveries,
  // and the untrusted one's failed requests and the event it gave up.
  auto token = client->CreateToken(CreateToken{TokenScope::kMetrics, 0});
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  const std::string http = cluster.http_address();
  httplib::Client scraper(http.substr(0, http.rfind(':')), std::stoi(http.substr(http.rfind(':') + 1)));
  std::string page;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto got = scraper.Get("/metrics", httplib::Headers{{"Authorization", "Bearer " + token->token}});
        page = got && got->status == 200 ? got->body : "";
        return HookSample(page, "gpool_webhook_events_total{sink=\"trusted\",outcome=\"delivered\"}") == 2 &&
               HookSample(page, "gpool_webhook_events_total{sink=\"untrusted\",outcome=\"given_up\"}") >= 1;
      },
      30s))
      << page;
  EXPECT_EQ(HookSample(page, "gpool_webhook_requests_total{sink=\"trusted\",result=\"failed\"}"), 0) << page;
  EXPECT_EQ(HookSample(page, "gpool_webhook_requests_total{sink=\"untrusted\",result=\"ok\"}"), 0) << page;
  EXPECT_GE(HookSample(page, "gpool_webhook_requests_total{sink=\"untrusted\",result=\"failed\"}"), 2) << page;
  // The page with these series is still well-formed (Debian's prometheus package has promtool).
  if (access("/usr/bin/promtool", X_OK) == 0) {
    WriteFile(pki_dir.Join("page.prom"), page);
    const CommandResult lint =
        RunCommand({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + pki_dir.Join("page.prom")});
    EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
  }
}

}  // namespace
}  // namespace gpool::testing
