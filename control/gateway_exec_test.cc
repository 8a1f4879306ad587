// The Gateway's exec requests over the fake ports: how a task is named and
// found, who may exec (the cluster token, or the exec token of a live task
// of the target job and nothing else), and the relay to the task's node.
#include <gtest/gtest.h>

#include "control/gateway_fixture.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_exec.h"
#include "protocol/model/task_report.h"
#include "protocol/security/keys.h"
#include "protocol/security/task_exec_key.h"

namespace gpool::control {
namespace {

class GatewayExecTest : public GatewayTest {
 protected:
  GatewayExecTest() {
    GatewayOptions options{.token = "admin", .replica_id = "c-1"};
    options.new_exec_token = [this] { return "job-token-" + std::to_string(++tokens_); };
    Rebuild(options);
    for (const char* node : {"n1", "n2"}) {
      proposer_.Propose(state::RegisterNodeCmd{OneGpuNode(node), {}}, [](const auto&) {});
      workers_.Connect(node, std::string("peer-") + node, now_ms_, 2'000'000);
    }
    // Job 1 "train" on n1 and job 2 "other" on n2, both running.
    Submit("train");
    Submit("other");
    Run(1, "n1");
    Run(2, "n2");
  }

  void Submit(const std::string& name, uint32_t replicas = 1) {
    JobSpec spec;
    spec.name = name;
    TaskGroupSpec group;
    group.name = "worker";
    group.replicas = replicas;
    group.command = {"true"};
    group.resources.gpus = 1;
    spec.tasks.push_back(group);
    Send(SubmitJob{spec, ""}, 1, "admin");
    ASSERT_EQ(Last().type(), MessageType::kSubmitJobReply);
  }
  void Run(uint64_t job, const std::string& node) {
    proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(job), 0, node, {0}, 0, 0}}, {}},
                      [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
    TaskEvent started{.node = node, .seq = ++event_seq_, .task = TaskId{JobId(job), 0, 0}, .kind = TaskEventKind::kStarted};
    proposer_.Propose(state::TaskEventCmd{started}, [](const auto&) {});
  }
  void Exit(uint64_t job, const std::string& node, uint32_t index) {
    TaskEvent exited{.node = node, .seq = ++event_seq_, .task = TaskId{JobId(job), index, 0}, .kind = TaskEventKind::kExited};
    proposer_.Propose(state::TaskEventCmd{exited}, [](const auto&) {});
  }

  std::string LastError() {
    Envelope env = Last();
    if (env.type() != MessageType::kErrorReply) return "not an error: " + std::string(MessageTypeName(env.type()));
    auto error = env.Body<ErrorReply>();
    return error->code + ": " + error->message;
  }
  // Sends ExecStart; true when it went on to a worker (and which).
  bool StartReaches(const std::string& task, const std::string& token, std::string* peer = nullptr) {
    outbox_.sent.clear();
    Send(ExecStart{.task = task, .command = {"hostname"}}, 7, token);
    if (outbox_.sent.empty() || !outbox_.sent.back().to_worker) return false;
    if (peer != nullptr) *peer = outbox_.sent.back().peer;
    return Last().type() == MessageType::kTaskExecStart;
  }
  // The job's own secret (never sent to a node) and a task's token, as its bind carries it.
  const std::string& TokenOf(uint64_t job) { return state_.FindJob(JobId(job))->exec_token; }
  std::string TaskToken(uint64_t job, uint32_t index = 0) {
    return security::TaskExecSecret(TokenOf(job), TaskId{JobId(job), index, 0}).value();
  }
  // ExecStart from a CurveZMQ connection authenticated as task `name` with
  // public key `key` (what the key directory names a task's key), carrying
  // the task's token as the CLI does.
  bool StartReachesAsTask(const std::string& target, const std::string& name, const std::string& token) {
    outbox_.sent.clear();
    auto pair = security::KeyPairOfSecret(token);
    Header header{.request_id = 7};
    header.token = token;
    gateway_->OnFrame("client", EncodeEnvelope(header, ExecStart{.task = target, .command = {"hostname"}}), now_ms_,
                      Principal{Principal::Kind::kTask, name, pair.ok() ? pair->public_key : "?"});
    return !outbox_.sent.empty() && outbox_.sent.back().to_worker;
  }

  int tokens_ = 0;
  uint64_t event_seq_ = 0;
};

TEST_F(GatewayExecTest, EachJobGetsItsOwnExecTokenAtSubmit) {
  EXPECT_EQ(TokenOf(1), "job-token-1");
  EXPECT_EQ(TokenOf(2), "job-token-2");
  EXPECT_EQ(RandomExecToken().size(), 40u);  // a Z85 CURVE secret key
  EXPECT_NE(RandomExecToken(), RandomExecToken());
}

TEST_F(GatewayExecTest, TheClusterTokenMayExecIntoAnyJob) {
  std::string peer;
  EXPECT_TRUE(StartReaches("train-worker-0", "admin", &peer));
  EXPECT_EQ(peer, "peer-n1");
  auto start = Last().Body<TaskExecStart>();
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(start->task, (TaskId{JobId(1), 0, 0}));
  EXPECT_EQ(start->command, std::vector<std::string>{"hostname"});
  EXPECT_TRUE(StartReaches("2.0", "admin", &peer));
  EXPECT_EQ(peer, "peer-n2");
}

TEST_F(GatewayExecTest, ATasksTokenOpensItsOwnJobOnly) {
  EXPECT_TRUE(StartReaches("train-worker-0", TaskToken(1)));
  EXPECT_TRUE(StartReaches("1.0", TaskToken(1)));
  EXPECT_FALSE(StartReaches("other-worker-0", TaskToken(1)));
  EXPECT_EQ(LastError().rfind("Unauthenticated: the token does not authorise exec into job 2", 0), 0u) << LastError();
  EXPECT_FALSE(StartReaches("2.0", TaskToken(1)));
  EXPECT_EQ(LastError().rfind("Unauthenticated", 0), 0u);
  // ... and nothing but exec.
  Send(CancelJob{.job_id = 1}, 9, TaskToken(1));
  EXPECT_EQ(LastError(), "Unauthenticated: wrong or missing token");
  EXPECT_FALSE(state_.FindJob(JobId(1))->cancel_requested);
}

// Issue 48: the job's own secret is no node's credential; it opens nothing.
TEST_F(GatewayExecTest, TheJobsOwnSecretOpensNothing) {
  EXPECT_FALSE(StartReaches("1.0", TokenOf(1)));
  EXPECT_EQ(LastError().rfind("Unauthenticated: the token does not authorise exec into job 1", 0), 0u) << LastError();
  EXPECT_FALSE(StartReaches("train-worker-0", TokenOf(1)));
}

// MPI's exec-rsh: rank 0's token opens the other ranks of its job while
// rank 0 runs, never another job, and nothing once rank 0 has ended, on a
// connection it opened before too.
TEST_F(GatewayExecTest, ATasksTokenOpensItsSiblingsOnlyWhileItRuns) {
  for (const char* node : {"n3", "n4"}) {
    proposer_.Propose(state::RegisterNodeCmd{OneGpuNode(node), {}}, [](const auto&) {});
    workers_.Connect(node, std::string("peer-") + node, now_ms_, 2'000'000);
  }
  Submit("mpi", 2);  // job 3: tasks 3.0 on n3 and 3.1 on n4, a gang bound in one plan
  proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(3), 0, "n3", {0}, 0, 0},
                                         state::PlanBind{JobId(3), 1, "n4", {0}, 0, 0}},
                                        {}},
                    [](const state::ApplyResult& r) { ASSERT_EQ(r.binds_applied, 2u) << r.status.ToString(); });
  for (uint32_t index : {0u, 1u}) {
    TaskEvent started{.node = index == 0 ? "n3" : "n4", .seq = ++event_seq_, .task = TaskId{JobId(3), index, 0}};
    proposer_.Propose(state::TaskEventCmd{started}, [](const auto&) {});
  }
  ASSERT_EQ(state_.FindTask(TaskId{JobId(3), 1, 0})->state, TaskState::kRunning);
  const std::string rank0 = TaskToken(3, 0);
  EXPECT_NE(rank0, TaskToken(3, 1));
  EXPECT_NE(rank0, TokenOf(3));
  std::string peer;
  EXPECT_TRUE(StartReaches("3.1", rank0, &peer));
  EXPECT_EQ(peer, "peer-n4");
  EXPECT_TRUE(StartReachesAsTask("mpi-worker-1", "3.0", rank0));
  ASSERT_FALSE(state_.audit().empty());
  EXPECT_EQ(state_.audit().back().user, "task-3.0") << "the audit names the task, not just its job";
  EXPECT_TRUE(state_.audit().back().allowed);
  EXPECT_FALSE(StartReaches("1.0", rank0));
  EXPECT_EQ(LastError().rfind("Unauthenticated", 0), 0u) << LastError();
  EXPECT_FALSE(StartReachesAsTask("1.0", "3.0", rank0));
  EXPECT_EQ(LastError().rfind("Unauthenticated", 0), 0u) << LastError();

  Exit(3, "n3", 0);
  ASSERT_EQ(state_.FindTask(TaskId{JobId(3), 0, 0})->state, TaskState::kSucceeded);
  ASSERT_EQ(state_.FindTask(TaskId{JobId(3), 1, 0})->state, TaskState::kRunning);
  EXPECT_FALSE(StartReaches("3.1", rank0));
  EXPECT_EQ(LastError().rfind("Unauthenticated: the token does not authorise exec into job 3", 0), 0u) << LastError();
  EXPECT_FALSE(StartReachesAsTask("3.1", "3.0", rank0));
  EXPECT_EQ(LastError().rfind("Unauthenticated: key ", 0), 0u) << LastError();
  EXPECT_NE(LastError().find("task 3.0 ended"), std::string::npos) << LastError();
  // The sibling's own token still opens it.
  EXPECT_TRUE(StartReaches("3.1", TaskToken(3, 1)));
  EXPECT_TRUE(StartReachesAsTask("3.1", "3.1", TaskToken(3, 1)));
}

TEST_F(GatewayExecTest, NoTokenOrAWrongOneIsRefusedWhenATokenIsConfigured) {
  EXPECT_FALSE(StartReaches("train-worker-0", ""));
  EXPECT_EQ(LastError(), "Unauthenticated: wrong or missing token");
  EXPECT_FALSE(StartReaches("train-worker-0", "guess"));
  EXPECT_EQ(LastError().rfind("Unauthenticated", 0), 0u);
  Send(ExecPoll{.task = "train-worker-0", .exec_id = 1}, 3, "");
  EXPECT_EQ(LastError(), "Unauthenticated: wrong or missing token");
}

TEST_F(GatewayExecTest, BadTargetsAndCommandsGetTypedErrors) {
  EXPECT_FALSE(StartReaches("nope-worker-0", "admin"));
  EXPECT_EQ(LastError().rfind("NotFound", 0), 0u) << LastError();
  EXPECT_FALSE(StartReaches("9.0", "admin"));
  EXPECT_EQ(LastError().rfind("NotFound", 0), 0u) << LastError();
  EXPECT_FALSE(StartReaches("train-worker-5", "admin"));
  EXPECT_EQ(LastError().rfind("NotFound", 0), 0u) << LastError();
  EXPECT_FALSE(StartReaches("", "admin"));
  EXPECT_EQ(LastError().rfind("InvalidArgument", 0), 0u) << LastError();
  Send(ExecStart{.task = "train-worker-0", .command = {}}, 4, "admin");
  EXPECT_EQ(LastError(), "InvalidArgument: command: empty");
  Send(ExecStart{.task = "train-worker-0", .command = {"x"}, .lease_ms = 1}, 4, "admin");
  EXPECT_EQ(LastError().rfind("InvalidArgument: lease_ms", 0), 0u) << LastError();
  Send(ExecStart{.task = "train-worker-0", .command = std::vector<std::string>(kMaxExecArgs + 1, "x")}, 4, "admin");
  EXPECT_EQ(LastError().rfind("ResourceExhausted", 0), 0u) << LastError();
  Send(ExecSignal{.task = "train-worker-0", .exec_id = 1, .signal = 11}, 4, "admin");
  EXPECT_EQ(LastError().rfind("InvalidArgument: signal", 0), 0u) << LastError();
  // A task that is not running: job 3 stays pending.
  Submit("pending");
  EXPECT_FALSE(StartReaches("pending-worker-0", "admin"));
  EXPECT_EQ(LastError().rfind("FailedPrecondition", 0), 0u) << LastError();
}

TEST_F(GatewayExecTest, AStableNameTwoJobsShareIsAmbiguousUnlessScopedToAJob) {
  proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n3"), {}}, [](const auto&) {});
  workers_.Connect("n3", "peer-n3", now_ms_, 2'000'000);
  Submit("train");  // job 3, also "train"
  Run(3, "n3");
  EXPECT_FALSE(StartReaches("train-worker-0", "admin"));
  EXPECT_EQ(LastError().rfind("FailedPrecondition: task name train-worker-0 is ambiguous: jobs 1, 3", 0), 0u)
      << LastError();
  outbox_.sent.clear();
  Send(ExecStart{.task = "train-worker-0", .job_id = 3, .command = {"true"}}, 5, TaskToken(3));
  ASSERT_TRUE(outbox_.sent.back().to_worker);
  EXPECT_EQ(outbox_.sent.back().peer, "peer-n3");
}

TEST_F(GatewayExecTest, RepliesAreRelayedBackWithTheResolvedTask) {
  ASSERT_TRUE(StartReaches("train-worker-0", TaskToken(1)));
  const uint64_t request = Last().header().request_id;
  relay_.WorkerReplied("n1", WorkerReply(request, ExecStartReply{.exec_id = 4, .pid = 99}));
  auto started = Last().Body<ExecStartReply>();
  ASSERT_TRUE(started.ok()) << LastError();
  EXPECT_EQ(Last().header().request_id, 7u);
  EXPECT_EQ(started->exec_id, 4u);
  EXPECT_EQ(started->task, "1.0");
  EXPECT_EQ(started->node, "n1");

  Send(ExecPoll{.task = "train-worker-0", .exec_id = 4, .stdout_offset = 10}, 8, TaskToken(1));
  auto poll = Last().Body<TaskExecPoll>();
  ASSERT_TRUE(poll.ok());
  EXPECT_EQ(poll->exec_id, 4u);
  EXPECT_EQ(poll->stdout_offset, 10u);
  ExecPollReply output;
  output.stdout_data.assign("hi");
  output.exited = true;
  output.exit_code = 3;
  relay_.WorkerReplied("n1", WorkerReply(Last().header().request_id, output));
  auto polled = Last().Body<ExecPollReply>();
  ASSERT_TRUE(polled.ok());
  EXPECT_EQ(polled->exit_code, 3);

  Send(ExecSignal{.task = "1.0", .exec_id = 4, .signal = 2}, 9, TaskToken(1));
  auto signal = Last().Body<TaskExecSignal>();
  ASSERT_TRUE(signal.ok());
  EXPECT_EQ(signal->signal, 2);
  relay_.WorkerReplied("n1", WorkerReply(Last().header().request_id, Ack{}));
  EXPECT_EQ(Last().type(), MessageType::kAck);
  EXPECT_EQ(Last().header().request_id, 9u);
}

}  // namespace
}  // namespace gpool::control
