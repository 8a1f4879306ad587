#include "control/security/key_sync.h"

#include <gtest/gtest.h>

#include "control/testing/fake_ports.h"
#include "protocol/model/task_report.h"
#include "protocol/model/users.h"
#include "protocol/security/curve_socket.h"
#include "protocol/security/keys.h"
#include "protocol/security/task_exec_key.h"

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

// Applies `body` as the coordinator's pipeline does: Note, apply, Applied.
state::ApplyResult ApplyAndSync(state::ClusterState& state, KeySync& sync, state::CommandBody body) {
  const state::Command command = SyncCmd(std::move(body));
  sync.Note(state, command);
  const state::ApplyResult result = state.Apply(state.applied_index() + 1, command);
  EXPECT_TRUE(result.status.ok()) << result.status.ToString();
  sync.Applied(command, result, state);
  return result;
}

std::string SyncedTaskKey(const state::ClusterState& state, const TaskId& task) {
  auto secret = security::TaskExecSecret(state.FindJob(task.job)->exec_token, task);
  auto pair = security::KeyPairOfSecret(secret.ok() ? *secret : std::string());
  EXPECT_TRUE(pair.ok()) << pair.status().ToString();
  return pair.ok() ? pair->public_key : std::string();
}

// A task's key opens the client port from its bind until it ends; a lost
// node's task comes back as its next attempt, under another key.
TEST(KeySyncTest, ATasksExecKeyIsAdmittedWhileItIsBoundOrRunningOnly) {
  state::ClusterState state;
  KeyDirectory keys;
  KeySync sync(&keys, /*admin_key_configured=*/true);
  ApplyAndSync(state, sync, state::RegisterNodeCmd{OneGpuNode("n1"), {}});
  ApplyAndSync(state, sync, state::RegisterNodeCmd{OneGpuNode("n2"), {}});
  JobSpec spec;
  spec.name = "pair";
  spec.restart.policy = "on-node-loss";
  spec.tasks.push_back(TaskGroupSpec{.name = "w", .replicas = 2, .command = {"true"}, .resources = Resources{1, 100, 100}});
  const uint64_t job =
      ApplyAndSync(state, sync, state::SubmitJobCmd{spec, "", "rq:rm>vjOy/Ly<f^Y+PY%5Q-cR}&0G=u1T*Cn*lc"}).job_id;
  const TaskId first{JobId(job), 0, 0}, second{JobId(job), 1, 0};
  EXPECT_FALSE(keys.Authorize(security::kClientsDomain, SyncedTaskKey(state, first))) << "pending: no key yet";

  ApplyAndSync(state, sync, state::ApplyPlanCmd{{state::PlanBind{JobId(job), 0, "n1", {0}, 100, 100},
                                                 state::PlanBind{JobId(job), 1, "n2", {0}, 100, 100}},
                                                {}});
  auto admitted = keys.Authorize(security::kClientsDomain, SyncedTaskKey(state, first));
  ASSERT_TRUE(admitted.has_value()) << "bound";
  EXPECT_EQ(*admitted, "task|" + std::to_string(job) + ".0|" + SyncedTaskKey(state, first));
  ApplyAndSync(state, sync, state::TaskEventCmd{TaskEvent{.node = "n1", .seq = 1, .task = first}});
  ApplyAndSync(state, sync, state::TaskEventCmd{TaskEvent{.node = "n2", .seq = 1, .task = second}});
  EXPECT_TRUE(keys.Authorize(security::kClientsDomain, SyncedTaskKey(state, first))) << "running";

  // Task 0 exits: its key is refused; its sibling's still admitted.
  ApplyAndSync(state, sync,
               state::TaskEventCmd{TaskEvent{.node = "n1", .seq = 2, .task = first, .kind = TaskEventKind::kExited}});
  ASSERT_EQ(state.FindTask(first)->state, TaskState::kSucceeded);
  EXPECT_FALSE(keys.Authorize(security::kClientsDomain, SyncedTaskKey(state, first)));
  EXPECT_TRUE(keys.Authorize(security::kClientsDomain, SyncedTaskKey(state, second)));

  // n2 is lost: task 1 goes back to pending as its next attempt, whose key
  // is not admitted until it is bound again; the lost attempt's never again.
  const std::string lost_key = SyncedTaskKey(state, second);
  ApplyAndSync(state, sync, state::NodeStateCmd{"n2", NodeState::kNotReady});
  ApplyAndSync(state, sync, state::NodeLostCmd{"n2", 0});
  const TaskId retried{JobId(job), 1, 1};
  ASSERT_NE(state.FindTask(retried), nullptr) << "requeued as attempt 1";
  EXPECT_FALSE(keys.Authorize(security::kClientsDomain, lost_key));
  EXPECT_FALSE(keys.Authorize(security::kClientsDomain, SyncedTaskKey(state, retried)));
  ApplyAndSync(state, sync, state::ApplyPlanCmd{{state::PlanBind{JobId(job), 1, "n1", {0}, 100, 100}}, {}});
  EXPECT_TRUE(keys.Authorize(security::kClientsDomain, SyncedTaskKey(state, retried)));
  EXPECT_FALSE(keys.Authorize(security::kClientsDomain, lost_key));

  // A replica that starts (or a new leader) admits the same keys from the state.
  KeyDirectory fresh;
  KeySync again(&fresh, true);
  again.SyncAll(state);
  EXPECT_TRUE(fresh.Authorize(security::kClientsDomain, SyncedTaskKey(state, retried)));
  EXPECT_FALSE(fresh.Authorize(security::kClientsDomain, SyncedTaskKey(state, first)));
  EXPECT_FALSE(fresh.Authorize(security::kClientsDomain, lost_key));
}

}  // namespace
}  // namespace gpool::control
