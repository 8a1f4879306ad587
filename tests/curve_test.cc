// CurveZMQ on a real cluster (issue 31): who the ZAP handler lets in on each
// port, the impersonation scenarios against a secured cluster, and what a
// listener on the loopback sees of a submitted command line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_worker.h"
#include "protocol/security/handshake_probe.h"
#include "protocol/security/keys.h"
#include "tests/local_cluster.h"
#include "tests/raw_worker.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kHandshakeMs = 10'000;

security::KeyPair Keys(LocalCluster& cluster, const std::string& name) {
  auto keys = security::ReadSecretKeyFile(cluster.SecretKeyFile(name));
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  return keys.ok() ? *keys : security::KeyPair{};
}

std::string ReplicaKey(LocalCluster& cluster, int replica) {
  auto key = security::ReadPublicKeyFile(cluster.PublicKeyFile("replica-" + std::to_string(replica + 1)));
  EXPECT_TRUE(key.ok());
  return key.ok() ? *key : "";
}

security::Handshake Probe(LocalCluster& cluster, const std::string& endpoint, const std::string& key_name,
                          int replica = 0) {
  zmq::context_t context(1);
  auto outcome = security::ProbeHandshake(context, endpoint, Keys(cluster, key_name), ReplicaKey(cluster, replica),
                                          kHandshakeMs);
  EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
  return outcome.ok() ? *outcome : security::Handshake::kFailed;
}

std::unique_ptr<Client> Connect(const LocalCluster& cluster) {
  ClientOptions options;
  options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(options);
  options.timeout_ms = 3000;
  return std::move(Client::Connect(options).value());
}

LocalClusterOptions NoWorkers() {
  LocalClusterOptions options;
  options.workers = 0;
  return options;
}

TEST(CurveZap, UnregisteredClientKeyIsRefusedAtTheHandshake) {
  LocalCluster cluster(NoWorkers());
  cluster.StartCoordinator();
  EXPECT_EQ(Probe(cluster, cluster.client_endpoint(), "stranger"), security::Handshake::kRefused);
  EXPECT_EQ(Probe(cluster, cluster.client_endpoint(), "admin"), security::Handshake::kAdmitted);
  // The CLI with an unregistered key gets nowhere; with the admin's it works.
  CommandResult refused = RunCommand({GPOOL_CLI_BIN, "--coordinator", cluster.client_endpoint(), "--timeout-ms", "500",
                                      "--key-file", cluster.SecretKeyFile("stranger"), "--coordinator-key",
                                      cluster.CoordinatorKeyFiles(), "jobs"});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_EQ(cluster.Cli({"jobs"}).exit_code, 0);
  // A plaintext client is not let in either.
  CommandResult plain = RunCommand(
      {GPOOL_CLI_BIN, "--coordinator", cluster.client_endpoint(), "--timeout-ms", "500", "--insecure", "jobs"});
  EXPECT_NE(plain.exit_code, 0) << plain.out;
}

// A coordinator started with neither --key-file nor --insecure refuses to
// start and says how to go on.
TEST(CurveZap, CoordinatorWithoutKeyOrInsecureRefusesToStart) {
  TempDir dir;
  CommandResult result = RunCommand({GPOOL_COORDINATOR_BIN, "--data-dir", dir.Join("data"), "--client-addr",
                                     "tcp://127.0.0.1:0", "--worker-addr", "tcp://127.0.0.1:0"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--key-file"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("--insecure"), std::string::npos) << result.err;
}

// The peer port admits the replicas of the configuration only.
TEST(CurveZap, PeerNotInTheConfigurationIsRefused) {
  LocalClusterOptions options = NoWorkers();
  options.coordinators = 3;
  LocalCluster cluster(options);
  cluster.StartCoordinator();
  // Replica 1's peer port: replica 2's key is a member's, a stranger's is not.
  EXPECT_EQ(Probe(cluster, cluster.peer_endpoint(0), "replica-2"), security::Handshake::kAdmitted);
  EXPECT_EQ(Probe(cluster, cluster.peer_endpoint(0), "stranger"), security::Handshake::kRefused);
  // A client's key is not a replica's either.
  EXPECT_EQ(Probe(cluster, cluster.peer_endpoint(0), "admin"), security::Handshake::kRefused);
}

class CurveClusterTest : public ::testing::Test {
 protected:
  static LocalClusterOptions Options() {
    LocalClusterOptions options;
    options.workers = 1;
    return options;
  }
  void SetUp() override {
    cluster_.StartCoordinator();
    cluster_.StartWorkers();
    ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 30s)) << cluster_.Cli({"nodes"}).out;
    client_ = Connect(cluster_);
  }
  // A job running on node-0, with its task id.
  uint64_t RunningJob() {
    auto submitted = client_->Submit(ShellJob("long", 1, "sleep 600"), "");
    EXPECT_TRUE(submitted.ok()) << submitted.status().ToString();
    const uint64_t job = submitted.ok() ? submitted->job_id : 0;
    // The task, not just the job: a job is Running from its bind, its task
    // once the worker has started it.
    EXPECT_TRUE(WaitFor([&] { return TaskState(job) == "Running"; }, 30s));
    return job;
  }
  std::string TaskState(uint64_t job) {
    auto got = client_->GetJob(JobId(job));
    return got.ok() && !got->tasks.empty() ? got->tasks[0].state : "?";
  }
  std::string NodeState(const std::string& name) {
    auto nodes = client_->ListNodes();
    if (!nodes.ok()) return "?";
    for (const auto& node : nodes->nodes) {
      if (node.name == name) return node.state;
    }
    return "absent";
  }

  LocalCluster cluster_{Options()};
  std::unique_ptr<Client> client_;
};

// Same-name registration, the re-registration loop and the 64-GPU fake node,
// each from a connection with a key of its own: refused, and the real node's
// task keeps running.
TEST_F(CurveClusterTest, ImpersonatingARegisteredNodeIsRefusedAndItsTasksKeepRunning) {
  const uint64_t job = RunningJob();
  for (int attempt = 0; attempt < 5; ++attempt) {
    RawWorker impostor(cluster_, "impostor-" + std::to_string(attempt));
    auto reply = impostor.Ask(RegisterNode{FakeNode(cluster_.NodeName(0), attempt == 0 ? 64 : 4), {}, "test"});
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    ASSERT_EQ(reply->type(), MessageType::kErrorReply);
    EXPECT_EQ(reply->Body<ErrorReply>()->code, "Unauthenticated");
  }
  EXPECT_EQ(TaskState(job), "Running");
  EXPECT_EQ(NodeState(cluster_.NodeName(0)), "Ready");
  // Still 4 GPUs, not the impostor's 64: a 64-GPU job has nowhere to go.
  auto big = client_->Submit(ShellJob("big", 64, "true"), "");
  if (big.ok()) {  // refused at submission (fits no node) is as good
    auto got = client_->GetJob(JobId(big->job_id));
    ASSERT_TRUE(got.ok());
    EXPECT_NE(got->summary.state, "Running");
    EXPECT_NE(got->summary.state, "Succeeded");
  }
  // And the real worker is still the node: its log is served.
  CommandResult log = cluster_.Cli({"logs", std::to_string(job) + ".0"});
  EXPECT_EQ(log.exit_code, 0) << log.err;
}

// A task holds its own exec key (GPOOL_EXEC_TOKEN, issue 48) and reaches
// the secured client port with it: as that task of its job, which may read
// the job and exec into it, and nothing else, not even another job of the
// same user.
TEST_F(CurveClusterTest, ATasksExecKeyOpensItsOwnJobOnly) {
  const uint64_t other = RunningJob();
  const std::string cli = GPOOL_CLI_BIN;
  const std::string script = "\"" + cli + "\" whoami; \"" + cli + "\" cancel " + std::to_string(other) +
                             "; echo cancel=$?; \"" + cli + "\" job $GPOOL_JOB_ID >/dev/null; echo read=$?";
  auto submitted = client_->Submit(ShellJob("inside", 0, script), "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const uint64_t job = submitted->job_id;
  ASSERT_TRUE(WaitFor([&] { return TaskState(job) == "Succeeded" || TaskState(job) == "Failed"; }, 30s))
      << TaskState(job);
  auto log = client_->GetTaskLog(JobId(job), 0, 64 * 1024);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_NE(log->data.find("task-" + std::to_string(job) + ".0"), std::string::npos) << log->data;
  EXPECT_NE(log->data.find("PermissionDenied"), std::string::npos) << log->data;
  EXPECT_EQ(log->data.find("cancel=0"), std::string::npos) << log->data;
  EXPECT_NE(log->data.find("read=0"), std::string::npos) << log->data;
  EXPECT_EQ(TaskState(other), "Running");
}

// Issue 48: the exec credential is per task. Task 0 execs into its sibling
// task 1 with its own token while it runs, prints the token and exits; from
// then on that token is refused at the handshake and opens no exec into the
// sibling, which still runs (and still opens to its owner).
TEST_F(CurveClusterTest, AFinishedTasksTokenNoLongerOpensItsRunningSibling) {
  const std::string cli = GPOOL_CLI_BIN;
  // Task 0 waits (bounded) for task 1 to run by trying the exec itself.
  const std::string script =
      "if [ \"$GPOOL_TASK_INDEX\" = 1 ]; then exec sleep 600; fi; "
      "for i in $(seq 150); do \"" + cli + "\" --timeout-ms 2000 exec $GPOOL_JOB_ID.1 -- echo sibling-opened "
      "&& break; sleep 0.2; done; echo \"token=$GPOOL_EXEC_TOKEN\"";
  auto submitted = client_->Submit(ShellJob("pair", 0, script, 2), "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const uint64_t job = submitted->job_id;
  auto task_state = [&](size_t index) {
    auto got = client_->GetJob(JobId(job));
    return got.ok() && got->tasks.size() > index ? got->tasks[index].state : "?";
  };
  ASSERT_TRUE(WaitFor([&] { return task_state(0) == "Succeeded" || task_state(0) == "Failed"; }, 60s))
      << task_state(0);
  auto log = client_->GetTaskLog(JobId(job), 0, 64 * 1024);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_NE(log->data.find("sibling-opened"), std::string::npos) << "its token opened the sibling while it ran:\n"
                                                                   << log->data;
  const size_t at = log->data.find("token=");
  ASSERT_NE(at, std::string::npos) << log->data;
  const std::string token = log->data.substr(at + 6, 40);
  ASSERT_TRUE(security::IsZ85Key(token)) << log->data;
  ASSERT_EQ(task_state(1), "Running");

  // Refused at the handshake: the key directory dropped the ended task's key ...
  auto keys = security::KeyPairOfSecret(token);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  zmq::context_t context(1);
  auto handshake =
      security::ProbeHandshake(context, cluster_.client_endpoint(), *keys, ReplicaKey(cluster_, 0), kHandshakeMs);
  ASSERT_TRUE(handshake.ok()) << handshake.status().ToString();
  EXPECT_EQ(*handshake, security::Handshake::kRefused);
  // ... so `gpool exec` with it, as the task's environment had it, gets nowhere.
  const std::string sibling = std::to_string(job) + ".1";
  CommandResult exec = RunCommand({"env", "HOME=/nonexistent", "GPOOL_EXEC_TOKEN=" + token,
                                   "GPOOL_COORDINATOR_PUBLIC_KEY=" + ReplicaKey(cluster_, 0),
                                   "GPOOL_JOB_ID=" + std::to_string(job), cli, "--coordinator",
                                   cluster_.client_endpoint(), "--timeout-ms", "1000", "exec", sibling, "--", "echo",
                                   "reopened"});
  EXPECT_NE(exec.exit_code, 0) << exec.out << exec.err;
  EXPECT_EQ(exec.out.find("reopened"), std::string::npos) << exec.out;
  // The sibling runs on, and its owner's keys still open it.
  EXPECT_EQ(task_state(1), "Running");
  CommandResult owner = cluster_.Cli({"exec", sibling, "--", "echo", "owner-opened"});
  EXPECT_EQ(owner.exit_code, 0) << owner.err;
  EXPECT_NE(owner.out.find("owner-opened"), std::string::npos) << owner.out;
}

// With --worker-enrolment first-use (a lab setting), a new node name under a
// key of its own is fine, and then that key is that node's only.
TEST_F(CurveClusterTest, FirstUseBindsANewNameToItsKey) {
  cluster_.KillCoordinator();
  cluster_.SetCoordinatorFlags({"--heartbeat-ms", "200", "--node-timeout-ms", "3000", "--worker-enrolment", "first-use"});
  cluster_.StartCoordinator();
  RawWorker fresh(cluster_, "fresh-node");
  auto reply = fresh.Ask(RegisterNode{FakeNode("fresh", 1), {}, "test"});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->type(), MessageType::kRegisterNodeReply);
  RawWorker other(cluster_, "other-node");
  auto refused = other.Ask(RegisterNode{FakeNode("fresh", 1), {}, "test"});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->Body<ErrorReply>()->code, "Unauthenticated");
}

// With --worker-enrolment admin, an unknown worker key is refused at the
// handshake; a node bound before (here by first use, then the coordinator
// restarted in admin mode) is still admitted, from the committed binding.
TEST_F(CurveClusterTest, AdminEnrolmentRefusesForeignWorkerKeysAtTheHandshake) {
  cluster_.KillCoordinator();
  // LocalClusterOptions are fixed at construction; a second cluster object
  // cannot share the data dir, so restart this one with the extra flag.
  cluster_.SetCoordinatorFlags({"--heartbeat-ms", "200", "--node-timeout-ms", "3000", "--worker-enrolment", "admin"});
  cluster_.StartCoordinator();
  EXPECT_EQ(Probe(cluster_, cluster_.worker_endpoint(), "impostor"), security::Handshake::kRefused);
  EXPECT_EQ(Probe(cluster_, cluster_.worker_endpoint(), cluster_.NodeName(0)), security::Handshake::kAdmitted);
  ASSERT_TRUE(WaitFor([&] { return cluster_.AllNodesReady(); }, 30s)) << cluster_.Cli({"nodes"}).out;
  // A node enrolled before it ever registered: its key is admitted, as that
  // node only, and registers it.
  EXPECT_EQ(Probe(cluster_, cluster_.worker_endpoint(), "fresh-node"), security::Handshake::kRefused);
  CommandResult enrolled =
      cluster_.Cli({"admin", "node", "enrol", "fresh", "--node-key", cluster_.PublicKeyFile("fresh-node")});
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.err;
  EXPECT_EQ(Probe(cluster_, cluster_.worker_endpoint(), "fresh-node"), security::Handshake::kAdmitted);
  RawWorker elsewhere(cluster_, "fresh-node");
  auto wrong_name = elsewhere.Ask(RegisterNode{FakeNode("not-fresh", 1), {}, "test"});
  ASSERT_TRUE(wrong_name.ok()) << wrong_name.status().ToString();
  EXPECT_EQ(wrong_name->type(), MessageType::kErrorReply);
  auto registered = elsewhere.Ask(RegisterNode{FakeNode("fresh", 1), {}, "test"});
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  EXPECT_EQ(registered->type(), MessageType::kRegisterNodeReply);
  EXPECT_EQ(NodeState("fresh"), "Ready");
}

// A TCP relay on the loopback between the CLI and the coordinator that
// records every byte either way: what someone sniffing the link would see.
class RecordingRelay {
 public:
  explicit RecordingRelay(const std::string& upstream_endpoint) {
    const size_t colon = upstream_endpoint.rfind(':');
    upstream_port_ = std::stoi(upstream_endpoint.substr(colon + 1));
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listen_fd_, 8) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("relay: cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    if (pipe(stop_) != 0) throw std::runtime_error("relay: pipe");
    thread_ = std::thread([this] { Run(); });
  }
  ~RecordingRelay() {
    (void)!write(stop_[1], "x", 1);
    thread_.join();
    close(listen_fd_);
    close(stop_[0]);
    close(stop_[1]);
  }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  std::string recorded() {
    std::lock_guard<std::mutex> lock(mu_);
    return recorded_;
  }

 private:
  // One connection at a time (the CLI opens one per attempt), pumped both
  // ways until either side closes.
  void Run() {
    while (true) {
      pollfd wait[2] = {{listen_fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (poll(wait, 2, -1) < 0) continue;
      if (wait[1].revents) return;
      const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
      if (connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        close(client);
        close(upstream);
        continue;
      }
      bool open = true;
      while (open) {
        pollfd fds[3] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}, {stop_[0], POLLIN, 0}};
        if (poll(fds, 3, -1) < 0) continue;
        if (fds[2].revents) {
          open = false;
          break;
        }
        for (int i = 0; i < 2 && open; ++i) {
          if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          char buffer[65536];
          const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
          if (n <= 0) {
            open = false;
            break;
          }
          {
            std::lock_guard<std::mutex> lock(mu_);
            recorded_.append(buffer, static_cast<size_t>(n));
          }
          const int to = i == 0 ? upstream : client;
          for (ssize_t sent = 0; sent < n;) {
            const ssize_t w = write(to, buffer + sent, static_cast<size_t>(n - sent));
            if (w <= 0) {
              open = false;
              break;
            }
            sent += w;
          }
        }
      }
      close(client);
      close(upstream);
      if (fds_stop()) return;
    }
  }
  bool fds_stop() {
    pollfd stop{stop_[0], POLLIN, 0};
    return poll(&stop, 1, 0) > 0;
  }

  int listen_fd_ = -1;
  int port_ = 0;
  int upstream_port_ = 0;
  int stop_[2] = {-1, -1};
  std::thread thread_;
  std::mutex mu_;
  std::string recorded_;
};

// Submits a job whose command line holds a marker through the relay, and
// returns what the relay saw.
std::string SubmitThroughRelay(LocalCluster& cluster, const std::string& marker) {
  RecordingRelay relay(cluster.client_endpoint());
  std::vector<std::string> argv = {GPOOL_CLI_BIN, "--coordinator", relay.endpoint()};
  const std::vector<std::string> security = cluster.CliSecurityArgs();
  argv.insert(argv.end(), security.begin(), security.end());
  argv.insert(argv.end(), {"submit", "--", "sh", "-c", "echo " + marker});
  CommandResult submitted = RunCommand(argv);
  EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
  return relay.recorded();
}

TEST(CurveCapture, SubmittedCommandLineIsNotOnTheWireInClear) {
  const std::string marker = "gpool-secret-marker-7f3a9c";
  {
    LocalCluster secured(NoWorkers());
    secured.StartCoordinator();
    const std::string seen = SubmitThroughRelay(secured, marker);
    EXPECT_GT(seen.size(), 200u);  // the relay did carry the exchange
    EXPECT_EQ(seen.find(marker), std::string::npos);
    EXPECT_NE(seen.find("CURVE"), std::string::npos);  // the ZMTP greeting names the mechanism
  }
  {
    LocalClusterOptions options = NoWorkers();
    options.secure = false;
    LocalCluster plaintext(options);
    plaintext.StartCoordinator();
    const std::string seen = SubmitThroughRelay(plaintext, marker);
    EXPECT_NE(seen.find(marker), std::string::npos) << "the capture would not catch a plaintext command line";
  }
}

}  // namespace
}  // namespace gpool::testing
