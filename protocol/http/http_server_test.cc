#include "protocol/http/http_server.h"

#include <unistd.h>

#include <filesystem>
#include <utility>
#include <vector>

#include <httplib.h>

#include <gtest/gtest.h>

#include "protocol/http/testing/self_signed_cert.h"
#include "protocol/security/keys.h"

namespace gpool::http {
namespace {

Result<std::unique_ptr<HttpServer>> Echo(size_t max_body = 1 << 20) {
  HttpServerOptions options;
  options.address = "127.0.0.1:0";
  options.max_body_bytes = max_body;
  return HttpServer::Start(options, [](const HttpRequest& request) {
    if (request.path == "/boom") throw std::runtime_error("bad");
    if (request.path == "/denied") return HttpResponse::Error(Status::PermissionDenied("no"));
    return HttpResponse::Text(200, request.method + " " + request.path + " q=" + request.Param("q", "-") +
                                       " bearer=" + request.bearer + " body=" + request.body);
  });
}

TEST(HttpServerTest, PassesMethodPathQueryBearerAndBody) {
  auto server = Echo();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_GT((*server)->port(), 0);
  httplib::Client client("127.0.0.1", (*server)->port());
  auto got = client.Get("/a/b?q=x%20y", {{"Authorization", "Bearer tok"}});
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "GET /a/b q=x y bearer=tok body=");
  auto posted = client.Post("/p", "hello", "text/plain");
  ASSERT_TRUE(posted);
  EXPECT_EQ(posted->body, "POST /p q=- bearer= body=hello");
}

// A user's secret key is their bearer credential (docs/operations.md 3.7),
// sent verbatim by curl, Prometheus and the dashboard. cpp-httplib 0.11
// percent-decodes header values: a key holding "%41" arrived as "A" and was
// refused (about 3 % of keys; MetricsTest failed now and then). Generated
// keys hold no '%' (keys.h), so every one arrives as sent.
TEST(HttpServerTest, EveryGeneratedSecretKeyArrivesAsTheBearerUnchanged) {
  auto server = Echo();
  ASSERT_TRUE(server.ok());
  httplib::Client client("127.0.0.1", (*server)->port());
  for (int i = 0; i < 200; ++i) {
    auto pair = security::GenerateKeyPair();
    ASSERT_TRUE(pair.ok());
    auto got = client.Get("/k", {{"Authorization", "Bearer " + pair->secret_key}});
    ASSERT_TRUE(got);
    ASSERT_EQ(got->body, "GET /k q=- bearer=" + pair->secret_key + " body=");
  }
  // What the library does to a '%' escape, which the keys avoid.
  auto escaped = client.Get("/k", {{"Authorization", "Bearer ab%41cd"}});
  ASSERT_TRUE(escaped);
  EXPECT_EQ(escaped->body, "GET /k q=- bearer=abAcd body=") << "the library no longer decodes header values: "
                                                                "keys.h's rule against '%' can go";
}

TEST(HttpServerTest, TypedErrorsAndExceptionsBecomeJsonErrors) {
  auto server = Echo();
  ASSERT_TRUE(server.ok());
  httplib::Client client("127.0.0.1", (*server)->port());
  auto denied = client.Get("/denied");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403);
  EXPECT_EQ(denied->body, R"({"error":{"code":"PermissionDenied","message":"no"}})");
  auto boom = client.Get("/boom");
  ASSERT_TRUE(boom);
  EXPECT_EQ(boom->status, 500);
  EXPECT_NE(boom->body.find("Internal"), std::string::npos);
}

TEST(HttpServerTest, RefusesAnOversizeBody) {
  auto server = Echo(/*max_body=*/16);
  ASSERT_TRUE(server.ok());
  httplib::Client client("127.0.0.1", (*server)->port());
  auto got = client.Post("/p", std::string(1000, 'x'), "text/plain");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 413);
}

TEST(HttpServerTest, BadAddressesAreTypedErrors) {
  for (const char* bad : {"", "nohost", "127.0.0.1:", "127.0.0.1:99999", ":80", "127.0.0.1:x", "::1:80",
                          "[::1:80", "*:80", "127.0.0.1:*", "h /x:80"}) {
    HttpServerOptions options;
    options.address = bad;
    auto server = HttpServer::Start(options, [](const HttpRequest&) { return HttpResponse{}; });
    EXPECT_FALSE(server.ok()) << bad;
    EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto v6 = ParseHostPort("[::1]:8080");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->first, "::1");
  EXPECT_EQ(v6->second, 8080);
  EXPECT_EQ(ParseHostPort("127.0.0.1:99999").status().message(),
            "HTTP address \"127.0.0.1:99999\": expected a port from 0 to 65535");
}

TEST(HttpServerTest, APortInUseIsUnavailable) {
  auto first = Echo();
  ASSERT_TRUE(first.ok());
  HttpServerOptions options;
  options.address = (*first)->address();
  auto second = HttpServer::Start(options, [](const HttpRequest&) { return HttpResponse{}; });
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
}

class HttpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/https-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    auto server = testing::MakeSelfSignedCert(dir_, "server");
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_cert_ = *server;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  Result<std::unique_ptr<HttpServer>> Start(HttpTlsOptions tls) {
    HttpServerOptions options;
    options.tls = std::move(tls);
    options.timeout_ms = 2'000;
    return HttpServer::Start(options, [](const HttpRequest& request) {
      return HttpResponse::Text(200, "tls " + request.path + " bearer=" + request.bearer + " cookie=" + request.cookie);
    });
  }
  std::string dir_;
  testing::SelfSignedCert server_cert_;
};

TEST_F(HttpsTest, ServesOverTlsAndRefusesPlainHttp) {
  auto server = Start({server_cert_.cert_file, server_cert_.key_file, ""});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_TRUE((*server)->tls());
  httplib::SSLClient client("127.0.0.1", (*server)->port());
  client.set_ca_cert_path(server_cert_.cert_file.c_str());
  client.enable_server_certificate_verification(true);
  auto got = client.Get("/m", {{"Authorization", "Bearer gpt_x"}, {"Cookie", "gpool_session=s1"}});
  ASSERT_TRUE(got) << httplib::to_string(got.error());
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "tls /m bearer=gpt_x cookie=gpool_session=s1");
  // Plain HTTP to the TLS port gets no HTTP answer: the bytes are not a
  // TLS handshake, so the server drops the connection.
  httplib::Client plain("127.0.0.1", (*server)->port());
  plain.set_read_timeout(2, 0);
  auto refused = plain.Get("/m", {{"Authorization", "Bearer gpt_x"}});
  EXPECT_FALSE(refused && refused->status == 200);
  // A client that does not trust the certificate refuses the server.
  httplib::SSLClient untrusting("127.0.0.1", (*server)->port());
  untrusting.enable_server_certificate_verification(true);
  auto unverified = untrusting.Get("/m");
  EXPECT_FALSE(unverified);
}

TEST_F(HttpsTest, AClientCaRequiresAClientCertificate) {
  auto ca = testing::MakeSelfSignedCert(dir_, "client");
  ASSERT_TRUE(ca.ok());
  auto server = Start({server_cert_.cert_file, server_cert_.key_file, ca->cert_file});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  httplib::SSLClient anonymous("127.0.0.1", (*server)->port());
  anonymous.set_ca_cert_path(server_cert_.cert_file.c_str());
  anonymous.enable_server_certificate_verification(true);
  EXPECT_FALSE(anonymous.Get("/m"));
  httplib::SSLClient holder("127.0.0.1", (*server)->port(), ca->cert_file, ca->key_file);
  holder.set_ca_cert_path(server_cert_.cert_file.c_str());
  holder.enable_server_certificate_verification(true);
  auto got = holder.Get("/m");
  ASSERT_TRUE(got) << httplib::to_string(got.error());
  EXPECT_EQ(got->status, 200);
}

TEST_F(HttpsTest, BadCertificateFilesAreTypedErrors) {
  auto missing = Start({dir_ + "/none.pem", server_cert_.key_file, ""});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("--http-cert"), std::string::npos) << missing.status().message();
  auto other = testing::MakeSelfSignedCert(dir_, "other");
  ASSERT_TRUE(other.ok());
  auto mismatched = Start({server_cert_.cert_file, other->key_file, ""});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_EQ(mismatched.status().code(), StatusCode::kInvalidArgument);
}

// Issue 48: plain HTTP only with --http-insecure, on every address.
TEST(HttpTlsFlagsTest, PlainHttpOnlyWithInsecure) {
  const HttpTlsOptions none;
  const HttpTlsOptions cert{"c.pem", "k.pem", ""};
  for (const char* address : {"127.0.0.1:0", "[::1]:7480", "localhost:7480", "0.0.0.0:7480", "[::]:7480"}) {
    const Status plain = CheckHttpTlsFlags(address, none, false);
    EXPECT_EQ(plain.code(), StatusCode::kInvalidArgument) << address;
    EXPECT_NE(plain.message().find("--http-cert"), std::string::npos) << plain.message();
    EXPECT_NE(plain.message().find("--http-insecure"), std::string::npos) << plain.message();
    EXPECT_NE(plain.message().find(address), std::string::npos) << plain.message();
    EXPECT_TRUE(CheckHttpTlsFlags(address, none, true).ok()) << address;
    EXPECT_TRUE(CheckHttpTlsFlags(address, cert, false).ok()) << address;
    EXPECT_TRUE(CheckHttpTlsFlags(address, {"c.pem", "k.pem", "ca.pem"}, false).ok()) << address;
  }
  EXPECT_EQ(CheckHttpTlsFlags("0.0.0.0:7480", cert, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckHttpTlsFlags("0.0.0.0:7480", {"c.pem", "", ""}, false).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckHttpTlsFlags("0.0.0.0:7480", {"", "k.pem", ""}, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckHttpTlsFlags("127.0.0.1:0", {"", "", "ca.pem"}, true).code(), StatusCode::kInvalidArgument);
  // A bad address is named before any TLS question.
  const Status bad = CheckHttpTlsFlags("127.0.0.1", none, true);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("HTTP address"), std::string::npos) << bad.message();
}

// HTTP off (no address): nothing to check, and a TLS flag or --http-insecure
// alone is refused rather than silently ignored.
TEST(HttpTlsFlagsTest, NoAddressMeansOffAndRefusesPortFlags) {
  EXPECT_TRUE(CheckHttpTlsFlags("", {}, false).ok());
  for (const auto& [tls, insecure] : std::vector<std::pair<HttpTlsOptions, bool>>{
           {{}, true}, {{"c.pem", "k.pem", ""}, false}, {{"", "", "ca.pem"}, false}, {{"", "k.pem", ""}, false}}) {
    const Status off = CheckHttpTlsFlags("", tls, insecure);
    EXPECT_EQ(off.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(off.message().find("--http-address"), std::string::npos) << off.message();
  }
}

}  // namespace
}  // namespace gpool::http
