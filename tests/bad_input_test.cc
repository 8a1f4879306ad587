// Bad input cannot hurt: garbage, truncated and mistyped msgpack, oversize
// frames, invalid specs and wrong tokens sent to the client and worker ports
// each get a typed ErrorReply, change nothing, and the coordinator keeps
// serving.
#include <gtest/gtest.h>

#include <random>

#include <zmq.hpp>

#include "client/client.h"
#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "tests/local_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr size_t kMaxFrame = 64 * 1024;

// One DEALER connection that sends raw frames and reads one reply.
class RawPeer {
 public:
  // `key`: the key pair the connection authenticates with on a secured
  // cluster ("admin": the test user's; another name: an unregistered key,
  // which the worker port admits as a new node).
  RawPeer(LocalCluster& cluster, const std::string& endpoint, const std::string& key)
      : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    cluster.SecureSocket(socket_, key);
    socket_.connect(endpoint);
  }

  Result<Envelope> Send(const std::vector<std::string>& parts) {
    for (size_t i = 0; i < parts.size(); ++i) {
      socket_.send(zmq::buffer(parts[i]), i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(5000)) == 0) return Status::DeadlineExceeded("no reply");
    zmq::message_t reply;
    if (!socket_.recv(reply)) return Status::Unavailable("recv failed");
    return DecodeEnvelope(reply.to_string_view());
  }

  // Sends and returns the error code of the ErrorReply (or a description of what came instead).
  std::string ErrorCode(const std::string& frame) { return ErrorCode(std::vector<std::string>{frame}); }
  std::string ErrorCode(const std::vector<std::string>& parts) {
    auto reply = Send(parts);
    if (!reply.ok()) return "undecodable reply: " + reply.status().ToString();
    if (reply->type() != MessageType::kErrorReply) return "not an error: " + std::string(MessageTypeName(reply->type()));
    auto error = reply->Body<ErrorReply>();
    if (!error.ok()) return "bad ErrorReply: " + error.status().ToString();
    last_message_ = error->message;
    return error->code;
  }
  const std::string& last_message() const { return last_message_; }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string last_message_;
};

std::string Raw(const std::function<void(wire::Packer&)>& fn) {
  msgpack::sbuffer buffer;
  wire::Packer p(buffer);
  fn(p);
  return std::string(buffer.data(), buffer.size());
}

JobSpec ValidSpec() {
  JobSpec spec;
  spec.name = "valid";
  TaskGroupSpec group;
  group.command = {"true"};
  spec.tasks.push_back(group);
  return spec;
}

class BadInputTest : public ::testing::Test {
 protected:
  static LocalClusterOptions Options() {
    LocalClusterOptions options;
    options.workers = 0;
    options.coordinator_flags = {"--max-frame-bytes", std::to_string(kMaxFrame)};
    return options;
  }
  LocalCluster cluster_{Options()};
};

TEST_F(BadInputTest, ClientPortAnswersEveryBadInputWithATypedError) {
  cluster_.StartCoordinator();
  RawPeer peer(cluster_, cluster_.client_endpoint(), "admin");

  std::string valid_submit = EncodeEnvelope(Header{.request_id = 1}, SubmitJob{ValidSpec(), "k"});
  EXPECT_EQ(peer.ErrorCode("\xc1\xc1garbage"), "Malformed");
  EXPECT_EQ(peer.ErrorCode(valid_submit.substr(0, valid_submit.size() / 2)), "Malformed");
  EXPECT_EQ(peer.ErrorCode(valid_submit + "trailing"), "Malformed");
  EXPECT_NE(peer.last_message().find("trailing"), std::string::npos);
  EXPECT_EQ(peer.ErrorCode(std::string(kMaxFrame + 10, 'x')), "ResourceExhausted");
  EXPECT_EQ(peer.ErrorCode(std::vector<std::string>{valid_submit, valid_submit}), "Malformed");
  EXPECT_EQ(peer.ErrorCode(Raw([](wire::Packer& p) {
              p.BeginMap(4);
              p.Field("v", uint32_t{1});
              p.Field("type", "GetJob");
              p.Field("id", uint64_t{2});
              p.Key("body");
              p.BeginMap(1);
              p.Field("job_id", "seven");
            })),
            "Malformed");
  EXPECT_EQ(peer.last_message(), "body.job_id: expected unsigned integer, got string");
  EXPECT_EQ(peer.ErrorCode(Raw([](wire::Packer& p) {
              p.BeginMap(4);
              p.Field("v", uint32_t{1});
              p.Field("type", "FormatDisk");
              p.Field("id", uint64_t{3});
              p.Key("body");
              p.BeginMap(0);
            })),
            "UnknownType");
  EXPECT_EQ(peer.ErrorCode(Raw([](wire::Packer& p) {
              p.BeginMap(4);
              p.Field("v", uint32_t{7});
              p.Field("type", "GetJob");
              p.Field("id", uint64_t{4});
              p.Key("body");
              p.BeginMap(0);
            })),
            "UnsupportedVersion");
  // A worker command sent to the client port.
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 5}, PreemptTask{})), "UnknownType");
  // Semantically invalid specs name the field.
  JobSpec zero_replicas = ValidSpec();
  zero_replicas.tasks[0].replicas = 0;
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 6}, SubmitJob{zero_replicas, ""})), "InvalidArgument");
  EXPECT_EQ(peer.last_message(), "spec: tasks[0].replicas: must be at least 1");
  JobSpec no_command = ValidSpec();
  no_command.tasks[0].command.clear();
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 7}, SubmitJob{no_command, ""})), "InvalidArgument");
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 8}, GetJob{424242})), "NotFound");
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 9}, CancelJob{424242})), "NotFound");

  // Thousands of random and mutated frames.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string frame = valid_submit;
    if (i % 3 == 0) {
      frame.resize(1 + rng() % 200);
      for (auto& c : frame) c = static_cast<char>(rng());
    } else {
      for (int flips = 0; flips < 1 + i % 4; ++flips) frame[rng() % frame.size()] = static_cast<char>(rng());
    }
    auto reply = peer.Send({frame});
    ASSERT_TRUE(reply.ok()) << "frame " << i << ": " << reply.status().ToString();
  }

  // Nothing above created a job, except possibly mutated-but-valid submissions:
  // the coordinator is alive and still accepts a valid job.
  ASSERT_TRUE(cluster_.coordinator()->Running());
  ClientOptions options;
  options.endpoints = cluster_.client_endpoint();
  cluster_.SecureClient(options);
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok());
  auto jobs_before = (*client)->ListJobs(true, 100000);
  ASSERT_TRUE(jobs_before.ok());
  auto submitted = (*client)->Submit(ValidSpec(), "after-barrage");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  auto jobs_after = (*client)->ListJobs(true, 100000);
  ASSERT_TRUE(jobs_after.ok());
  EXPECT_EQ(jobs_after->jobs.size(), jobs_before->jobs.size() + 1);
}

TEST_F(BadInputTest, WorkerPortAnswersEveryBadInputWithATypedError) {
  cluster_.StartCoordinator();
  RawPeer peer(cluster_, cluster_.worker_endpoint(), "raw-worker");
  EXPECT_EQ(peer.ErrorCode("\x92\x01"), "Malformed");
  EXPECT_EQ(peer.ErrorCode(std::string(kMaxFrame + 1, '\x90')), "ResourceExhausted");
  // Heartbeats and events from a node that never registered.
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 1}, Heartbeat{"ghost", {}})), "NotFound");
  TaskEvent event;
  event.node = "ghost";
  event.kind = TaskEventKind::kExited;
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 2}, event)), "NotFound");
  // A node spec that contradicts itself.
  RegisterNode bad;
  bad.node.name = "bad-node";
  bad.node.cpu_milli = 1000;
  bad.node.memory_mib = 1024;
  bad.node.gpus = {GpuInfo{.index = 0, .uuid = "GPU-a"}, GpuInfo{.index = 0, .uuid = "GPU-b"}};
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 3}, bad)), "InvalidArgument");
  EXPECT_NE(peer.last_message().find("node.gpus[1].index"), std::string::npos) << peer.last_message();
  // Client requests are not valid on the worker channel.
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 4}, SubmitJob{ValidSpec(), ""})), "UnknownType");

  ASSERT_TRUE(cluster_.coordinator()->Running());
  CommandResult nodes = cluster_.Cli({"nodes", "--json"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_EQ(nodes.out.find("bad-node"), std::string::npos) << nodes.out;
  EXPECT_EQ(nodes.out.find("ghost"), std::string::npos) << nodes.out;
}

TEST_F(BadInputTest, InvalidJobSpecFilesAreRejectedByTheCli) {
  cluster_.StartCoordinator();
  TempDir dir;
  WriteFile(dir.Join("typo.yaml"), "name: x\ntasks:\n  - replica: 2\n    command: [\"true\"]\n");
  CommandResult typo = cluster_.Cli({"submit", dir.Join("typo.yaml")});
  EXPECT_EQ(typo.exit_code, 2) << typo.out << typo.err;
  EXPECT_NE(typo.err.find("replica"), std::string::npos) << typo.err;
  WriteFile(dir.Join("gpus.yaml"), "name: x\ncommand: [\"true\"]\nresources:\n  gpus: two\n");
  CommandResult gpus = cluster_.Cli({"submit", dir.Join("gpus.yaml")});
  EXPECT_EQ(gpus.exit_code, 2);
  EXPECT_NE(gpus.err.find("gpus"), std::string::npos) << gpus.err;
  CommandResult missing = cluster_.Cli({"submit", dir.Join("nope.yaml")});
  EXPECT_EQ(missing.exit_code, 2);
  CommandResult jobs = cluster_.Cli({"jobs", "--json"});
  EXPECT_EQ(jobs.exit_code, 0);
  EXPECT_EQ(jobs.out.find("\"job_id\""), std::string::npos) << jobs.out;
}

TEST(TokenTest, WrongTokenIsUnauthenticated) {
  TempDir dir;
  WriteFile(dir.Join("token"), "s3cret\n");
  LocalClusterOptions options;
  options.workers = 0;
  options.coordinator_flags = {"--token-file", dir.Join("token")};
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  RawPeer peer(cluster, cluster.client_endpoint(), "admin");
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 1, .token = "wrong"}, ListJobs{})), "Unauthenticated");
  EXPECT_EQ(peer.ErrorCode(EncodeEnvelope(Header{.request_id = 2}, ListJobs{})), "Unauthenticated");
  auto ok = peer.Send({EncodeEnvelope(Header{.request_id = 3, .token = "s3cret"}, ListJobs{})});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->type(), MessageType::kListJobsReply);
  RawPeer worker(cluster, cluster.worker_endpoint(), "raw-worker");
  EXPECT_EQ(worker.ErrorCode(EncodeEnvelope(Header{.request_id = 4}, Heartbeat{"n", {}})), "Unauthenticated");
}

}  // namespace
}  // namespace gpool::testing
