// ReachableEndpoint: a wildcard bind is named by this machine's hostname;
// anything else is left as it is.
#include "control/endpoints_file.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace gpool::control {
namespace {

std::string Hostname() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

TEST(ReachableEndpointTest, AWildcardBindIsNamedByTheHostname) {
  for (const char* wildcard : {"tcp://0.0.0.0:7400", "tcp://*:7400", "tcp://[::]:7400"}) {
    EXPECT_EQ(ReachableEndpoint(wildcard), "tcp://" + Hostname() + ":7400") << wildcard;
  }
}

TEST(ReachableEndpointTest, OtherEndpointsAreLeftAlone) {
  for (const char* as_is : {"tcp://127.0.0.1:7400", "tcp://[::1]:7400", "ipc:///tmp/x", "tcp://0.0.0.1:7400",
                            "not an endpoint"}) {
    EXPECT_EQ(ReachableEndpoint(as_is), as_is);
  }
}

}  // namespace
}  // namespace gpool::control
