#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
// The real ZeroMQ Client against a scripted ROUTER on 127.0.0.1.
#include "client/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"

namespace gpool {
namespace {

// A fake coordinator: a ROUTER bound to an ephemeral port, served by a thread.
// For each request the handler returns the frames to send back (none: stay
// silent, as a dead or slow coordinator would).
class ScriptedServer {
 public:
  using Handler = std::function<std::vector<std::string>(const Envelope& request, int nth)>;

  explicit ScriptedServer(Handler handler) : handler_(std::move(handler)), socket_(context_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Serve(); });
  }

  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
  }

  const std::string& endpoint() const { return endpoint_; }

  std::vector<Envelope> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    while (!stop_) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(socket_, std::back_inserter(parts))) continue;
      if (parts.size() != 2) {
        ADD_FAILURE() << "expected [routing id, frame], got " << parts.size() << " frames";
        continue;
      }
      auto request = DecodeEnvelope(parts[1].to_string_view());
      if (!request.ok()) {
        ADD_FAILURE() << "client sent an undecodable frame: " << request.status().ToString();
        continue;
      }
      int nth;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(*request);
        nth = static_cast<int>(requests_.size());
      }
      for (const std::string& reply : handler_(*request, nth)) {
        std::array<zmq::const_buffer, 2> out = {zmq::buffer(parts[0].data(), parts[0].size()), zmq::buffer(reply)};
        zmq::send_multipart(socket_, out);
      }
    }
  }

  Handler handler_;
  zmq::context_t context_;
  zmq::socket_t socket_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Envelope> requests_;
  std::thread thread_;
};

template <typename T>
std::string ReplyTo(const Envelope& request, const T& body, uint64_t id_offset = 0) {
  Header header;
  header.request_id = request.header().request_id + id_offset;
  header.sender = "test-coordinator";
  return EncodeEnvelope(header, body);
}

// A ListNodesReply whose `nodes` is a string instead of a list.
struct BadNodesReply {
  static constexpr MessageType kType = MessageType::kListNodesReply;
  void Pack(wire::Packer& p) const {
    p.BeginMap(1);
    p.Field("nodes", "oops");
  }
};

JobSpec Spec() {
  JobSpec spec;
  spec.name = "j";
  TaskGroupSpec group;
  group.command = {"true"};
  spec.tasks = {group};
  return spec;
}

std::unique_ptr<Client> Connect(const std::string& endpoints, int timeout_ms = 2000, int retries = 0) {
  ClientOptions options;
  options.endpoints = endpoints;
  options.timeout_ms = timeout_ms;
  options.retries = retries;
  options.token = "sekret";
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

TEST(ClientTest, SubmitGetsTheReplyAndSendsKeyAndToken) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, SubmitJobReply{42, false})};
  });
  auto client = Connect(server.endpoint());
  auto reply = client->Submit(Spec(), "");
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->job_id, 42u);

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].type(), MessageType::kSubmitJob);
  EXPECT_EQ(requests[0].header().token, "sekret");
  EXPECT_NE(requests[0].header().sender, "");
  auto body = requests[0].Body<SubmitJob>();
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->spec, Spec());
  EXPECT_EQ(body->idempotency_key.size(), 32u);  // generated: 128 random bits in hex
}

TEST(ClientTest, EveryRequestTypeRoundTrips) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    switch (request.type()) {
      case MessageType::kListJobs: {
        ListJobsReply reply;
        reply.jobs.push_back(JobSummary{.job_id = 3, .name = "a", .state = "Running"});
        return {ReplyTo(request, reply)};
      }
      case MessageType::kGetJob: {
        GetJobReply reply;
        reply.summary.job_id = request.Body<GetJob>()->job_id;
        reply.summary.name = "a";
        reply.summary.state = "Pending";
        reply.spec = Spec();
        return {ReplyTo(request, reply)};
      }
      case MessageType::kCancelJob:
        return {ReplyTo(request, CancelJobReply{request.Body<CancelJob>()->job_id, "Cancelled"})};
      case MessageType::kListNodes: {
        ListNodesReply reply;
        reply.nodes.push_back(NodeSummary{.name = "n1", .state = "Ready"});
        return {ReplyTo(request, reply)};
      }
      case MessageType::kGetTaskLog: {
        auto body = request.Body<GetTaskLog>();
        GetTaskLogReply reply;
        reply.data = "log of " + std::to_string(body->job_id) + "." + std::to_string(body->task_index) + " max " +
                     std::to_string(body->max_bytes);
        return {ReplyTo(request, reply)};
      }
      case MessageType::kClusterStatus: {
        ClusterStatusReply reply;
        reply.replica_id = "c1";
        reply.role = "leader";
        return {ReplyTo(request, reply)};
      }
      default:
        return {ReplyTo(request, ErrorReply{"UnknownType", "unexpected", ""})};
    }
  });
  auto client = Connect(server.endpoint());
  auto jobs = client->ListJobs(false, 10);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ(jobs->jobs.at(0).job_id, 3u);
  auto job = client->GetJob(JobId(9));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->summary.job_id, 9u);
  auto cancel = client->CancelJob(JobId(9), 500);
  ASSERT_TRUE(cancel.ok()) << cancel.status().ToString();
  EXPECT_EQ(cancel->state, "Cancelled");
  auto nodes = client->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_EQ(nodes->nodes.at(0).name, "n1");
  auto log = client->GetTaskLog(JobId(9), 2, 100);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->data, "log of 9.2 max 100");
  auto status = client->ClusterStatus();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->role, "leader");

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 6u);
  EXPECT_FALSE(requests[0].Body<ListJobs>()->include_finished);
  EXPECT_EQ(requests[0].Body<ListJobs>()->limit, 10u);
  EXPECT_EQ(requests[2].Body<CancelJob>()->grace_ms, 500u);
  // Request ids are distinct.
  for (size_t i = 1; i < requests.size(); ++i) {
    EXPECT_NE(requests[i].header().request_id, requests[i - 1].header().request_id);
  }
}

TEST(ClientTest, ErrorReplyBecomesStatusWithItsCode) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, ErrorReply::FromStatus(Status::NotFound("job 9 does not exist")))};
  });
  auto client = Connect(server.endpoint());
  auto reply = client->GetJob(JobId(9));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status(), Status::NotFound("job 9 does not exist"));
}

TEST(ClientTest, GarbageReplyIsMalformed) {
  ScriptedServer server([](const Envelope&, int) -> std::vector<std::string> {
    return {std::string("\xc1 this is not msgpack")};
  });
  auto client = Connect(server.endpoint());
  auto reply = client->ListNodes();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kMalformed) << reply.status().ToString();
}

TEST(ClientTest, WrongReplyTypeOrShapeIsMalformed) {
  ScriptedServer server([](const Envelope& request, int nth) -> std::vector<std::string> {
    if (nth == 1) return {ReplyTo(request, Ack{})};
    return {ReplyTo(request, BadNodesReply{})};
  });
  auto client = Connect(server.endpoint());
  auto first = client->ListNodes();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kMalformed) << first.status().ToString();
  auto second = client->ListNodes();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kMalformed) << second.status().ToString();
}

TEST(ClientTest, NoReplyIsUnavailableAfterTheTimeout) {
  ScriptedServer server([](const Envelope&, int) -> std::vector<std::string> { return {}; });
  auto client = Connect(server.endpoint(), /*timeout_ms=*/200, /*retries=*/0);
  auto start = std::chrono::steady_clock::now();
  auto reply = client->ClusterStatus();
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status(), Status::Unavailable("coordinator at " + server.endpoint() +
                                                " did not answer within 200 ms"));
  EXPECT_GE(elapsed, std::chrono::milliseconds(200));
  EXPECT_LT(elapsed, std::chrono::milliseconds(5000));
}

// A request no coordinator reads whole is refused before it is sent: sent,
// it would be dropped with the connection and end in "did not answer".
TEST(ClientTest, ARequestPastWhatCoordinatorsReadIsRefusedUnsent) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, SubmitJobReply{1, false})};
  });
  auto client = Connect(server.endpoint(), /*timeout_ms=*/5000, /*retries=*/3);
  JobSpec spec = Spec();
  spec.tasks[0].command = {"echo", std::string(kMinReadableFrameBytes, 'x')};
  auto reply = client->Submit(spec, "");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kResourceExhausted) << reply.status().ToString();
  EXPECT_NE(reply.status().message().find("no coordinator reads requests over 67108864 bytes"), std::string::npos)
      << reply.status().message();
  EXPECT_TRUE(server.requests().empty());
  // A large request within it goes out.
  spec.tasks[0].command = {"echo", std::string(size_t{8} << 20, 'x')};
  EXPECT_TRUE(client->Submit(spec, "").ok());
  EXPECT_EQ(server.requests().size(), 1u);
}

// Where an attempt is lost on purpose, the one after it must be answered
// within the timeout, or the request count is off: 1 s, not 200 ms, so the
// server thread may be off the CPU a while on a loaded box.
TEST(ClientTest, RetryAfterTimeoutReusesTheIdempotencyKey) {
  ScriptedServer server([](const Envelope& request, int nth) -> std::vector<std::string> {
    if (nth == 1) return {};  // the first attempt is lost
    return {ReplyTo(request, SubmitJobReply{7, false})};
  });
  auto client = Connect(server.endpoint(), /*timeout_ms=*/1000, /*retries=*/2);
  auto reply = client->Submit(Spec(), "");
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->job_id, 7u);
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  auto a = requests[0].Body<SubmitJob>();
  auto b = requests[1].Body<SubmitJob>();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(a->idempotency_key.empty());
  EXPECT_EQ(a->idempotency_key, b->idempotency_key);
  EXPECT_NE(requests[0].header().request_id, requests[1].header().request_id);
}

TEST(ClientTest, GivenIdempotencyKeyIsSentAsIs) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, SubmitJobReply{7, true})};
  });
  auto client = Connect(server.endpoint());
  auto reply = client->Submit(Spec(), "my-key");
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_TRUE(reply->duplicate);
  EXPECT_EQ(server.requests().at(0).Body<SubmitJob>()->idempotency_key, "my-key");
}

TEST(ClientTest, RepliesToOtherRequestsAreDropped) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, SubmitJobReply{666, false}, /*id_offset=*/1000),
            ReplyTo(request, SubmitJobReply{1, false})};
  });
  auto client = Connect(server.endpoint());
  auto reply = client->Submit(Spec(), "k");
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->job_id, 1u);
}

TEST(ClientTest, UnaddressedErrorReplyIsTakenAsTheAnswer) {
  // A coordinator that cannot read a request's header answers with id 0.
  ScriptedServer server([](const Envelope&, int) -> std::vector<std::string> {
    return {EncodeEnvelope(Header{}, ErrorReply{"UnsupportedVersion", "protocol version 1 is not supported", ""})};
  });
  auto client = Connect(server.endpoint());
  auto reply = client->ListNodes();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnsupportedVersion) << reply.status().ToString();
}

TEST(ClientTest, TimeoutMovesToTheNextEndpoint) {
  ScriptedServer dead([](const Envelope&, int) -> std::vector<std::string> { return {}; });
  ScriptedServer alive([](const Envelope& request, int) -> std::vector<std::string> {
    ClusterStatusReply reply;
    reply.replica_id = "alive";
    reply.role = "leader";
    return {ReplyTo(request, reply)};
  });
  auto client = Connect(dead.endpoint() + "," + alive.endpoint(), /*timeout_ms=*/1000, /*retries=*/1);
  auto reply = client->ClusterStatus();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->replica_id, "alive");
  EXPECT_EQ(dead.requests().size(), 1u);
}

TEST(ClientTest, NotLeaderRedirectsToTheLeader) {
  ScriptedServer leader([](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, SubmitJobReply{11, false})};
  });
  // The follower names the leader without a scheme; the client adds tcp://.
  std::string leader_address = leader.endpoint().substr(std::string("tcp://").size());
  ScriptedServer follower([&](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, ErrorReply{"NotLeader", "not the leader", leader_address})};
  });
  auto client = Connect(follower.endpoint(), /*timeout_ms=*/2000, /*retries=*/1);
  auto reply = client->Submit(Spec(), "key-1");
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->job_id, 11u);
  ASSERT_EQ(leader.requests().size(), 1u);
  EXPECT_EQ(leader.requests()[0].Body<SubmitJob>()->idempotency_key, "key-1");
  // Later requests go straight to the leader.
  ASSERT_TRUE(client->Submit(Spec(), "key-2").ok());
  EXPECT_EQ(follower.requests().size(), 1u);
  EXPECT_EQ(leader.requests().size(), 2u);
}

TEST(ClientTest, ChangeReplicasSendsTheRequestAndReadsTheReply) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    auto body = request.Body<ChangeReplicas>();
    if (!body.ok()) return {ReplyTo(request, ErrorReply{"Malformed", body.status().message(), ""})};
    if (body->op == ReplicaOp::kRemove) return {ReplyTo(request, ErrorReply{"NotFound", "replica 9 is not a voter", ""})};
    return {ReplyTo(request, ChangeReplicasReply{57, {1, 2, 3, body->replica_id}})};
  });
  auto client = Connect(server.endpoint());
  auto reply = client->ChangeReplicas(ChangeReplicas{ReplicaOp::kAdd, 4, "tcp://10.0.0.4:7402", "tcp://10.0.0.4:7400"});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->index, 57u);
  EXPECT_EQ(reply->voters, (std::vector<uint64_t>{1, 2, 3, 4}));

  auto removed = client->ChangeReplicas(ChangeReplicas{ReplicaOp::kRemove, 9, "", ""});
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(removed.status().message(), "replica 9 is not a voter");

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].type(), MessageType::kChangeReplicas);
  EXPECT_EQ(requests[0].header().token, "sekret");
  auto body = requests[0].Body<ChangeReplicas>();
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(body->op, ReplicaOp::kAdd);
  EXPECT_EQ(body->replica_id, 4u);
  EXPECT_EQ(body->peer_address, "tcp://10.0.0.4:7402");
  EXPECT_EQ(body->client_address, "tcp://10.0.0.4:7400");
}

TEST(ClientTest, ChangeReplicasFollowsNotLeader) {
  ScriptedServer leader([](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, ChangeReplicasReply{8, {1, 3}})};
  });
  ScriptedServer follower([&](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, ErrorReply{"NotLeader", "not the leader", leader.endpoint()})};
  });
  auto client = Connect(follower.endpoint(), /*timeout_ms=*/2000, /*retries=*/1);
  auto reply = client->ChangeReplicas(ChangeReplicas{ReplicaOp::kRemove, 2, "", ""});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->voters, (std::vector<uint64_t>{1, 3}));
  ASSERT_EQ(follower.requests().size(), 1u);
  ASSERT_EQ(leader.requests().size(), 1u);
  EXPECT_EQ(leader.requests()[0].Body<ChangeReplicas>()->replica_id, 2u);
}

TEST(ClientTest, UpdateNodeSendsTheRequestAndReadsTheReply) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    auto body = request.Body<UpdateNode>();
    if (!body.ok()) return {ReplyTo(request, ErrorReply{"Malformed", body.status().message(), ""})};
    if (body->node != "node-0") {
      return {ReplyTo(request, ErrorReply{"NotFound", "node " + body->node + " is not registered", ""})};
    }
    NodeSummary node;
    node.name = body->node;
    node.state = "Ready";
    node.pool = "public";
    node.labels = body->labels;
    return {ReplyTo(request, UpdateNodeReply{node})};
  });
  auto client = Connect(server.endpoint());
  UpdateNode update;
  update.node = "node-0";
  update.op = NodeUpdateOp::kLabel;
  update.labels = {{"team", "vision"}};
  update.remove_labels = {"old"};
  auto reply = client->UpdateNode(update);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->node.name, "node-0");
  EXPECT_EQ(reply->node.pool, "public");
  EXPECT_EQ(reply->node.labels, (std::map<std::string, std::string>{{"team", "vision"}}));

  update.node = "node-9";
  auto missing = client->UpdateNode(update);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "node node-9 is not registered");

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].type(), MessageType::kUpdateNode);
  auto body = requests[0].Body<UpdateNode>();
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(body->node, "node-0");
  EXPECT_EQ(body->op, NodeUpdateOp::kLabel);
  EXPECT_EQ(body->labels, (std::map<std::string, std::string>{{"team", "vision"}}));
  EXPECT_EQ(body->remove_labels, (std::vector<std::string>{"old"}));
}

TEST(ClientTest, QueueRequestsRoundTrip) {
  ScriptedServer server([](const Envelope& request, int) -> std::vector<std::string> {
    switch (request.type()) {
      case MessageType::kUpdateQueue: {
        auto body = request.Body<UpdateQueue>();
        if (!body.ok()) return {ReplyTo(request, ErrorReply{"Malformed", body.status().message(), ""})};
        if (body->op == QueueOp::kDelete) {
          return {ReplyTo(request, ErrorReply{"FailedPrecondition", "queue research has 1 unfinished job", ""})};
        }
        QueueSummary queue;
        queue.spec = body->spec;
        queue.allocated = {{"gpu", 3}};
        return {ReplyTo(request, UpdateQueueReply{queue})};
      }
      case MessageType::kListQueues: {
        ListQueuesReply reply;
        reply.queues.push_back(QueueSummary{.spec = QueueSpec{.name = "root", .parent = ""}});
        reply.queues.push_back(QueueSummary{.spec = QueueSpec{.name = "default"}, .jobs_pending = 2});
        return {ReplyTo(request, reply)};
      }
      case MessageType::kExplainJob: {
        ExplainJobReply reply;
        reply.job = JobSummary{.job_id = request.Body<ExplainJob>()->job_id, .name = "a", .state = "Pending"};
        reply.reasons = {"queue default: capability gpu=4 reached"};
        reply.queue_path.push_back(QueueSummary{.spec = QueueSpec{.name = "default"}});
        reply.jobs_ahead = 2;
        return {ReplyTo(request, reply)};
      }
      default:
        return {ReplyTo(request, ErrorReply{"UnknownType", "unexpected", ""})};
    }
  });
  auto client = Connect(server.endpoint());
  UpdateQueue create;
  create.op = QueueOp::kCreate;
  create.spec.name = "research";
  create.spec.capability = {{"gpu", 16}, {"gpu/A100", 8}, {"cpu", 64000}, {"memory", 262144}};
  create.spec.deserved = {{"gpu", 8}};
  auto created = client->UpdateQueue(create);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->queue.spec, create.spec);
  EXPECT_EQ(created->queue.allocated, (Quota{{"gpu", 3}}));

  UpdateQueue remove;
  remove.op = QueueOp::kDelete;
  remove.spec.name = "research";
  auto removed = client->UpdateQueue(remove);
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(removed.status().message(), "queue research has 1 unfinished job");

  auto queues = client->ListQueues();
  ASSERT_TRUE(queues.ok()) << queues.status().ToString();
  ASSERT_EQ(queues->queues.size(), 2u);
  EXPECT_EQ(queues->queues[0].spec.parent, "");
  EXPECT_EQ(queues->queues[1].spec.parent, "root");
  EXPECT_EQ(queues->queues[1].jobs_pending, 2u);

  auto explained = client->ExplainJob(JobId(17));
  ASSERT_TRUE(explained.ok()) << explained.status().ToString();
  EXPECT_EQ(explained->job.job_id, 17u);
  EXPECT_EQ(explained->reasons, std::vector<std::string>{"queue default: capability gpu=4 reached"});
  EXPECT_EQ(explained->queue_path.at(0).spec.name, "default");
  EXPECT_EQ(explained->jobs_ahead, 2u);

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].type(), MessageType::kUpdateQueue);
  auto body = requests[0].Body<UpdateQueue>();
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(body->op, QueueOp::kCreate);
  EXPECT_EQ(body->spec, create.spec);
  EXPECT_EQ(requests[1].Body<UpdateQueue>()->op, QueueOp::kDelete);
  EXPECT_EQ(requests[2].type(), MessageType::kListQueues);
  EXPECT_EQ(requests[3].type(), MessageType::kExplainJob);
  EXPECT_EQ(requests[3].Body<ExplainJob>()->job_id, 17u);
}

TEST(ClientTest, UpdateQueueIsResentAfterATimeout) {
  ScriptedServer server([](const Envelope& request, int nth) -> std::vector<std::string> {
    if (nth == 1) return {};  // the first attempt is lost
    return {ReplyTo(request, UpdateQueueReply{QueueSummary{.spec = request.Body<UpdateQueue>()->spec}})};
  });
  auto client = Connect(server.endpoint(), /*timeout_ms=*/1000, /*retries=*/1);
  UpdateQueue update;
  update.op = QueueOp::kUpdate;
  update.spec.name = "default";
  update.spec.deserved = {{"gpu", 2}};
  auto reply = client->UpdateQueue(update);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->queue.spec.deserved, (Quota{{"gpu", 2}}));
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].Body<UpdateQueue>()->spec, requests[1].Body<UpdateQueue>()->spec);
}

TEST(ClientTest, NotLeaderWithoutRetriesLeftIsReturned) {
  ScriptedServer follower([](const Envelope& request, int) -> std::vector<std::string> {
    return {ReplyTo(request, ErrorReply{"NotLeader", "not the leader", "tcp://127.0.0.1:1"})};
  });
  auto client = Connect(follower.endpoint(), /*timeout_ms=*/2000, /*retries=*/0);
  auto reply = client->ListNodes();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kNotLeader);
}

TEST(ClientTest, ConnectRejectsBadOptions) {
  ClientOptions options;
  options.endpoints = " , ";
  EXPECT_EQ(Client::Connect(options).status().code(), StatusCode::kInvalidArgument);
  options.endpoints = "tcp://host";
  EXPECT_EQ(Client::Connect(options).status().code(), StatusCode::kInvalidArgument);
  options.endpoints = "tcp://127.0.0.1:7400";
  options.timeout_ms = 0;
  EXPECT_EQ(Client::Connect(options).status().code(), StatusCode::kInvalidArgument);
}

TEST(ClientTest, ParseEndpoints) {
  auto endpoints = ParseEndpoints("a:1, tcp://b:2 ,ipc:///tmp/x,");
  ASSERT_TRUE(endpoints.ok()) << endpoints.status().ToString();
  EXPECT_EQ(*endpoints, (std::vector<std::string>{"tcp://a:1", "tcp://b:2", "ipc:///tmp/x"}));
  EXPECT_FALSE(ParseEndpoints("").ok());
  EXPECT_FALSE(ParseEndpoints("tcp://:7400").ok());
  EXPECT_FALSE(ParseEndpoints("tcp://a:port").ok());
}

TEST(ClientTest, IdempotencyKeysAreRandom) {
  std::string a = Client::NewIdempotencyKey();
  std::string b = Client::NewIdempotencyKey();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace gpool

namespace gpool {
namespace {

// Nothing listens on the port: the client says so after the connect timeout,
// not after the (much longer) reply timeout.
TEST(ClientConnectTest, UnreachableCoordinatorFailsFastWithAClearMessage) {
  // Hold a port bound but not listening: connections to it are refused, and
  // no other process can take it while the test runs.
  int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  ClientOptions options;
  options.endpoints = endpoint;
  options.timeout_ms = 60'000;
  options.connect_timeout_ms = 200;
  options.retries = 0;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok());
  const auto start = std::chrono::steady_clock::now();
  auto reply = (*client)->ListNodes();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("cannot connect"), std::string::npos) << reply.status().message();
  EXPECT_LT(waited, std::chrono::seconds(30));
  ::close(holder);
}

}  // namespace
}  // namespace gpool
