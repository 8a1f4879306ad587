// Helpers shared by the client's tests (not part of the library): files on
// disk, rejected inputs, and the CLI run against a FakeCluster.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli.h"
#include "client/testing/fake_client.h"
#include "protocol/base/status.h"
#include "protocol/base/testing/fake_clock.h"

namespace gpool::client::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// An input that must be refused, and the whole message it must be refused with.
struct RejectCase {
  std::string input;
  std::string error;
};

// The message of a result that must fail with InvalidArgument (the user's
// input is at fault), or "" when it succeeded.
template <typename T>
std::string InvalidArgumentMessage(const Result<T>& result) {
  if (result.ok()) return "";
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << result.status().ToString();
  return result.status().message();
}

// Runs the CLI against a FakeCluster with a fake clock; sleeping advances it,
// and the environment is `environment_`.
// A path under the test temp dir that no other test (ctest runs them in
// parallel, one process each) writes: named after the running test and pid.
inline std::string UniqueTempPath(const std::string& stem) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = stem;
  if (info != nullptr) name += std::string("-") + info->test_suite_name() + "." + info->name();
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid()) + ".yaml";
}

class FakeCliTest : public ::testing::Test {
 protected:
  FakeCliTest() : cluster_(std::make_shared<FakeCluster>()), clock_(FakeCluster{}.now_ms) {
    env_.getenv = [this](const std::string& name) -> std::optional<std::string> {
      auto it = environment_.find(name);
      if (it == environment_.end()) return std::nullopt;
      return it->second;
    };
    env_.sleep_ms = [this](int64_t ms) {
      sleeps_.push_back(ms);
      clock_.Advance(ms);
    };
    env_.clock = &clock_;
    env_.in = &stdin_;
  }

  int Run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    ClientFactory factory = [this](const ClientOptions& options) -> Result<std::unique_ptr<Client>> {
      options_ = options;
      ++clients_made_;
      return std::unique_ptr<Client>(new FakeClient(cluster_));
    };
    return RunCli(std::move(args), out_, err_, factory, env_);
  }

  std::shared_ptr<FakeCluster> cluster_;
  FakeClock clock_;
  CliEnv env_;
  std::map<std::string, std::string> environment_;
  std::istringstream stdin_;
  std::vector<int64_t> sleeps_;
  std::ostringstream out_;
  std::ostringstream err_;
  ClientOptions options_;
  int clients_made_ = 0;
};

}  // namespace gpool::client::testing
