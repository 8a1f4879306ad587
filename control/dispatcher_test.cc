// The Dispatcher alone, over the fake ports: the WorkerTable is filled by
// hand and the registry's events are called directly, so what the dispatcher
// does with each is visible without a NodeRegistry.
#include "control/dispatcher.h"

#include <gtest/gtest.h>

#include "control/testing/fake_ports.h"
#include "protocol/message_type.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/run_as.h"
#include "protocol/model/task_report.h"
#include "protocol/model/users.h"
#include "protocol/security/task_exec_key.h"

namespace gpool::control {
namespace {

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() {
    proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n1"), {}}, [](const auto&) {});
    proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n2"), {}}, [](const auto&) {});
    JobSpec spec;
    spec.name = "j";
    spec.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{1, 100, 100}});
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [](const auto&) {});
    proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 100, 100}}, {}},
                      [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  }

  std::vector<RecordingOutbox::Sent> Sent(MessageType type) const {
    std::vector<RecordingOutbox::Sent> out;
    for (const auto& sent : outbox_.sent) {
      auto env = DecodeEnvelope(sent.frame);
      if (sent.to_worker && env.ok() && env->type() == type) out.push_back(sent);
    }
    return out;
  }
  static uint64_t RequestOf(const RecordingOutbox::Sent& sent) {
    return DecodeEnvelope(sent.frame).value().header().request_id;
  }

  const TaskId task_{JobId(1), 0, 0};
  state::ClusterState state_;
  WorkerTable workers_;
  RequestIds request_ids_;
  ImmediateProposer proposer_{state_};
  RecordingOutbox outbox_;
  Dispatcher dispatcher_{DispatcherOptions{}, state_, workers_, request_ids_, outbox_, proposer_};
};

TEST_F(DispatcherTest, NothingGoesToANodeWithNoConnectionUntilItConnects) {
  dispatcher_.Tick(0);
  EXPECT_TRUE(outbox_.sent.empty());
  EXPECT_EQ(dispatcher_.in_flight(), 0u);
  workers_.Connect("n1", "peer-1", 10, 10);
  dispatcher_.NodeConnected("n1");
  dispatcher_.Tick(10);
  auto binds = Sent(MessageType::kBindTask);
  ASSERT_EQ(binds.size(), 1u);
  EXPECT_EQ(binds[0].peer, "peer-1");
}

TEST_F(DispatcherTest, OnlyTheNodeTheCommandWentToCanAcknowledgeIt) {
  workers_.Connect("n1", "peer-1", 0, 0);
  workers_.Connect("n2", "peer-2", 0, 0);
  dispatcher_.Tick(0);
  const uint64_t request = RequestOf(Sent(MessageType::kBindTask).at(0));
  dispatcher_.WorkerReplied("n2", WorkerReply(request, Ack{}));  // not n2's command
  dispatcher_.Tick(2000);
  EXPECT_EQ(Sent(MessageType::kBindTask).size(), 2u) << "unacknowledged, so resent";
  const uint64_t resent = RequestOf(Sent(MessageType::kBindTask).at(1));
  dispatcher_.WorkerReplied("n1", WorkerReply(request, Ack{}));  // the first, superseded request
  dispatcher_.WorkerReplied("n1", WorkerReply(resent, Ack{}));
  dispatcher_.Tick(4000);
  EXPECT_EQ(Sent(MessageType::kBindTask).size(), 2u) << "acknowledged: waits for the reconfirm interval";
  dispatcher_.Tick(12'000);
  EXPECT_EQ(Sent(MessageType::kBindTask).size(), 3u) << "acknowledged but never started: confirmed again";
}

TEST_F(DispatcherTest, ARefusalFromAnotherNodeFailsNothing) {
  workers_.Connect("n1", "peer-1", 0, 0);
  dispatcher_.Tick(0);
  const uint64_t request = RequestOf(Sent(MessageType::kBindTask).at(0));
  dispatcher_.WorkerReplied("n2", WorkerReply(request, ErrorReply::FromStatus(Status::InvalidArgument("no GPU 0"))));
  EXPECT_NE(state_.FindJob(JobId(1))->state, JobState::kFailed);
  proposer_.clear();
  dispatcher_.WorkerReplied("n1", WorkerReply(request, ErrorReply::FromStatus(Status::InvalidArgument("no GPU 0"))));
  EXPECT_EQ(state_.FindJob(JobId(1))->state, JobState::kFailed);
  EXPECT_TRUE(state_.FindNode("n1")->gpu_owner.empty());
  // The coordinator's own decision, logged as such, not an event in the node's name.
  EXPECT_EQ(proposer_.proposed(), (std::vector<std::string>{"RefuseBind"}));
  const state::TaskRecord& task = state_.FindJob(JobId(1))->tasks.at(0);
  EXPECT_EQ(task.exit_code, 127);
  EXPECT_EQ(task.message(), "worker refused the task: no GPU 0");
}

TEST_F(DispatcherTest, ASettledTaskIsForgottenAndResetSendsEverythingAgain) {
  workers_.Connect("n1", "peer-1", 0, 0);
  dispatcher_.Tick(0);
  EXPECT_EQ(dispatcher_.in_flight(), 1u);
  dispatcher_.TaskSettled(task_);
  EXPECT_EQ(dispatcher_.in_flight(), 1u) << "still due: the task has not started";
  dispatcher_.Reset();
  EXPECT_EQ(dispatcher_.in_flight(), 0u);
  dispatcher_.Tick(1);
  EXPECT_EQ(Sent(MessageType::kBindTask).size(), 2u) << "a new leadership re-sends what it cannot know arrived";
  TaskEvent started{.node = "n1", .seq = 1, .task = task_, .kind = TaskEventKind::kStarted};
  proposer_.Propose(state::TaskEventCmd{started}, [](const auto&) {});
  dispatcher_.TaskSettled(task_);
  EXPECT_EQ(dispatcher_.in_flight(), 0u);
}

TEST_F(DispatcherTest, RequestIdsAreSharedSoNoReplyIsTakenTwice) {
  workers_.Connect("n1", "peer-1", 0, 0);
  const uint64_t taken = request_ids_.Next();  // as the log relay would draw one
  dispatcher_.Tick(0);
  EXPECT_GT(RequestOf(Sent(MessageType::kBindTask).at(0)), taken);
  dispatcher_.WorkerReplied("n1", WorkerReply(taken, Ack{}));  // someone else's request
  dispatcher_.Tick(2000);
  EXPECT_EQ(Sent(MessageType::kBindTask).size(), 2u);
}

TEST_F(DispatcherTest, AReconnectedNodeGetsItsCommandsOnTheNewConnection) {
  workers_.Connect("n1", "peer-1", 0, 0);
  dispatcher_.Tick(0);
  workers_.Connect("n1", "peer-1b", 100, 100);
  dispatcher_.NodeConnected("n1");
  dispatcher_.Tick(100);
  auto binds = Sent(MessageType::kBindTask);
  ASSERT_EQ(binds.size(), 2u);
  EXPECT_EQ(binds[1].peer, "peer-1b");
  proposer_.Propose(state::CancelJobCmd{1, 300}, [](const auto&) {});
  dispatcher_.Tick(110);
  auto preempts = Sent(MessageType::kPreemptTask);
  ASSERT_EQ(preempts.size(), 1u);
  EXPECT_EQ(preempts[0].peer, "peer-1b");
  EXPECT_EQ(dispatcher_.in_flight(), 1u) << "the preempt replaced the bind";
}

// An evicted task gets its job's grace_period; a job without one, the
// coordinator's; a cancel's own grace wins over both.
TEST_F(DispatcherTest, AStopUsesTheJobsGracePeriodWhereItNamesNoneOfItsOwn) {
  JobSpec patient;
  patient.name = "patient";
  patient.grace_period_ms = 30'000;
  patient.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{1, 100, 100}});
  proposer_.Propose(state::SubmitJobCmd{patient, ""}, [](const auto&) {});
  proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(2), 0, "n2", {0}, 100, 100}}, {}},
                    [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  JobSpec urgent = patient;
  urgent.name = "urgent";
  urgent.grace_period_ms = 0;
  proposer_.Propose(state::SubmitJobCmd{urgent, ""}, [](const auto&) {});  // job 3, pending
  workers_.Connect("n1", "peer-1", 0, 0);
  workers_.Connect("n2", "peer-2", 0, 0);
  dispatcher_.Tick(0);
  proposer_.Propose(state::ApplyPlanCmd{{}, {topology::Eviction{JobId(2), 0, JobId(3), "preempted by job 3 (high)"},
                                             topology::Eviction{JobId(1), 0, JobId(3), "preempted by job 3 (high)"}}},
                    [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  dispatcher_.Tick(10);
  std::map<std::string, uint32_t> grace;
  for (const auto& sent : Sent(MessageType::kPreemptTask)) {
    grace[sent.peer] = DecodeEnvelope(sent.frame).value().Body<PreemptTask>().value().grace_ms;
  }
  EXPECT_EQ(grace, (std::map<std::string, uint32_t>{{"peer-1", DispatcherOptions{}.preempt_grace_ms},
                                                    {"peer-2", 30'000}}));
}

// The worker enforces max_runtime: the bind carries it with the grace the
// job's own stops would get.
TEST_F(DispatcherTest, ABindCarriesTheJobsMaxRuntimeAndGrace) {
  JobSpec limited;
  limited.name = "limited";
  limited.max_runtime_ms = 5'400'000;
  limited.grace_period_ms = 20'000;
  limited.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{1, 100, 100}});
  proposer_.Propose(state::SubmitJobCmd{limited, ""}, [](const auto&) {});
  proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(2), 0, "n2", {0}, 100, 100}}, {}},
                    [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  workers_.Connect("n2", "peer-2", 0, 0);
  dispatcher_.Tick(0);
  bool seen = false;
  for (const auto& sent : Sent(MessageType::kBindTask)) {
    const BindTask bind = DecodeEnvelope(sent.frame).value().Body<BindTask>().value();
    if (bind.task.job != JobId(2)) continue;
    seen = true;
    EXPECT_EQ(bind.max_runtime_ms, 5'400'000u);
    EXPECT_EQ(bind.time_limit_grace_ms, 20'000u);
    // Issue 31: the identity comes from the state (RunAsFor); with no user
    // mapping in the state, none is sent and the worker applies its own.
    EXPECT_FALSE(bind.run_as.set());
    EXPECT_EQ(state_.RunAsFor(*state_.FindJob(JobId(2))), std::nullopt);
  }
  EXPECT_TRUE(seen);
}

// A job of a user whose record maps a Unix identity runs as it; the job's
// owner is its user (set by the gateway from the authenticated key).
TEST_F(DispatcherTest, ABindCarriesTheOwnersMappedIdentity) {
  proposer_.Propose(state::UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"alice", {}, 1001, 2001, {}}}},
                    [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  proposer_.Propose(state::UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"bob", {}, -1, -1, {}}}}, [](const auto&) {});
  for (const char* user : {"alice", "bob"}) {
    JobSpec spec;
    spec.name = user;
    spec.user = user;
    spec.tasks.push_back(TaskGroupSpec{.command = {"true"}, .resources = Resources{0, 100, 100}});
    proposer_.Propose(state::SubmitJobCmd{spec, ""}, [](const auto&) {});
  }
  proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(2), 0, "n2", {}, 100, 100},
                                         state::PlanBind{JobId(3), 0, "n2", {}, 100, 100}},
                                        {}},
                    [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  workers_.Connect("n2", "peer-2", 0, 0);
  dispatcher_.Tick(0);
  std::map<uint64_t, RunAs> run_as;
  for (const auto& sent : Sent(MessageType::kBindTask)) {
    const BindTask bind = DecodeEnvelope(sent.frame).value().Body<BindTask>().value();
    run_as[bind.task.job.value()] = bind.run_as;
  }
  ASSERT_EQ(run_as.count(2), 1u);
  EXPECT_EQ(run_as[2], (RunAs{1001, 2001, "alice"}));
  ASSERT_EQ(run_as.count(3), 1u);
  // Issue 48: a user without a uid (one from before uids were allocated) maps
  // to nobody, which the worker refuses instead of running the task as its
  // --task-user, shared with every such user.
  EXPECT_EQ(run_as[3], (RunAs{65534, 65534, "bob"}));
}

}  // namespace
}  // namespace gpool::control

namespace gpool::control {
namespace {

// What a task needs to call `gpool exec` itself (issue 30): where the
// coordinator is and its own exec token (issue 48: derived for that task
// attempt, never the job's secret); and its gang by stable name.
TEST(DispatcherExecEnvTest, BindsCarryTheCoordinatorTheTasksExecTokenAndTaskNames) {
  state::ClusterState state;
  WorkerTable workers;
  RequestIds request_ids;
  ImmediateProposer proposer{state};
  RecordingOutbox outbox;
  // Every replica's endpoint and key, as the coordinator knows them at the bind.
  DispatcherOptions options{.client_endpoints = "tcp://ignored:1"};
  options.coordinator_contacts = [] { return std::pair<std::string, std::string>{"tcp://coord:7400,tcp://b:7400", "K1,K2"}; };
  Dispatcher dispatcher{options, state, workers, request_ids, outbox, proposer};
  proposer.Propose(state::RegisterNodeCmd{OneGpuNode("n1"), {}}, [](const auto&) {});
  proposer.Propose(state::RegisterNodeCmd{OneGpuNode("n2"), {}}, [](const auto&) {});
  JobSpec spec;
  spec.name = "mpi";
  spec.tasks.push_back(TaskGroupSpec{.name = "w", .replicas = 2, .command = {"true"}, .resources = Resources{1, 100, 100}});
  proposer.Propose(state::SubmitJobCmd{spec, "", "secret-1"}, [](const auto&) {});
  proposer.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 100, 100},
                                        state::PlanBind{JobId(1), 1, "n2", {0}, 100, 100}},
                                       {}},
                   [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
  workers.Connect("n2", "peer-2", 0, 0);
  dispatcher.NodeConnected("n2");
  dispatcher.Tick(0);
  ASSERT_EQ(outbox.sent.size(), 1u);
  auto bind = DecodeEnvelope(outbox.sent[0].frame)->Body<BindTask>();
  ASSERT_TRUE(bind.ok()) << bind.status().ToString();
  EXPECT_EQ(bind->env.at("GPOOL_COORDINATOR"), "tcp://coord:7400,tcp://b:7400");
  EXPECT_EQ(bind->env.at("GPOOL_COORDINATOR_PUBLIC_KEY"), "K1,K2");
  EXPECT_EQ(bind->env.at("GPOOL_EXEC_TOKEN"), security::TaskExecSecret("secret-1", TaskId{JobId(1), 1, 0}).value());
  // The other task's bind carries its own token; neither is the job's secret.
  workers.Connect("n1", "peer-1", 0, 0);
  dispatcher.NodeConnected("n1");
  dispatcher.Tick(0);
  ASSERT_EQ(outbox.sent.size(), 2u);
  auto other = DecodeEnvelope(outbox.sent[1].frame)->Body<BindTask>();
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->task, (TaskId{JobId(1), 0, 0}));
  EXPECT_EQ(other->env.at("GPOOL_EXEC_TOKEN"), security::TaskExecSecret("secret-1", TaskId{JobId(1), 0, 0}).value());
  EXPECT_NE(other->env.at("GPOOL_EXEC_TOKEN"), bind->env.at("GPOOL_EXEC_TOKEN"));
  for (const auto& sent : outbox.sent) {
    EXPECT_EQ(sent.frame.find("secret-1"), std::string::npos) << "the job's secret never leaves the coordinator";
  }
  EXPECT_EQ(bind->env.at("GPOOL_TASK_NAME"), "mpi-w-1");
  EXPECT_EQ(bind->task_hosts, (std::vector<TaskHost>{{"mpi-w-0", "n1", 1}, {"mpi-w-1", "n2", 1}}));
  // The token is replicated with the job, never shown to clients.
  EXPECT_EQ(state.FindJob(JobId(1))->exec_token, "secret-1");
  auto decoded = state::DecodeCommand(state::EncodeCommand(state::Command{1, state::SubmitJobCmd{spec, "", "t"}}));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(std::get<state::SubmitJobCmd>(decoded->body).exec_token, "t");
}

}  // namespace
}  // namespace gpool::control
