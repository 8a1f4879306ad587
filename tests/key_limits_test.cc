// Per-key limits on long-lived resources end to end (issue 48, finding 6):
// one user's connection flood or exec flood on a real coordinator is
// refused with ResourceExhausted naming the limit, while another user's
// requests keep working, and the slots come back as connections close and
// commands end (a client that reconnects many times is never locked out).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_exec.h"
#include "protocol/security/keys.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

class KeyLimitsTest : public ::testing::Test {
 protected:
  // A cluster with `flags` and the members mallory and bob.
  void Start(int workers, std::vector<std::string> flags) {
    LocalClusterOptions options;
    options.workers = workers;
    cluster_ = std::make_unique<LocalCluster>(options);
    std::vector<std::string> all = options.coordinator_flags;
    all.insert(all.end(), flags.begin(), flags.end());
    cluster_->SetCoordinatorFlags(all);
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, admin_));
    for (const std::string user : {"mallory", "bob"}) {
      CommandResult created = cluster_->Cli({"admin", "user", "create", user, "--key", cluster_->PublicKeyFile(user)});
      ASSERT_EQ(created.exit_code, 0) << created.err;
      CommandResult granted = cluster_->Cli({"admin", "role", "grant", user, "member", "--queue", "root"});
      ASSERT_EQ(granted.exit_code, 0) << granted.err;
    }
  }
  std::unique_ptr<Client> ConnectAs(const std::string& user) {
    ClientOptions options;
    options.endpoints = cluster_->client_endpoint();
    cluster_->SecureClient(options);
    options.curve_keys = security::ReadSecretKeyFile(cluster_->SecretKeyFile(user)).value();
    options.timeout_ms = 3000;
    return std::move(Client::Connect(options).value());
  }
  static Status Ask(Client& client) { return client.ListJobs(true, 10).status(); }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> admin_;
};

TEST_F(KeyLimitsTest, OneKeysConnectionFloodLeavesOtherUsersWorkingAndClosedConnectionsFreeTheirSlots) {
  constexpr int kLimit = 3;
  ASSERT_NO_FATAL_FAILURE(Start(/*workers=*/0, {"--max-connections-per-key", std::to_string(kLimit)}));
  // Mallory floods: each connection asks once; the first kLimit count.
  std::vector<std::unique_ptr<Client>> mallory;
  int admitted = 0;
  Status refused;
  for (int i = 0; i < 40; ++i) {
    mallory.push_back(ConnectAs("mallory"));
    Status asked = Ask(*mallory.back());
    if (asked.ok()) {
      ++admitted;
    } else {
      refused = asked;
      EXPECT_EQ(asked.code(), StatusCode::kResourceExhausted) << asked.ToString();
    }
  }
  EXPECT_EQ(admitted, kLimit);
  EXPECT_NE(refused.message().find("connections open to the coordinator, the most one key may "
                                   "(--max-connections-per-key 3)"),
            std::string::npos)
      << refused.ToString();
  // Bob, and the admin's CLI, are not held by her connections.
  auto bob = ConnectAs("bob");
  EXPECT_TRUE(Ask(*bob).ok()) << Ask(*bob).ToString();
  CommandResult jobs = cluster_->Cli({"jobs"});
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
  // The admin (--admin-key) is not held to the limit at all.
  std::vector<std::unique_ptr<Client>> admins;
  for (int i = 0; i < kLimit + 2; ++i) {
    ClientOptions options;
    options.endpoints = cluster_->client_endpoint();
    cluster_->SecureClient(options);
    options.timeout_ms = 3000;
    admins.push_back(std::move(Client::Connect(options).value()));
    EXPECT_TRUE(Ask(*admins.back()).ok()) << i << ": " << Ask(*admins.back()).ToString();
  }

  // One of her counted connections closes: a refused one is admitted once
  // the coordinator has seen the close.
  mallory.erase(mallory.begin());  // the first connection was counted
  Client& waiting = *mallory.back();
  EXPECT_TRUE(WaitFor([&] { return Ask(waiting).ok(); }, 10s)) << Ask(waiting).ToString();

  // All closed; then she reconnects many times, one connection at a time,
  // and is never locked out.
  mallory.clear();
  for (int round = 0; round < 15; ++round) {
    auto again = ConnectAs("mallory");
    ASSERT_TRUE(WaitFor([&] { return Ask(*again).ok(); }, 10s)) << "round " << round << ": " << Ask(*again).ToString();
  }
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < kLimit; ++i) {
    held.push_back(ConnectAs("mallory"));
    ASSERT_TRUE(WaitFor([&] { return Ask(*held.back()).ok(); }, 10s)) << i;
  }
}

TEST_F(KeyLimitsTest, OneUsersExecFloodLeavesOtherUsersExecWorkingAndAnEndedCommandFreesItsSlot) {
  ASSERT_NO_FATAL_FAILURE(Start(/*workers=*/1, {"--max-exec-streams-per-user", "2"}));
  auto mallory = ConnectAs("mallory");
  auto bob = ConnectAs("bob");
  const auto running_task = [&](Client& client, const std::string& name) -> std::string {
    auto job = client.Submit(ShellJob(name, 1, "sleep 600"), "");
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    if (!job.ok()) return {};
    EXPECT_TRUE(WaitFor(
        [&] {
          auto got = client.GetJob(JobId(job->job_id));
          // The task itself, not only the job: exec needs it Running, not Bound.
          return got.ok() && got->tasks.size() == 1 && got->tasks[0].state == "Running";
        },
        30s));
    return std::to_string(job->job_id) + ".0";
  };
  const std::string hers = running_task(*mallory, "hers");
  const std::string his = running_task(*bob, "his");
  ASSERT_FALSE(hers.empty() || his.empty());

  const auto start = [](Client& client, const std::string& task) {
    return client.ExecStart(gpool::ExecStart{.task = task, .command = {"sleep", "60"}, .lease_ms = 30'000});
  };
  auto first = start(*mallory, hers);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(start(*mallory, hers).ok());
  for (int i = 0; i < 10; ++i) {
    auto flood = start(*mallory, hers);
    ASSERT_FALSE(flood.ok());
    EXPECT_EQ(flood.status().code(), StatusCode::kResourceExhausted) << flood.status().ToString();
    EXPECT_NE(flood.status().message().find("mallory has 2 exec streams open, the most one user may "
                                            "(--max-exec-streams-per-user 2)"),
              std::string::npos)
        << flood.status().ToString();
  }
  // Bob's exec into his own job is not held by hers.
  auto bobs = start(*bob, his);
  EXPECT_TRUE(bobs.ok()) << bobs.status().ToString();

  // She ends her first command and polls it to its exit: the slot is free.
  ASSERT_TRUE(mallory->ExecSignal(gpool::ExecSignal{.task = hers, .exec_id = first->exec_id, .signal = 9}).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto polled = mallory->ExecPoll(gpool::ExecPoll{.task = hers, .exec_id = first->exec_id});
        return polled.ok() && polled->exited;
      },
      15s));
  auto again = start(*mallory, hers);
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

}  // namespace
}  // namespace gpool::testing
