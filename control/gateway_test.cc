// The Gateway alone, over the fake ports: every client request, its reply and
// its typed errors, without sockets, a log or a worker. The client API's
// behaviour is covered here; the multi-process tests only check that the
// pieces are wired.
#include "control/gateway.h"

#include <gtest/gtest.h>

#include "control/gateway_fixture.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_worker.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"

namespace gpool::control {
namespace {

TEST_F(GatewayTest, SubmitAnswersOnlyAfterCommitWithTheJobId) {
  Send(SubmitJob{OneGpuJob(), "key-1"}, 9);
  EXPECT_EQ(Last().header().request_id, 9u);
  auto reply = LastAs<SubmitJobReply>();
  EXPECT_EQ(reply.job_id, 1u);
  EXPECT_FALSE(reply.duplicate);
  ASSERT_NE(state_.FindJob(JobId(1)), nullptr);
  // The audit entry is committed first: nothing is applied unrecorded. Its
  // outcome follows (issue 48, finding 9).
  EXPECT_EQ(proposer_.proposed(), (std::vector<std::string>{"Audit", "SubmitJob", "Audit"}));
  ASSERT_EQ(state_.audit().size(), 2u);
  EXPECT_EQ(state_.audit().front().request, "SubmitJob");
  EXPECT_TRUE(state_.audit().front().allowed);
  EXPECT_EQ(state_.audit().front().outcome, "requested");
  EXPECT_EQ(state_.audit().back().request, "SubmitJob");
  EXPECT_EQ(state_.audit().back().outcome, "succeeded");
  EXPECT_TRUE(state_.audit().back().code.empty());
}

TEST_F(GatewayTest, TheAuditRecordsAFailedMutationWithItsCode) {
  QueueSpec spec;
  spec.name = "ml";
  spec.parent = "root";
  Send(UpdateQueue{QueueOp::kCreate, spec});
  ASSERT_EQ(Last().type(), MessageType::kUpdateQueueReply);
  const size_t before = state_.audit().size();
  Send(UpdateQueue{QueueOp::kCreate, spec});  // exists: a failure the state machine reports
  ASSERT_EQ(LastError(), "AlreadyExists");
  ASSERT_EQ(state_.audit().size(), before + 2);
  EXPECT_EQ(state_.audit()[before].outcome, "requested");
  const AuditEntry& failed = state_.audit().back();
  EXPECT_EQ(failed.request, "UpdateQueue");
  EXPECT_TRUE(failed.allowed);
  EXPECT_EQ(failed.outcome, "failed");
  EXPECT_EQ(failed.code, "AlreadyExists");
  EXPECT_NE(failed.reason.find("already exists"), std::string::npos) << failed.reason;
}

TEST_F(GatewayTest, ARetriedSubmitWithTheSameKeyIsTheSameJob) {
  Send(SubmitJob{OneGpuJob(), "key-1"});
  Send(SubmitJob{OneGpuJob(), "key-1"});
  auto reply = LastAs<SubmitJobReply>();
  EXPECT_EQ(reply.job_id, 1u);
  EXPECT_TRUE(reply.duplicate);
  EXPECT_EQ(state_.jobs().size(), 1u);
}

TEST_F(GatewayTest, AnInvalidSpecIsRefusedBeforeAnythingIsProposed) {
  JobSpec spec = OneGpuJob();
  spec.tasks.clear();
  Send(SubmitJob{spec, ""});
  EXPECT_EQ(LastError(), "InvalidArgument");
  Send(SubmitJob{OneGpuJob(), std::string(257, 'k')});
  EXPECT_EQ(LastError(), "InvalidArgument");
  EXPECT_TRUE(proposer_.proposed().empty());
  EXPECT_TRUE(state_.jobs().empty());
}

// Every spec stays in memory and in snapshots while its job is kept, so its
// size is bounded before it reaches the log, with the limit in the message.
TEST_F(GatewayTest, AnOversizeSpecIsResourceExhaustedBeforeAnythingIsProposed) {
  JobSpec big = OneGpuJob("big");
  big.tasks[0].command = {"echo", std::string(kDefaultMaxSpecBytes, 'x')};
  Send(SubmitJob{big, ""});
  Envelope reply = Last();
  EXPECT_EQ(ErrorOf(reply).rfind("ResourceExhausted: spec: ", 0), 0u) << ErrorOf(reply);
  EXPECT_NE(ErrorOf(reply).find(" bytes encoded, over the limit of 1048576 bytes (the coordinator's --max-spec-bytes)"),
            std::string::npos)
      << ErrorOf(reply);
  EXPECT_TRUE(proposer_.proposed().empty());

  GatewayOptions options{.replica_id = "c-1", .client_address = "tcp://127.0.0.1:7400"};
  options.max_spec_bytes = 2 * kDefaultMaxSpecBytes;
  Rebuild(options);
  Send(SubmitJob{big, ""});
  EXPECT_EQ(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id))->spec.name, "big");
}

TEST_F(GatewayTest, GarbageWrongTokensAndUnknownTypesGetTypedErrors) {
  gateway_->OnFrame("client", "not msgpack at all", now_ms_);
  EXPECT_EQ(LastError(), "Malformed");
  Send(RegisterNode{OneGpuNode("n1"), {}, "test"});  // a worker's message on the client port
  EXPECT_EQ(LastError(), "UnknownType");
  Rebuild(GatewayOptions{.token = "secret"});
  Send(ListJobs{}, 3);
  EXPECT_EQ(LastError(), "Unauthenticated");
  EXPECT_EQ(Last().header().request_id, 3u);
  Send(ListJobs{}, 4, "secret");
  LastAs<ListJobsReply>();
  EXPECT_TRUE(proposer_.proposed().empty());
}

TEST_F(GatewayTest, CancelCommitsAndUnknownJobsAreNotFound) {
  Send(CancelJob{42, 0});
  EXPECT_EQ(LastError(), "NotFound");
  Send(SubmitJob{OneGpuJob(), ""});
  Send(CancelJob{1, 0});
  auto reply = LastAs<CancelJobReply>();
  EXPECT_EQ(reply.job_id, 1u);
  EXPECT_EQ(reply.state, "Cancelled");
}

TEST_F(GatewayTest, ListJobsIsNewestFirstWithinTheLimitAndCanHideFinished) {
  for (int i = 0; i < 3; ++i) Send(SubmitJob{OneGpuJob("j" + std::to_string(i)), ""});
  Send(CancelJob{1, 0});
  Send(ListJobs{.include_finished = true, .limit = 2});
  auto two = LastAs<ListJobsReply>();
  ASSERT_EQ(two.jobs.size(), 2u);
  EXPECT_EQ(two.jobs[0].job_id, 3u);
  EXPECT_EQ(two.jobs[1].job_id, 2u);
  Send(ListJobs{.include_finished = false, .limit = 0});
  auto live = LastAs<ListJobsReply>();
  ASSERT_EQ(live.jobs.size(), 2u);
  EXPECT_EQ(live.jobs[1].job_id, 2u) << "the cancelled job 1 is left out";
}

TEST_F(GatewayTest, GetJobShowsTheWorkersLastMeasuredUsage) {
  Send(GetJob{7});
  EXPECT_EQ(LastError(), "NotFound");
  RunOneTaskOnN1();
  Send(GetJob{1});
  auto before = LastAs<GetJobReply>();
  ASSERT_EQ(before.tasks.size(), 1u);
  EXPECT_EQ(before.tasks[0].node, "n1");
  EXPECT_EQ(before.tasks[0].gpu_memory_used_mib, -1) << "not measured yet";
  workers_.RecordUsage("n1", {TaskUsage{TaskId{JobId(1), 0, 0}, 2048}});
  Send(GetJob{1});
  EXPECT_EQ(LastAs<GetJobReply>().tasks[0].gpu_memory_used_mib, 2048);
}

TEST_F(GatewayTest, ListNodesTakesLastSeenFromTheConnectionAndDevicesOnRequest) {
  RunOneTaskOnN1();
  Send(ListNodes{});
  auto plain = LastAs<ListNodesReply>();
  ASSERT_EQ(plain.nodes.size(), 1u);
  EXPECT_EQ(plain.nodes[0].last_seen_ms, 2'000'000);
  EXPECT_EQ(plain.nodes[0].gpus_used, 1u);
  EXPECT_TRUE(plain.nodes[0].devices.empty());
  Send(ListNodes{.devices = true});
  EXPECT_EQ(LastAs<ListNodesReply>().nodes[0].devices.size(), 1u);
}

TEST_F(GatewayTest, TaskLogIsRelayedFromTheTasksNodeOnly) {
  Send(GetTaskLog{.job_id = 1});
  EXPECT_EQ(LastError(), "NotFound") << "no such job";
  Send(SubmitJob{OneGpuJob(), ""});
  Send(GetTaskLog{.job_id = 1, .task_index = 3});
  EXPECT_EQ(LastError(), "NotFound") << "no such task";
  Send(GetTaskLog{.job_id = 1});
  EXPECT_EQ(LastError(), "NotFound") << "not run yet";

  outbox_.sent.clear();
  proposer_.Propose(state::RegisterNodeCmd{OneGpuNode("n1"), {}}, [](const auto&) {});
  proposer_.Propose(state::ApplyPlanCmd{{state::PlanBind{JobId(1), 0, "n1", {0}, 0, 0}}, {}}, [](const auto&) {});
  Send(GetTaskLog{.job_id = 1}, 5);
  EXPECT_EQ(LastError(), "Unavailable") << "n1 is not connected";

  workers_.Connect("n1", "peer-n1", now_ms_, now_ms_);
  workers_.Connect("n2", "peer-n2", now_ms_, now_ms_);
  Send(GetTaskLog{.job_id = 1, .max_bytes = 100}, 6);
  ASSERT_TRUE(outbox_.sent.back().to_worker);
  EXPECT_EQ(outbox_.sent.back().peer, "peer-n1");
  Envelope fetch = Last();
  ASSERT_EQ(fetch.type(), MessageType::kFetchLog);
  EXPECT_EQ(fetch.Body<FetchLog>()->max_bytes, 100u);
  const uint64_t request = fetch.header().request_id;

  // Another node answering the request is not taken for n1's answer.
  const size_t sent = outbox_.sent.size();
  relay_.WorkerReplied("n2", WorkerReply(request, FetchLogReply{Bytes("forged"), 6, false}));
  EXPECT_EQ(outbox_.sent.size(), sent);
  relay_.WorkerReplied("n1", WorkerReply(request, FetchLogReply{Bytes("ok"), 2, true}));
  auto reply = LastAs<GetTaskLogReply>();
  EXPECT_EQ(Last().header().request_id, 6u);
  EXPECT_EQ(std::string(reply.data.begin(), reply.data.end()), "ok");
  EXPECT_EQ(reply.size, 2u);
  EXPECT_TRUE(reply.truncated);
}

TEST_F(GatewayTest, ALogTheNodeDoesNotSendInTimeIsUnavailable) {
  RunOneTaskOnN1();
  Send(GetTaskLog{.job_id = 1}, 8);
  EXPECT_EQ(relay_.in_flight(), 1u);
  relay_.Tick(now_ms_ + 999);
  EXPECT_EQ(Last().type(), MessageType::kFetchLog);
  relay_.Tick(now_ms_ + 1000);
  EXPECT_EQ(LastError(), "Unavailable");
  EXPECT_EQ(Last().header().request_id, 8u);
  EXPECT_EQ(relay_.in_flight(), 0u);
}

TEST_F(GatewayTest, StatusOfASingleReplicaCountsNodesGpusAndJobs) {
  RunOneTaskOnN1();
  Send(SubmitJob{OneGpuJob("waits"), ""});
  Send(ClusterStatus{});
  auto status = LastAs<ClusterStatusReply>();
  EXPECT_EQ(status.replica_id, "c-1");
  EXPECT_EQ(status.role, "leader");
  EXPECT_EQ(status.term, proposer_.epoch());
  ASSERT_EQ(status.replicas.size(), 1u);
  EXPECT_EQ(status.replicas[0].address, "tcp://127.0.0.1:7400");
  EXPECT_EQ(status.nodes_total, 1u);
  EXPECT_EQ(status.nodes_ready, 1u);
  EXPECT_EQ(status.gpus_total, 1u);
  EXPECT_EQ(status.gpus_used, 1u);
  EXPECT_EQ(status.jobs_pending, 1u);
}

TEST_F(GatewayTest, NodeUpdatesAreValidatedThenCommitted) {
  Send(UpdateNode{.node = "n1", .op = NodeUpdateOp::kCordon});
  EXPECT_EQ(LastError(), "NotFound");
  RunOneTaskOnN1();
  Send(RawOpBody<MessageType::kUpdateNode>{.node = "n1", .op = "explode"});
  EXPECT_EQ(LastError(), "InvalidArgument");
  EXPECT_FALSE(state_.FindNode("n1")->cordoned);
  Send(UpdateNode{.node = "n1", .op = NodeUpdateOp::kCordon});
  EXPECT_TRUE(LastAs<UpdateNodeReply>().node.cordoned);
  EXPECT_TRUE(state_.FindNode("n1")->cordoned);
}

// The rules for node updates, queue specs and job specs are the edge's:
// each bad request is refused here, before anything reaches the log.
TEST_F(GatewayTest, BadNodeUpdatesAreRefusedBeforeTheLog) {
  RunOneTaskOnN1();
  proposer_.clear();
  UpdateNode pool{.node = "n1", .op = NodeUpdateOp::kPool, .pool = "shared"};
  UpdateNode empty{.node = "n1", .op = NodeUpdateOp::kLabel};
  UpdateNode bad_key{.node = "n1", .op = NodeUpdateOp::kLabel, .labels = {{"bad key", "x"}}};
  UpdateNode bad_value{.node = "n1", .op = NodeUpdateOp::kLabel, .labels = {{"team", "a b"}}};
  UpdateNode both{.node = "n1", .op = NodeUpdateOp::kLabel, .labels = {{"team", "x"}}, .remove_labels = {"team"}};
  for (const UpdateNode& bad : {pool, empty, bad_key, bad_value, both}) {
    Send(bad);
    EXPECT_EQ(LastError(), "InvalidArgument") << NameOf(bad.op);
  }
  EXPECT_TRUE(proposer_.proposed().empty());
  EXPECT_EQ(state_.FindNode("n1")->pool, "public");
}

// Exclusive nodes belong to a queue: a job naming the exclusive pool for a
// queue that owns none is refused at once, typed, with the command to fix it.
TEST_F(GatewayTest, AnExclusiveJobOfAQueueOwningNoExclusiveNodeIsRefused) {
  RunOneTaskOnN1();
  JobSpec exclusive = OneGpuJob("x");
  exclusive.pool = "exclusive";
  proposer_.clear();
  Send(SubmitJob{exclusive, ""});
  EXPECT_EQ(ErrorOf(Last()), "FailedPrecondition: queue 'default' owns no exclusive nodes (an operator assigns them "
                             "with `gpool node pool NAME exclusive --queue default`)");
  EXPECT_TRUE(proposer_.proposed().empty());
  // Owned by an unknown queue: refused; by another queue: still refused.
  Send(UpdateNode{.node = "n1", .op = NodeUpdateOp::kPool, .pool = "exclusive", .queue = "nobody"});
  EXPECT_EQ(LastError(), "NotFound");
  Send(UpdateNode{.node = "n1", .op = NodeUpdateOp::kPool, .pool = "public", .queue = "default"});
  EXPECT_EQ(LastError(), "InvalidArgument");
  Send(UpdateNode{.node = "n1", .op = NodeUpdateOp::kPool, .pool = "exclusive", .queue = "default"});
  EXPECT_EQ(LastAs<UpdateNodeReply>().node.pool_queue, "default");
  Send(SubmitJob{exclusive, ""});
  EXPECT_EQ(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id))->spec.pool, "exclusive");
}

TEST_F(GatewayTest, BadQueueSpecsAreRefusedBeforeTheLog) {
  QueueSpec capped_below_deserved;
  capped_below_deserved.name = "p4";
  capped_below_deserved.capability = {{"gpu", 1}};
  capped_below_deserved.deserved = {{"gpu", 2}};
  QueueSpec unknown_resource;
  unknown_resource.name = "p5";
  unknown_resource.capability = {{"tpu", 1}};
  for (const QueueSpec& bad : {capped_below_deserved, unknown_resource}) {
    Send(UpdateQueue{.op = QueueOp::kCreate, .spec = bad});
    EXPECT_EQ(LastError(), "InvalidArgument") << bad.name;
  }
  EXPECT_TRUE(proposer_.proposed().empty());
  EXPECT_EQ(state_.FindQueue("p4"), nullptr);
}

// The gateway's configured limits are the only ones: apply does not veto
// what they admit with defaults of its own.
TEST_F(GatewayTest, AJobWithinRaisedLimitsIsCommitted) {
  GatewayOptions options{.replica_id = "c-1", .client_address = "tcp://127.0.0.1:7400"};
  options.spec_limits.max_tasks_per_job = 20'000;
  Rebuild(options);
  JobSpec wide = OneGpuJob("wide");
  wide.tasks[0].replicas = 15'000;
  Send(SubmitJob{wide, ""});
  ASSERT_TRUE(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id)) != nullptr);
  EXPECT_EQ(state_.FindJob(JobId(1))->tasks.size(), 15'000u);
}

// Sharing belongs on pooled nodes: a sharing job naming no pool goes there
// once the cluster has some (public before), and naming public is refused.
TEST_F(GatewayTest, ASharingJobDefaultsToThePooledPoolOnceThereIsOne) {
  RunOneTaskOnN1();
  JobSpec share = OneGpuJob("share");
  share.tasks[0].resources.gpu_memory_mib = 4096;
  Send(SubmitJob{share, ""});
  EXPECT_EQ(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id))->spec.pool, "public") << "no pooled node yet";
  Send(SubmitJob{OneGpuJob("whole"), ""});
  EXPECT_EQ(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id))->spec.pool, "public");
  Send(UpdateNode{.node = "n1", .op = NodeUpdateOp::kPool, .pool = "pooled"});
  ASSERT_EQ(LastAs<UpdateNodeReply>().node.pool, "pooled");
  share.name = "share-2";
  Send(SubmitJob{share, ""});
  EXPECT_EQ(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id))->spec.pool, "pooled");
  Send(SubmitJob{OneGpuJob("whole-2"), ""});
  EXPECT_EQ(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id))->spec.pool, "public") << "whole devices: public";
  share.pool = "public";
  proposer_.clear();
  Send(SubmitJob{share, ""});
  EXPECT_NE(ErrorOf(Last()).find("FailedPrecondition: GPU shares and MIG instances run on pooled nodes"),
            std::string::npos)
      << ErrorOf(Last());
  EXPECT_TRUE(proposer_.proposed().empty());
}

TEST_F(GatewayTest, AQueueRestrictedToPoolsRefusesJobsForOtherPools) {
  QueueSpec team;
  team.name = "team";
  team.pools = {"pooled"};
  Send(UpdateQueue{.op = QueueOp::kCreate, .spec = team});
  ASSERT_EQ(LastAs<UpdateQueueReply>().queue.spec.pools, (std::vector<std::string>{"pooled"}));
  QueueSpec dev;
  dev.name = "team-dev";
  dev.parent = "team";
  Send(UpdateQueue{.op = QueueOp::kCreate, .spec = dev});
  JobSpec job = OneGpuJob();
  job.queue = "team-dev";
  proposer_.clear();
  Send(SubmitJob{job, ""});  // whole devices: public by default, which team does not allow
  EXPECT_EQ(ErrorOf(Last()), "FailedPrecondition: queue 'team' runs jobs only in the pools pooled, not 'public' "
                             "(queue 'team-dev' is under it)");
  EXPECT_TRUE(proposer_.proposed().empty());
  job.pool = "pooled";
  Send(SubmitJob{job, ""});
  EXPECT_EQ(state_.FindJob(JobId(LastAs<SubmitJobReply>().job_id))->spec.pool, "pooled");
  QueueSpec bad = team;
  bad.name = "twice";
  bad.pools = {"pooled", "pooled"};
  Send(UpdateQueue{.op = QueueOp::kCreate, .spec = bad});
  EXPECT_EQ(LastError(), "InvalidArgument");
  bad.pools = {"gold"};
  Send(UpdateQueue{.op = QueueOp::kCreate, .spec = bad});
  EXPECT_EQ(LastError(), "InvalidArgument");
}

TEST_F(GatewayTest, QueuesAreCreatedListedAndExplained) {
  QueueSpec team;
  team.name = "team-a";
  Send(UpdateQueue{.op = QueueOp::kCreate, .spec = team});
  EXPECT_EQ(LastAs<UpdateQueueReply>().queue.spec.name, "team-a");
  Send(ListQueues{});
  bool listed = false;
  for (const auto& q : LastAs<ListQueuesReply>().queues) listed = listed || q.spec.name == "team-a";
  EXPECT_TRUE(listed);
  Send(ExplainJob{5});
  EXPECT_EQ(LastError(), "NotFound");
  JobSpec spec = OneGpuJob();
  spec.queue = "team-a";
  Send(SubmitJob{spec, ""});
  Send(ExplainJob{1});
  auto explained = LastAs<ExplainJobReply>();
  ASSERT_FALSE(explained.queue_path.empty());
  EXPECT_EQ(explained.queue_path.front().spec.name, "team-a");
}

TEST_F(GatewayTest, ReplicaChangesAreValidatedAndASingleReplicaRefusesThem) {
  Send(RawOpBody<MessageType::kChangeReplicas>{.op = "grow"});
  EXPECT_EQ(LastError(), "InvalidArgument");
  Send(ChangeReplicas{.op = ReplicaOp::kAdd, .replica_id = 0, .peer_address = "tcp://h:7402"});
  EXPECT_EQ(LastError(), "InvalidArgument");
  Send(ChangeReplicas{.op = ReplicaOp::kAdd, .replica_id = 2, .peer_address = "h:7402"});
  EXPECT_EQ(LastError(), "InvalidArgument");
  const size_t before = state_.audit().size();
  Send(ChangeReplicas{.op = ReplicaOp::kAdd, .replica_id = 2, .peer_address = "tcp://h:7402"});
  EXPECT_EQ(LastError(), "FailedPrecondition");
  // Allowed, then failed: the audit says so (it used to say only "allowed").
  ASSERT_EQ(state_.audit().size(), before + 2);
  EXPECT_EQ(state_.audit()[before].outcome, "requested");
  const AuditEntry& outcome = state_.audit().back();
  EXPECT_EQ(outcome.request, "ChangeReplicas");
  EXPECT_EQ(outcome.outcome, "failed");
  EXPECT_EQ(outcome.code, "FailedPrecondition");
  EXPECT_NE(outcome.reason.find("single replica"), std::string::npos) << outcome.reason;
}

}  // namespace
}  // namespace gpool::control
