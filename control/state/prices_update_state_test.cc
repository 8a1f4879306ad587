// A price table from a client that predates billing rules (issue 50): it
// leaves "billing" out, and the committed rules stay, through the gateway's
// decoding, the log's encoding and apply; a newer client's table (which
// always carries "billing") replaces them, an empty one clearing them.
// (protocol/messages_usage.h, UpdatePrices.keep_billing.)
#include <gtest/gtest.h>

#include <msgpack.hpp>

#include "control/state/cluster_state.h"
#include "control/state/commands.h"
#include "protocol/messages_usage.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

// The UpdatePrices body an older client writes: its table knows the prices,
// nothing of billing rules.
std::string PreBillingPricesSet(int64_t gpu_hour_micro) {
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  packer.BeginMap(2);
  packer.Field("op", std::string("set"));
  packer.Key("table");
  packer.BeginMap(2);
  packer.Field("currency", std::string("EUR"));
  packer.Field("models", std::vector<ModelPrice>{ModelPrice{"A100", gpu_hour_micro, 0}});
  return std::string(buffer.data(), buffer.size());
}

class PricesUpdateStateTest : public ::testing::Test {
 protected:
  // As the gateway and the log take a client's UpdatePrices.
  ApplyResult ApplyFromWire(const std::string& body) {
    auto update = wire::UnpackFromString<UpdatePrices>(body);
    if (!update.ok()) return ApplyResult{update.status()};
    auto logged = DecodeCommand(EncodeCommand(
        Command{static_cast<int64_t>(1000 * (index_ + 1)), UpdatePricesCmd{update->table, update->keep_billing}}));
    if (!logged.ok()) return ApplyResult{logged.status()};
    return state_.Apply(++index_, std::move(logged).value());
  }
  const PriceTable& Prices() const { return *state_.usage_ledger().prices(); }

  ClusterState state_;
  uint64_t index_ = 0;
};

TEST_F(PricesUpdateStateTest, APreBillingClientsTableKeepsTheBillingRules) {
  BillingRules rules;
  rules.min_period_ms_by_class = {{"low", 600'000}};
  rules.volume = {VolumeTier{100, 900}};
  UpdatePrices full{PricesOp::kSet, PriceTable{}};
  full.table.models = {ModelPrice{"A100", 3'000'000, 0}};
  full.table.billing = rules;
  auto decoded = wire::UnpackFromString<UpdatePrices>(wire::PackToString(full));
  ASSERT_TRUE(decoded.ok());
  EXPECT_FALSE(decoded->keep_billing) << "a newer client's table always carries billing";
  ASSERT_TRUE(ApplyFromWire(wire::PackToString(full)).status.ok());
  ASSERT_EQ(Prices().billing, rules);

  auto old = wire::UnpackFromString<UpdatePrices>(PreBillingPricesSet(4'000'000));
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->keep_billing);
  ASSERT_TRUE(ApplyFromWire(PreBillingPricesSet(4'000'000)).status.ok());
  EXPECT_EQ(Prices().models.at(0).gpu_hour_micro, 4'000'000) << "the prices it sent are taken";
  EXPECT_EQ(Prices().currency, "EUR");
  EXPECT_EQ(Prices().billing, rules) << "the rules it knew nothing of stay";

  // A newer client's table without rules clears them.
  UpdatePrices cleared{PricesOp::kSet, PriceTable{}};
  cleared.table.models = {ModelPrice{"A100", 3'000'000, 0}};
  ASSERT_TRUE(ApplyFromWire(wire::PackToString(cleared)).status.ok());
  EXPECT_EQ(Prices().billing, BillingRules{});
}

TEST_F(PricesUpdateStateTest, APreBillingClientsFirstTableHasNoRules) {
  ASSERT_TRUE(ApplyFromWire(PreBillingPricesSet(4'000'000)).status.ok());
  EXPECT_EQ(Prices().billing, BillingRules{});
  // `show` is read as before: nothing to keep.
  auto show = wire::UnpackFromString<UpdatePrices>(wire::PackToString(UpdatePrices{}));
  ASSERT_TRUE(show.ok());
  EXPECT_FALSE(show->keep_billing);
}

}  // namespace
}  // namespace gpool::state
