// Issue 48 through the Gateway over the fake ports: a key's requests
// waiting on a worker are bounded by --max-inflight-per-key and freed by
// their answers; a user's open `gpool exec` commands by
// --max-exec-streams-per-user, freed by an exit or an unpolled lease; other
// users keep working and admins are held to neither.
#include <string>

#include <gtest/gtest.h>

#include "control/gateway_fixture.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_exec.h"
#include "protocol/model/task_report.h"

namespace gpool::control {
namespace {

class GatewayLimitsTest : public GatewayTest {
 protected:
  void Start(uint32_t max_inflight, uint32_t max_streams) {
    GatewayOptions options{.replica_id = "c-1", .client_address = "tcp://127.0.0.1:7400"};
    options.max_inflight_per_key = max_inflight;
    options.max_exec_streams_per_user = max_streams;
    Rebuild(options);
    AddRoleTree();
    proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n1"), {}}, [](const auto&) {});
    workers_.Connect("n1", "peer-n1", now_ms_, 2'000'000);
    // Job 1, mem's, running on n1.
    JobSpec spec = OneGpuJob("train");
    spec.queue = "ml-a";
    SendAs(kMem, SubmitJob{spec, ""});
    ASSERT_EQ(Last().type(), MessageType::kSubmitJobReply) << ErrorOf(Last());
    proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 0, 0}}, {}},
                      [](const state::ApplyResult& r) { ASSERT_TRUE(r.status.ok()) << r.status.ToString(); });
    TaskEvent started{.node = "n1", .seq = 1, .task = TaskId{JobId(1), 0, 0}, .kind = TaskEventKind::kStarted};
    proposer_.Propose(state::TaskEventCmd{started}, [](const auto&) {});
  }

  // Sends `body` as `who`; true when it went on to the worker (its request
  // id there in *relayed), false when the caller was answered at once.
  template <typename T>
  bool Relayed(const Principal& who, const T& body, uint64_t id, uint64_t* relayed = nullptr) {
    outbox_.sent.clear();
    SendAs(who, body, id);
    if (outbox_.sent.empty() || !outbox_.sent.back().to_worker) return false;
    if (relayed != nullptr) *relayed = Last().header().request_id;
    return true;
  }
  std::string LastErrorText() {
    Envelope env = Last();
    return ErrorOf(env);
  }

  const Principal kMem{Principal::Kind::kUser, "mem", kKeyMember};
  const Principal kAdmin{Principal::Kind::kUser, "root-admin", kKeyAdmin};
  const Principal kViewer{Principal::Kind::kUser, "view", kKeyViewer};
};

TEST_F(GatewayLimitsTest, AKeysUnansweredRequestsAreBoundedAndFreedByTheirAnswers) {
  Start(/*max_inflight=*/3, /*max_streams=*/32);
  uint64_t first = 0;
  ASSERT_TRUE(Relayed(kMem, ExecPoll{.task = "1.0", .exec_id = 1}, 11, &first));
  ASSERT_TRUE(Relayed(kMem, ExecPoll{.task = "1.0", .exec_id = 1}, 12));
  ASSERT_TRUE(Relayed(kMem, ExecPoll{.task = "1.0", .exec_id = 1}, 13));
  EXPECT_FALSE(Relayed(kMem, ExecPoll{.task = "1.0", .exec_id = 1}, 14));
  EXPECT_EQ(Last().header().request_id, 14u);
  EXPECT_EQ(LastErrorText().rfind("ResourceExhausted: key " + std::string(kKeyMember) + " has 3 requests", 0), 0u)
      << LastErrorText();
  EXPECT_NE(LastErrorText().find("--max-inflight-per-key 3"), std::string::npos) << LastErrorText();
  EXPECT_EQ(gateway_->inflight().held(kKeyMember), 3u);

  // Another user is not held by mem's requests; an admin is held by none.
  SendAs(kViewer, ListJobs{}, 20);
  EXPECT_EQ(Last().type(), MessageType::kListJobsReply) << ErrorOf(Last());
  for (uint64_t id = 30; id < 36; ++id) EXPECT_TRUE(Relayed(kAdmin, ExecPoll{.task = "1.0", .exec_id = 1}, id)) << id;
  EXPECT_EQ(gateway_->inflight().held(kKeyAdmin), 0u);

  // The worker answers mem's first: one more of mem's goes through.
  relay_.WorkerReplied("n1", WorkerReply(first, ExecPollReply{}));
  EXPECT_EQ(Last().type(), MessageType::kExecPollReply);
  EXPECT_EQ(Last().header().request_id, 11u);
  EXPECT_EQ(gateway_->inflight().held(kKeyMember), 2u);
  EXPECT_TRUE(Relayed(kMem, ExecPoll{.task = "1.0", .exec_id = 1}, 15));
  EXPECT_FALSE(Relayed(kMem, ExecPoll{.task = "1.0", .exec_id = 1}, 16));

  // Its connection closing frees what it was waiting for.
  gateway_->PeerClosed("client");
  EXPECT_EQ(gateway_->inflight().held(kKeyMember), 0u);
  EXPECT_TRUE(Relayed(kMem, ExecPoll{.task = "1.0", .exec_id = 1}, 17));
}

TEST_F(GatewayLimitsTest, AUsersExecStreamsAreBoundedAndFreedByAnExitOrAnUnpolledLease) {
  Start(/*max_inflight=*/256, /*max_streams=*/2);
  const ExecStart start{.task = "1.0", .command = {"sleep", "60"}, .lease_ms = 5000};
  uint64_t relayed = 0;
  for (uint64_t exec_id : {1, 2}) {
    ASSERT_TRUE(Relayed(kMem, start, 40 + exec_id, &relayed));
    relay_.WorkerReplied("n1", WorkerReply(relayed, ExecStartReply{.exec_id = exec_id, .pid = 100}));
    ASSERT_EQ(Last().type(), MessageType::kExecStartReply) << ErrorOf(Last());
  }
  EXPECT_FALSE(Relayed(kMem, start, 43));
  EXPECT_EQ(LastErrorText().rfind("ResourceExhausted: mem has 2 exec streams open", 0), 0u) << LastErrorText();
  EXPECT_NE(LastErrorText().find("--max-exec-streams-per-user 2"), std::string::npos) << LastErrorText();
  // An admin is not held to it.
  for (uint64_t id = 50; id < 54; ++id) EXPECT_TRUE(Relayed(kAdmin, start, id)) << id;

  // Stream 1 exits: its slot is free.
  ASSERT_TRUE(Relayed(kMem, ExecPoll{.task = "1.0", .exec_id = 1}, 44, &relayed));
  ExecPollReply exited;
  exited.exited = true;
  relay_.WorkerReplied("n1", WorkerReply(relayed, exited));
  ASSERT_TRUE(Relayed(kMem, start, 45, &relayed));
  // The worker refuses this start: its reservation is given back.
  relay_.WorkerReplied("n1", WorkerReply(relayed, ErrorReply::FromStatus(Status::NotFound("no such command"))));
  EXPECT_EQ(Last().type(), MessageType::kErrorReply);
  ASSERT_TRUE(Relayed(kMem, start, 46, &relayed));
  relay_.WorkerReplied("n1", WorkerReply(relayed, ExecStartReply{.exec_id = 3, .pid = 101}));
  EXPECT_FALSE(Relayed(kMem, start, 47));

  // Nobody polls: once the lease (5 s, and a grace) has run out the worker
  // has killed them, and the slots are free.
  now_ms_ += 5000;
  gateway_->Tick(now_ms_);
  EXPECT_FALSE(Relayed(kMem, start, 48));
  now_ms_ += 2001;
  gateway_->Tick(now_ms_);
  EXPECT_TRUE(Relayed(kMem, start, 49));
}

// Who the connection limit exempts: the --admin-key and users with the
// admin role, by their registered key only.
TEST_F(GatewayLimitsTest, OnlyAdminsKeysAreExemptFromTheConnectionLimit) {
  GatewayOptions options{.token = "cluster-token", .admin_key = "break-glass", .replica_id = "c-1"};
  Rebuild(options);
  AddRoleTree();
  EXPECT_TRUE(gateway_->IsAdminPrincipal(kAdmin));
  EXPECT_TRUE(gateway_->IsAdminPrincipal(Principal{Principal::Kind::kUser, "admin", "break-glass"}));
  EXPECT_FALSE(gateway_->IsAdminPrincipal(kMem));
  EXPECT_FALSE(gateway_->IsAdminPrincipal(kViewer));
  // A name with a key that is not its own, or no user key at all.
  EXPECT_FALSE(gateway_->IsAdminPrincipal(Principal{Principal::Kind::kUser, "root-admin", kKeyMember}));
  EXPECT_FALSE(gateway_->IsAdminPrincipal(Principal{Principal::Kind::kTask, "1.0", "task-key"}));
  EXPECT_FALSE(gateway_->IsAdminPrincipal(Principal{}));
}

}  // namespace
}  // namespace gpool::control
