// ExecKeyPool: pairs made ahead are real, distinct key pairs, the pool
// refills in the background, and a dry pool still answers at once.
#include "control/exec_key_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "control/gateway_fixture.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"

namespace gpool::control {
namespace {

bool WaitReady(const ExecKeyPool& pool, size_t n) {
  for (int i = 0; i < 5000 && pool.ready() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return pool.ready() >= n;
}

TEST(ExecKeyPoolTest, PairsAreDistinctRealPairsAndThePoolRefillsAtHalf) {
  ExecKeyPool pool(16);
  ASSERT_TRUE(WaitReady(pool, 16));
  std::set<std::string> secrets;
  auto take = [&] {
    auto pair = pool.Take();
    ASSERT_TRUE(pair.ok()) << pair.status().ToString();
    auto derived = security::KeyPairOfSecret(pair->secret_key);
    ASSERT_TRUE(derived.ok());
    EXPECT_EQ(derived->public_key, pair->public_key);
    EXPECT_TRUE(secrets.insert(pair->secret_key).second) << "a pair handed out twice";
  };
  // Down to half (16 -> 8): the pool fills up again.
  for (int i = 0; i < 8; ++i) take();
  EXPECT_TRUE(WaitReady(pool, 16)) << "refilled once half empty: " << pool.ready();
  // More than it holds: some made ahead, the rest at once, none twice.
  for (int i = 0; i < 100; ++i) take();
}

// A submission's exec key comes from the pool when the gateway has one.
TEST_F(GatewayTest, ASubmissionTakesItsExecKeyPairFromThePool) {
  const security::KeyPair made = security::GenerateKeyPair().value();
  int taken = 0;
  GatewayOptions options{.token = "admin", .replica_id = "c-1"};
  options.new_exec_pair = [&]() -> Result<security::KeyPair> { return ++taken, made; };
  Rebuild(options);
  JobSpec spec;
  spec.name = "keyed";
  TaskGroupSpec group;
  group.name = "main";
  group.command = {"true"};
  spec.tasks.push_back(group);
  Send(SubmitJob{spec, ""}, 1, "admin");
  ASSERT_EQ(Last().type(), MessageType::kSubmitJobReply);
  EXPECT_EQ(taken, 1);
  const state::JobRecord* job = state_.FindJob(JobId(1));
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->exec_token, made.secret_key);
  EXPECT_EQ(job->exec_key, made.public_key);
}

}  // namespace
}  // namespace gpool::control
