// Each client endpoint alone, on one RequestContext over the fake ports
// (fake_ports.h): no Gateway, no envelope routing. The Gateway's own tests
// (gateway_test.cc and friends) cover the routing and the whole API.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "control/gateway/cluster_endpoint.h"
#include "control/gateway/exec_endpoint.h"
#include "control/gateway/jobs_endpoint.h"
#include "control/gateway/nodes_endpoint.h"
#include "control/gateway/queues_endpoint.h"
#include "control/gateway/sessions_endpoint.h"
#include "control/gateway/snapshot_endpoint.h"
#include "control/gateway/usage_endpoint.h"
#include "control/gateway/users_endpoint.h"
#include "control/gateway/watch_endpoint.h"
#include "control/gateway_fixture.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_snapshot.h"
#include "protocol/messages_usage.h"
#include "protocol/messages_users.h"
#include "protocol/messages_watch.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/users.h"
#include "protocol/validate_users.h"

namespace gpool::control {
namespace {

// The gateway tests' fake ports and reply helpers (gateway_fixture.h), with
// a RequestContext of their own over them and no Gateway in the way.
class EndpointTest : public GatewayTest {
 protected:
  static Actor Admin() { return Actor{.kind = Actor::Kind::kInsecureAdmin, .name = "insecure"}; }
  static Actor Nobody() { return Actor{.kind = Actor::Kind::kAnonymous, .name = "exec-token"}; }

  template <typename T>
  void Handle(Endpoint& endpoint, const T& body, const Actor& actor) {
    auto envelope = DecodeEnvelope(EncodeEnvelope(Header{.request_id = ++request_id_}, body));
    ASSERT_TRUE(envelope.ok());
    ctx_.BeginFrame(now_ms_);
    endpoint.Handle(Request{"client", request_id_, T::kType, actor}, *envelope, now_ms_);
    ctx_.EndFrame();
  }

  RequestContext ctx_{GatewayOptions{.replica_id = "c-1", .client_address = "tcp://127.0.0.1:7400"},
                      state_, workers_, relay_, outbox_, proposer_};
  uint64_t request_id_ = 0;
};

TEST_F(EndpointTest, QueuesCreatesAQueueAuditedFirstAndRefusesAnAnonymousCaller) {
  QueuesEndpoint queues(ctx_);
  QueueSpec spec;
  spec.name = "ml";
  spec.parent = "root";
  Handle(queues, UpdateQueue{QueueOp::kCreate, spec}, Admin());
  EXPECT_EQ(LastAs<UpdateQueueReply>().queue.spec.name, "ml");
  // Recorded before it is applied, and its outcome after (issue 48).
  EXPECT_EQ(proposer_.proposed(), (std::vector<std::string>{"Audit", "UpdateQueue", "Audit"}));
  EXPECT_EQ(state_.audit().back().outcome, "succeeded");
  EXPECT_NE(state_.FindQueue("ml"), nullptr);

  spec.name = "web";
  Handle(queues, UpdateQueue{QueueOp::kCreate, spec}, Nobody());
  EXPECT_EQ(LastError(), "PermissionDenied");
  EXPECT_EQ(state_.FindQueue("web"), nullptr);

  Handle(queues, ListQueues{}, Admin());
  EXPECT_FALSE(LastAs<ListQueuesReply>().queues.empty());
}

TEST_F(EndpointTest, JobsSubmitsAndReadsBackAJob) {
  JobsEndpoint jobs(ctx_);
  JobSpec spec;
  spec.name = "j";
  TaskGroupSpec group;
  group.command = {"true"};
  spec.tasks.push_back(group);
  Handle(jobs, SubmitJob{spec, ""}, Admin());
  const uint64_t id = LastAs<SubmitJobReply>().job_id;
  ASSERT_GT(id, 0u);
  EXPECT_FALSE(state_.FindJob(JobId(id))->exec_token.empty());
  Handle(jobs, GetJob{id}, Admin());
  EXPECT_EQ(LastAs<GetJobReply>().spec.name, "j");
  Handle(jobs, GetJob{id + 100}, Admin());
  EXPECT_EQ(LastError(), "NotFound");
}

TEST_F(EndpointTest, SessionsRenewsOnlyASessionThatExists) {
  SessionsEndpoint sessions(ctx_);
  Handle(sessions, RenewSession{42}, Admin());
  EXPECT_EQ(LastError(), "NotFound");
  EXPECT_TRUE(proposer_.proposed().empty());
}

TEST_F(EndpointTest, NodesRefusesAnUpdateOfANodeThatNeverRegistered) {
  NodesEndpoint nodes(ctx_);
  UpdateNode update;
  update.node = "ghost";
  update.op = NodeUpdateOp::kCordon;
  Handle(nodes, update, Admin());
  EXPECT_EQ(LastError(), "NotFound");
  EXPECT_TRUE(proposer_.proposed().empty());
  Handle(nodes, ListNodes{}, Admin());
  EXPECT_TRUE(LastAs<ListNodesReply>().nodes.empty());
}

TEST_F(EndpointTest, UsersAnswersWhoAmIAndRefusesAnAnonymousUserList) {
  UsersEndpoint users(ctx_);
  Handle(users, WhoAmI{}, Admin());
  EXPECT_EQ(LastAs<WhoAmIReply>().kind, "insecure");
  Handle(users, ListUsers{}, Nobody());
  EXPECT_EQ(LastError(), "PermissionDenied");
}

TEST_F(EndpointTest, UsersHoldsTheRecordAnUpdateLeavesToTodaysRulesBeforeProposing) {
  UsersEndpoint users(ctx_);
  // Distinct keys of 40 Z85 characters each.
  auto key = [](size_t i) { return std::string(38, 'a') + char('a' + i / 26) + char('a' + i % 26); };
  UserSpec bob{"bob"};
  for (size_t i = 0; i < kMaxKeysPerUser; ++i) bob.keys.push_back(key(i));
  Handle(users, UpdateUser{UserOp::kCreate, bob}, Admin());
  ASSERT_EQ(LastAs<UpdateUserReply>().user.keys.size(), kMaxKeysPerUser);
  proposer_.clear();
  // One more is within the request's own limits but not the record's.
  Handle(users, UpdateUser{UserOp::kAddKey, UserSpec{"bob", {key(kMaxKeysPerUser)}}}, Admin());
  EXPECT_EQ(LastError(), "InvalidArgument");
  EXPECT_TRUE(proposer_.proposed().empty());
  EXPECT_EQ(state_.FindUser("bob")->keys.size(), kMaxKeysPerUser);
}

TEST_F(EndpointTest, ExecNamesATaskThatDoesNotExist) {
  ExecEndpoint exec(ctx_);
  ExecPoll poll;
  poll.task = "nope-0";
  Handle(exec, poll, Admin());
  EXPECT_EQ(LastError(), "NotFound");
}

TEST_F(EndpointTest, ClusterReportsThisReplicaAsTheLeader) {
  ClusterEndpoint cluster(ctx_);
  Handle(cluster, ClusterStatus{}, Nobody());
  const auto status = LastAs<ClusterStatusReply>();
  EXPECT_EQ(status.replica_id, "c-1");
  EXPECT_EQ(status.role, "leader");
}

TEST_F(EndpointTest, UsageShowsNoPriceTableAndSetsPricesForAdminsOnly) {
  UsageEndpoint usage(ctx_);
  UpdatePrices prices;
  prices.op = PricesOp::kShow;
  Handle(usage, prices, Admin());
  EXPECT_FALSE(LastAs<UpdatePricesReply>().set);
  prices.op = PricesOp::kSet;
  Handle(usage, prices, Nobody());
  EXPECT_EQ(LastError(), "PermissionDenied");
  EXPECT_EQ(state_.usage_ledger().prices(), nullptr);
}

TEST_F(EndpointTest, WatchWithoutAHubIsUnavailable) {
  WatchEndpoint watch(ctx_);
  Handle(watch, Watch{}, Admin());
  EXPECT_EQ(LastError(), "Unavailable");
}

TEST_F(EndpointTest, SnapshotExportsOnlyForAnAdminAndDropsThemOffTheLead) {
  SnapshotEndpoint snapshot(ctx_);
  Handle(snapshot, ExportSnapshot{}, Nobody());
  EXPECT_EQ(LastError(), "PermissionDenied");
  ExportSnapshot start;
  start.max_bytes = 1024;
  Handle(snapshot, start, Admin());
  EXPECT_EQ(snapshot.exports_held(), 1u);
  proposer_.set_leading(false);
  snapshot.Tick(now_ms_);
  EXPECT_EQ(snapshot.exports_held(), 0u);
}

}  // namespace
}  // namespace gpool::control
