// The leader's gate for rolling upgrades (ProposalTracker, issue 50): while
// a replica runs an older state version, what it would apply differently is
// refused, typed and naming it, before it reaches the log; everything else
// is proposed as ever.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "control/log/local_log.h"
#include "control/log/testing/forwarding_log.h"
#include "control/proposal_tracker.h"
#include "storage/log_store.h"
#include "storage/testing/memory_store.h"

namespace gpool::control {
namespace {

// A LocalLog that reports the floor the test sets: the replicas' versions
// as a replicated leader would have heard them.
class FloorLog final : public log::testing::ForwardingLog {
 public:
  using ForwardingLog::ForwardingLog;
  log::StateVersionFloor floor;

  Result<uint64_t> Propose(std::string data) override {
    ++proposed;
    return ForwardingLog::Propose(std::move(data));
  }
  log::StateVersionFloor LowestStateVersion() const override { return floor; }
  int proposed = 0;
};

class StateVersionGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(storage::LogStore::Open(&kv_).value());
    local_ = std::move(log::LocalLog::Open(store_.get()).value());
    ASSERT_TRUE(local_->Recover().ok());
    log_ = std::make_unique<FloorLog>(*local_);
    tracker_ = std::make_unique<ProposalTracker>(ProposalTrackerOptions{}, *log_);
    tracker_->FollowLeadership();
    ASSERT_TRUE(tracker_->leading());
  }

  // The status the proposal was answered with at once, or nullopt when it
  // went to the log (answered once committed).
  std::optional<state::ApplyResult> ProposeNow(state::CommandBody body) {
    std::optional<state::ApplyResult> answer;
    tracker_->Propose(std::move(body), [&](const state::ApplyResult& result) { answer = result; });
    return answer;
  }

  storage::MemoryStore kv_;
  std::unique_ptr<storage::LogStore> store_;
  std::unique_ptr<log::LocalLog> local_;
  std::unique_ptr<FloorLog> log_;
  std::unique_ptr<ProposalTracker> tracker_;
};

TEST_F(StateVersionGateTest, AnOlderReplicaHoldsBackOnlyWhatItWouldApplyDifferently) {
  log_->floor = {1, 3, true};  // replica 3 runs a binary from before issue 50
  const auto refused = ProposeNow(state::CreditCmd{"team-a", 5'000'000, ""});
  ASSERT_TRUE(refused.has_value()) << "refused at once, never queued";
  EXPECT_FALSE(refused->committed);
  EXPECT_EQ(refused->status.code(), StatusCode::kFailedPrecondition) << refused->status.ToString();
  const std::string message = refused->status.message();
  EXPECT_NE(message.find("replica 3"), std::string::npos) << message;
  EXPECT_NE(message.find("version 1"), std::string::npos) << message;
  EXPECT_NE(message.find("credit account"), std::string::npos) << message;
  EXPECT_EQ(log_->proposed, 0) << "nothing reached the log";

  // What every version applies alike goes on.
  EXPECT_EQ(ProposeNow(state::CancelJobCmd{}), std::nullopt);
  EXPECT_EQ(log_->proposed, 1);
}

TEST_F(StateVersionGateTest, AReplicaNotHeardFromIsNamedAsSuch) {
  log_->floor = {1, 2, false};
  const auto refused = ProposeNow(state::UpdatePricesCmd{PriceTable{}, true});
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->status.message().find("replica 2 has not been heard from"), std::string::npos)
      << refused->status.ToString();
}

TEST_F(StateVersionGateTest, OnceEveryReplicaIsUpgradedNothingIsHeldBack) {
  log_->floor = {2, 0, true};
  EXPECT_EQ(ProposeNow(state::CreditCmd{"team-a", 5'000'000, ""}), std::nullopt);
  log_->floor = {};  // a single replica: no floor at all
  EXPECT_EQ(ProposeNow(state::CreditCmd{"team-a", 5'000'000, ""}), std::nullopt);
  EXPECT_EQ(log_->proposed, 2);
}

}  // namespace
}  // namespace gpool::control
