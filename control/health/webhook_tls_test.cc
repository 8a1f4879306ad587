// https webhooks (issue 48): a receiver whose certificate a throwaway CA
// signed (made with the openssl CLI) gets the event when the sink trusts
// that CA (ca_file), and checks the HMAC signature and its timestamp; the
// same receiver behind a CA the sink does not trust gets nothing.
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "control/health/webhook_sink.h"
#include "protocol/event.h"

namespace gpool::health {
namespace {

constexpr auto kTlsDeadline = std::chrono::seconds(30);
constexpr char kSecret[] = "a-shared-secret-of-the-sink-0123";

// A CA, and a certificate for 127.0.0.1 it signed, plus a second CA that
// signed nothing here; in a fresh directory removed afterwards.
class Pki {
 public:
  Pki() {
    char pattern[] = "/tmp/gpool-webhook-tls-XXXXXX";
    dir_ = mkdtemp(pattern);
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string script =
        "cd " + dir_ + " && exec >openssl.log 2>&1 && set -e;"
        "openssl req -x509" + ec + " -keyout ca.key -out ca.pem -days 2 -subj /CN=gpool-test-ca;"
        "openssl req -x509" + ec + " -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=gpool-other-ca;"
        "openssl req" + ec + " -keyout server.key -out server.csr -subj /CN=127.0.0.1;"
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
        "-extfile san.ext";
    std::ofstream(Path("san.ext")) << "subjectAltName=IP:127.0.0.1\n";
    made_ = std::system(("sh -c '" + script + "'").c_str()) == 0;
    std::ofstream(Path("secret")) << kSecret << "\n";
  }
  ~Pki() { std::filesystem::remove_all(dir_); }
  bool made() const { return made_; }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string Log() const {
    std::ifstream in(Path("openssl.log"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string dir_;
  bool made_ = false;
};

std::string Hmac(const std::string& text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), kSecret, sizeof(kSecret) - 1, reinterpret_cast<const unsigned char*>(text.data()), text.size(),
       mac, &length);
  std::string hex = "sha256=";
  char byte[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", mac[i]);
    hex += byte;
  }
  return hex;
}

// An https receiver that accepts a POST only with a valid signature over
// its timestamp and body, and a timestamp within five minutes.
class TlsReceiver {
 public:
  explicit TlsReceiver(const Pki& pki) : server_(pki.Path("server.pem").c_str(), pki.Path("server.key").c_str()) {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string timestamp = req.get_header_value("X-Gpool-Timestamp");
      const std::string signature = req.get_header_value("X-Gpool-Signature");
      const long long age = timestamp.empty() ? 1'000'000 : std::llabs(std::time(nullptr) - std::stoll(timestamp));
      const bool valid = !signature.empty() && signature == Hmac(timestamp + "." + req.body) && age < 300;
      std::lock_guard lock(mu_);
      if (valid) {
        accepted_.push_back(nlohmann::json::parse(req.body)["seq"].get<uint64_t>());
      } else {
        ++refused_;
      }
      res.status = valid ? 200 : 401;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~TlsReceiver() {
    server_.stop();
    thread_.join();
  }
  std::string Url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  std::vector<uint64_t> accepted() {
    std::lock_guard lock(mu_);
    return accepted_;
  }
  int refused() {
    std::lock_guard lock(mu_);
    return refused_;
  }

 private:
  httplib::SSLServer server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<uint64_t> accepted_;
  int refused_ = 0;
};

ClusterEvent TlsEvent(uint64_t seq) {
  ClusterEvent e;
  e.seq = seq;
  e.time_ms = 1'793'000'000'000;
  e.kind = "node-lost";
  e.node = "node-1";
  e.message = "event " + std::to_string(seq);
  return e;
}

WebhookSinkConfig TlsConfig(const TlsReceiver& receiver, const std::string& ca_file, const std::string& secret_file) {
  WebhookSinkConfig c;
  c.name = "tls";
  c.url = receiver.Url();
  c.ca_file = ca_file;
  c.secret_file = secret_file;
  c.timeout_ms = 5000;
  c.max_attempts = 2;
  c.backoff_initial_ms = 1;
  c.backoff_max_ms = 2;
  return c;
}

TEST(WebhookTlsTest, ATrustedReceiverGetsSignedEventsAndAnUntrustedOneNothing) {
  Pki pki;
  ASSERT_TRUE(pki.made()) << pki.Log();
  TlsReceiver receiver(pki);

  std::mutex mu;
  std::condition_variable done;
  uint64_t cursor = 0;
  auto on_cursor = [&](uint64_t c) {
    std::lock_guard lock(mu);
    cursor = c;
    done.notify_all();
  };
  auto trusted = WebhookSink::Open({.config = TlsConfig(receiver, pki.Path("ca.pem"), pki.Path("secret")),
                                    .on_cursor = on_cursor});
  ASSERT_TRUE(trusted.ok()) << trusted.status().ToString();
  (*trusted)->Offer({TlsEvent(1), TlsEvent(2)});
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(done.wait_for(lock, kTlsDeadline, [&] { return cursor == 2; }));
  }
  EXPECT_EQ((*trusted)->stats().delivered, 2u);
  EXPECT_EQ(receiver.accepted(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(receiver.refused(), 0);
  (*trusted)->Stop();

  // Unsigned (no secret_file): the receiver refuses it (401, given up).
  cursor = 0;
  auto unsigned_sink = WebhookSink::Open({.config = TlsConfig(receiver, pki.Path("ca.pem"), ""), .on_cursor = on_cursor});
  ASSERT_TRUE(unsigned_sink.ok()) << unsigned_sink.status().ToString();
  (*unsigned_sink)->Offer({TlsEvent(3)});
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(done.wait_for(lock, kTlsDeadline, [&] { return cursor == 3; }));
  }
  EXPECT_EQ((*unsigned_sink)->stats().given_up, 1u);
  EXPECT_EQ(receiver.refused(), 1);
  (*unsigned_sink)->Stop();

  // A CA that did not sign the receiver's certificate: the handshake fails,
  // nothing reaches the receiver, the event is given up after max_attempts.
  cursor = 0;
  auto untrusted = WebhookSink::Open({.config = TlsConfig(receiver, pki.Path("other-ca.pem"), pki.Path("secret")),
                                      .on_cursor = on_cursor});
  ASSERT_TRUE(untrusted.ok()) << untrusted.status().ToString();
  (*untrusted)->Offer({TlsEvent(4)});
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(done.wait_for(lock, kTlsDeadline, [&] { return cursor == 4; }));
  }
  const WebhookSinkStats stats = (*untrusted)->stats();
  EXPECT_EQ(stats.delivered, 0u);
  EXPECT_EQ(stats.given_up, 1u);
  EXPECT_EQ(stats.attempts, 2u);
  EXPECT_EQ(receiver.accepted(), (std::vector<uint64_t>{1, 2})) << "the untrusted sink's event never arrived";
  EXPECT_EQ(receiver.refused(), 1) << "nor was it seen and refused: TLS stopped it";
}

}  // namespace
}  // namespace gpool::health
