// Class grants and credit exhaustion end to end (issue 50): a real
// coordinator and worker on 127.0.0.1, secure, with a member user.
//   - The member's `high` submit to its queue is refused (PermissionDenied
//     naming the class and the queue) until an admin runs `gpool queue
//     grant-class`; then it is accepted.
//   - A queue whose credit account a finished job used up (its minimum
//     billing period costs more than the credit) keeps its next job pending
//     with the typed reason, while another queue's job runs; after `gpool
//     credit add` the waiting job runs, and `gpool invoice` shows the bill
//     and the balance.
#include <chrono>
#include <ctime>
#include <fstream>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/security/keys.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Client> GrantsClientAs(LocalCluster& cluster, const std::string& name) {
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(options);
  auto keys = security::ReadSecretKeyFile(cluster.SecretKeyFile(name));
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  if (keys.ok()) options.curve_keys = *keys;
  options.timeout_ms = 3000;
  auto connected = Client::Connect(options);
  EXPECT_TRUE(connected.ok()) << connected.status().ToString();
  return connected.ok() ? std::move(connected).value() : nullptr;
}

JobSpec QuickJob(const std::string& queue, const std::string& priority_class) {
  JobSpec spec = ShellJob("quick", 1, "true");
  spec.queue = queue;
  spec.priority_class = priority_class;
  spec.restart.policy = "never";
  return spec;
}

class GrantsCreditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalClusterOptions options;
    options.workers = 1;
    options.gpus_per_worker = 2;
    options.worker_flags = {{0, {"--task-isolation", "off"}}};
    cluster_ = std::make_unique<LocalCluster>(options);
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, admin_));
    Ok({"queue", "create", "research"});
  }
  std::string Ok(std::vector<std::string> args) {
    auto result = cluster_->Cli(args);
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    return result.out;
  }
  bool WaitJobState(uint64_t job, const std::string& state) {
    return WaitFor(
        [&] {
          auto detail = admin_->GetJob(JobId(job));
          return detail.ok() && detail->summary.state == state;
        },
        60s);
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> admin_;
};

TEST_F(GrantsCreditTest, HighIsRefusedUntilGrantedThenAccepted) {
  Ok({"admin", "user", "create", "alice", "--key", cluster_->PublicKeyFile("alice")});
  Ok({"admin", "role", "grant", "alice", "member", "--queue", "research"});
  auto alice = GrantsClientAs(*cluster_, "alice");
  ASSERT_NE(alice, nullptr);

  auto medium = alice->Submit(QuickJob("research", "medium"), "");
  ASSERT_TRUE(medium.ok()) << medium.status().ToString();
  auto refused = alice->Submit(QuickJob("research", "high"), "");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("class high is not granted to queue research"), std::string::npos)
      << refused.status().ToString();
  // The refusal is in the audit stream.
  EXPECT_NE(Ok({"audit"}).find("class high not granted"), std::string::npos);

  EXPECT_NE(Ok({"queue", "grant-class", "research", "high"}).find("class high granted"), std::string::npos);
  EXPECT_NE(Ok({"queue", "tree"}).find("GRANTED"), std::string::npos);
  auto accepted = alice->Submit(QuickJob("research", "high"), "");
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  // system is still the admins' alone to grant, and not granted.
  auto system = alice->Submit(QuickJob("research", "system"), "");
  EXPECT_EQ(system.status().code(), StatusCode::kPermissionDenied) << system.status().ToString();
}

TEST_F(GrantsCreditTest, AQueueOutOfCreditAdmitsNoNewWorkUntilCredited) {
  // 36.00 a GPU-hour (0.01 a GPU-second), every attempt billed at least a
  // minute: one job costs at least 0.60, more than the 0.50 of credit.
  const std::string prices = cluster_->WorkerDataDir(0) + "/../prices.yaml";
  std::ofstream(prices) << "currency: EUR\ngpu_hour:\n  default: 36.00\nmin_period_minutes:\n  class:\n    medium: 1\n";
  Ok({"prices", "set", prices});
  EXPECT_NE(Ok({"credit", "add", "research", "0.50"}).find("0.50"), std::string::npos);

  auto first = admin_->Submit(QuickJob("research", "medium"), "");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(WaitJobState(first->job_id, "Succeeded"));
  EXPECT_NE(Ok({"credit", "show"}).find("out of credit"), std::string::npos);

  auto waiting = admin_->Submit(QuickJob("research", "medium"), "");
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  // Another queue's job, submitted after it, runs to the end: scheduling
  // cycles ran meanwhile, and the research job was still left out.
  auto other = admin_->Submit(QuickJob("default", "medium"), "");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_TRUE(WaitJobState(other->job_id, "Succeeded"));
  auto detail = admin_->GetJob(JobId(waiting->job_id));
  ASSERT_TRUE(detail.ok()) << detail.status().ToString();
  EXPECT_EQ(detail->summary.state, "Pending");
  ASSERT_FALSE(detail->reasons.empty());
  EXPECT_NE(detail->reasons[0].find("admits no new work"), std::string::npos) << detail->reasons[0];
  EXPECT_NE(Ok({"explain", std::to_string(waiting->job_id)}).find("credit of account research is used up"),
            std::string::npos);

  Ok({"credit", "add", "research", "1.00"});
  ASSERT_TRUE(WaitJobState(waiting->job_id, "Succeeded"));

  // The invoice shows what research was billed (its top-ups) and its balance.
  char month[8];
  const std::time_t now = std::time(nullptr);
  std::strftime(month, sizeof(month), "%Y-%m", std::gmtime(&now));
  const std::string invoice = Ok({"invoice", "--month", month});
  EXPECT_NE(invoice.find("MIN-PERIOD"), std::string::npos) << invoice;
  EXPECT_NE(invoice.find("Credit balances"), std::string::npos) << invoice;
  EXPECT_NE(invoice.find("research"), std::string::npos) << invoice;
}

}  // namespace
}  // namespace gpool::testing
