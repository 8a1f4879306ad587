// The coordinator's HTTP port flags (issue 48): plain HTTP only with
// --http-insecure, on every address, loopback included; HTTP off needs none
// of them. main.cc and Coordinator::StartHttp both go through CheckHttpFlags.
#include <gtest/gtest.h>

#include "control/coordinator_options.h"

namespace gpool::control {
namespace {

CoordinatorOptions CoordinatorOptionsWithHttpAt(const std::string& address) {
  CoordinatorOptions options;
  options.http_address = address;
  return options;
}

TEST(CoordinatorHttpFlagsTest, PlainHttpNeedsInsecureOnEveryAddress) {
  for (const char* address : {"127.0.0.1:0", "[::1]:7480", "0.0.0.0:7480"}) {
    CoordinatorOptions options = CoordinatorOptionsWithHttpAt(address);
    const Status refused = CheckHttpFlags(options);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << address;
    EXPECT_NE(refused.message().find("--http-cert"), std::string::npos) << refused.message();
    EXPECT_NE(refused.message().find("--http-insecure"), std::string::npos) << refused.message();
    options.http_insecure = true;
    EXPECT_TRUE(CheckHttpFlags(options).ok()) << address;
    options.http_cert = "/etc/gpool/http.pem";
    options.http_key = "/etc/gpool/http.key";
    EXPECT_EQ(CheckHttpFlags(options).code(), StatusCode::kInvalidArgument) << "TLS and --http-insecure contradict";
    options.http_insecure = false;
    EXPECT_TRUE(CheckHttpFlags(options).ok()) << address;
  }
}

TEST(CoordinatorHttpFlagsTest, OffByDefaultAndPortFlagsNeedAnAddress) {
  CoordinatorOptions options;
  EXPECT_TRUE(options.http_address.empty()) << "HTTP is off unless asked for";
  EXPECT_TRUE(CheckHttpFlags(options).ok());
  options.http_insecure = true;
  const Status stray = CheckHttpFlags(options);
  EXPECT_EQ(stray.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stray.message().find("--http-address"), std::string::npos) << stray.message();
}

}  // namespace
}  // namespace gpool::control
