#include "control/security/key_sync.h"

#include <gtest/gtest.h>

#include "protocol/model/users.h"
#include "protocol/security/curve_socket.h"

namespace gpool::control {
namespace {

const std::string kSyncAdminKey(40, 'a');
const std::string kSyncOtherKey(40, 'b');
const std::string kSyncNodeKey(40, 'n');

state::Command SyncCmd(state::CommandBody body) { return state::Command{1000, std::move(body)}; }

TEST(KeySyncTest, WithoutAKeyDirectoryEveryCallDoesNothing) {
  state::ClusterState state;
  KeySync sync(nullptr, false);
  sync.SyncAll(state);
  sync.Applied(SyncCmd(state::ForgetJobsCmd{}), state::ApplyResult{}, state);
}

TEST(KeySyncTest, BootstrapIsOpenUntilAnAdminCommitsThenOnlyItsKeyIsAUser) {
  state::ClusterState state;
  KeyDirectory keys;
  KeySync sync(&keys, /*admin_key_configured=*/false);
  sync.SyncAll(state);
  EXPECT_TRUE(keys.Authorize(security::kClientsDomain, kSyncOtherKey).has_value()) << "bootstrap admits any key";

  state::BootstrapCmd bootstrap;
  bootstrap.admin.name = "alice";
  bootstrap.admin.keys = {kSyncAdminKey};
  bootstrap.admin.roles = {RoleGrant{Role::kAdmin, ""}};
  const state::Command command = SyncCmd(bootstrap);
  const state::ApplyResult result = state.Apply(1, command);
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  sync.Applied(command, result, state);
  const auto alice = keys.Authorize(security::kClientsDomain, kSyncAdminKey);
  ASSERT_TRUE(alice.has_value());
  EXPECT_NE(alice->find("alice"), std::string::npos) << *alice;
  EXPECT_FALSE(keys.Authorize(security::kClientsDomain, kSyncOtherKey).has_value()) << "bootstrap closed";
}

TEST(KeySyncTest, AConfiguredAdminKeyKeepsBootstrapClosed) {
  state::ClusterState state;
  KeyDirectory keys;
  KeySync sync(&keys, /*admin_key_configured=*/true);
  sync.SyncAll(state);
  EXPECT_FALSE(keys.Authorize(security::kClientsDomain, kSyncOtherKey).has_value());
}

TEST(KeySyncTest, ANodesKeyIsBoundAsItsRegistrationCommitsAndAgainFromTheState) {
  state::ClusterState state;
  KeyDirectory keys;
  KeySync sync(&keys, false);
  state::RegisterNodeCmd registered;
  registered.node.name = "gpu-1";
  registered.node.cpu_milli = 1000;
  registered.node.memory_mib = 1024;
  registered.worker_key = kSyncNodeKey;
  const state::Command command = SyncCmd(registered);
  const state::ApplyResult result = state.Apply(1, command);
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  sync.Applied(command, result, state);
  EXPECT_EQ(keys.KeyOfNode("gpu-1"), kSyncNodeKey);

  KeyDirectory fresh;  // a replica that starts, or a new leadership
  KeySync again(&fresh, false);
  again.SyncAll(state);
  EXPECT_EQ(fresh.KeyOfNode("gpu-1"), kSyncNodeKey);
}

}  // namespace
}  // namespace gpool::control
