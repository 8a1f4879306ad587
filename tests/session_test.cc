// Remote GPU sessions end to end (issue 33): a real coordinator and workers
// on 127.0.0.1 whose session servers (gpool-rgpu-server) run against the
// fake driver, and clients that use them through `gpool session` with
// gpool's interposer in remote mode. What a session promises: the same
// results as a local GPU, its share held, admission like a job, expiry
// (TTL, idle, lease), preemption, node loss, a client that vanishes, and a
// leader failover.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

bool Says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Where the fake libcuda.so.1 is: session servers of whole-GPU sessions
// find it on their LD_LIBRARY_PATH, as they would find a node's driver.
std::string FakeDriverDir() { return std::filesystem::path(GPOOL_FAKE_CUDA_LIB).parent_path().string(); }

LocalClusterOptions SessionCluster(int workers = 1, int gpus = 1) {
  LocalClusterOptions options;
  options.workers = workers;
  options.gpus_per_worker = gpus;
  for (int i = 0; i < workers; ++i) {
    options.worker_flags[i] = {"--cuda-interposer", GPOOL_CUDA_INTERPOSER_LIB, "--cuda-real-driver",
                               GPOOL_FAKE_CUDA_LIB,  "--rgpu-server",      GPOOL_RGPU_SERVER_BIN,
                               "--rgpu-address",     "127.0.0.1",          "--task-env-pass",
                               "LD_LIBRARY_PATH",    "--cuda-object-costs", "none"};
    options.worker_env[i] = {{"LD_LIBRARY_PATH", FakeDriverDir()}};
  }
  return options;
}

class SessionTest : public ::testing::Test {
 protected:
  void Start(LocalClusterOptions options) {
    cluster_ = std::make_unique<LocalCluster>(std::move(options));
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_));
  }

  // `gpool session ARGS...` with the interposer the CLI puts in remote mode.
  CommandResult Session(std::vector<std::string> args) {
    args.insert(args.begin(), "session");
    return cluster_->Cli(args);
  }

  // Opens a session without a command; its id (0 on failure).
  uint64_t Open(std::vector<std::string> flags) {
    flags.insert(flags.begin(), "open");
    const CommandResult opened = Session(flags);
    EXPECT_EQ(opened.exit_code, 0) << opened.out << opened.err;
    const size_t at = opened.out.find("session ");
    return at == std::string::npos ? 0 : std::stoull(opened.out.substr(at + 8));
  }

  SessionInfo Info(uint64_t job) {
    auto reply = client_->GetJob(JobId(job));
    return reply.ok() ? reply->summary.session : SessionInfo{"(" + reply.status().ToString() + ")"};
  }

  bool WaitState(uint64_t job, const std::string& state, std::chrono::milliseconds timeout = 30s) {
    return WaitFor([&] { return Info(job).state == state; }, timeout);
  }

  // What the session's server logged (its task's log).
  std::string ServerLog(uint64_t job) {
    auto reply = client_->GetTaskLog(JobId(job), 0, 64 * 1024);
    return reply.ok() ? std::string(reply->data.begin(), reply->data.end()) : reply.status().ToString();
  }

  // A client of session `job` that runs `steps` of gpool-rgpu-check and
  // holds at "hold" until Release(); its CLI and its program are killed by
  // pid when the test ends.
  struct HeldClient {
    std::unique_ptr<Process> cli;
    std::string fifo, out, pid_file;
    int fifo_fd = -1;
  };
  HeldClient StartHeldClient(uint64_t job, const std::string& steps, const std::string& name,
                             const std::string& call_timeout_ms = "2000") {
    HeldClient c;
    c.fifo = cluster_->dir() + "/" + name + ".fifo";
    c.out = cluster_->dir() + "/" + name + ".out";
    c.pid_file = cluster_->dir() + "/" + name + ".pid";
    EXPECT_EQ(mkfifo(c.fifo.c_str(), 0600), 0);
    c.fifo_fd = open(c.fifo.c_str(), O_RDWR | O_CLOEXEC);  // a writer, so the reader never sees its end
    // TMPDIR: the CLI's private directory (the session's key) goes in the
    // cluster's, which the test removes, even when the test kills the CLI.
    std::vector<std::string> argv = {"env", "GPOOL_RGPU_CALL_TIMEOUT_MS=" + call_timeout_ms, "TMPDIR=" + cluster_->dir(),
                                     GPOOL_CLI_BIN, "--coordinator", cluster_->client_endpoint()};
    for (const auto& arg : cluster_->CliSecurityArgs()) argv.push_back(arg);
    for (const char* arg : {"session", "run"}) argv.push_back(arg);
    argv.push_back(std::to_string(job));
    for (const char* arg : {"--cuda-interposer", GPOOL_CUDA_INTERPOSER_LIB, "--", "sh", "-c"}) argv.push_back(arg);
    argv.push_back("echo $$ > " + c.pid_file + "; exec " + std::string(GPOOL_RGPU_CHECK_BIN) + " " + steps + " < " +
                   c.fifo + " > " + c.out + " 2>&1");
    c.cli = std::make_unique<Process>(name, argv, cluster_->dir() + "/" + name + ".log");
    return c;
  }
  void Release(HeldClient& c) { EXPECT_EQ(write(c.fifo_fd, "\n", 1), 1); }
  void KillClient(HeldClient& c) {
    const std::string pid = ReadAll(c.pid_file);
    if (!pid.empty()) kill(std::stoi(pid), SIGKILL);
    c.cli->Kill();
    if (c.fifo_fd >= 0) close(c.fifo_fd);
    c.fifo_fd = -1;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

// The same driver-API program, once on the (fake) driver directly and once
// through a session: the same output, byte for byte. Then a session past its
// memory share is refused by the interposer under its server.
TEST_F(SessionTest, AProgramGivesTheSameOutputLocallyAndThroughASessionWhichHoldsItsShare) {
  ASSERT_NO_FATAL_FAILURE(Start(SessionCluster()));
  const CommandResult local =
      RunCommand({"env", "LD_LIBRARY_PATH=" + FakeDriverDir(), GPOOL_RGPU_CHECK_BIN, "session"});
  ASSERT_EQ(local.exit_code, 0) << local.out << local.err;
  ASSERT_TRUE(Says(local.out, "launch")) << local.out;
  // A whole GPU: a share would report its own size as the device's memory.
  const CommandResult remote = Session({"open", "--gpus", "1", "--cuda-interposer",
                                        GPOOL_CUDA_INTERPOSER_LIB, "--", GPOOL_RGPU_CHECK_BIN, "session"});
  ASSERT_EQ(remote.exit_code, 0) << remote.out << remote.err;
  EXPECT_EQ(remote.out, local.out) << "remote stderr: " << remote.err;

  const CommandResult over = Session({"open", "--gpu-memory", "64Mi", "--cuda-interposer", GPOOL_CUDA_INTERPOSER_LIB,
                                      "--", GPOOL_RGPU_CHECK_BIN, "oom", "128", "unsupported"});
  ASSERT_EQ(over.exit_code, 0) << over.out << over.err;
  EXPECT_TRUE(Says(over.out, "oom result=2 allocated_mib=64")) << over.out << over.err;
  EXPECT_TRUE(Says(over.out, "unsupported_symbol result=801")) << over.out;

  // Both one-shot sessions were closed by their CLI, with their GPU time.
  const CommandResult list = Session({"list", "--all"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(Says(list.out, "Closed")) << list.out;
  EXPECT_FALSE(Says(list.out, "Open")) << list.out;
}

TEST_F(SessionTest, AQueueAtItsCapabilityKeepsASessionQueuedWithAReason) {
  ASSERT_NO_FATAL_FAILURE(Start(SessionCluster(1, 2)));
  ASSERT_EQ(cluster_->Cli({"queue", "create", "team", "--capability", "gpu=1"}).exit_code, 0);
  JobSpec hold = ShellJob("hold", 1, "sleep 60");
  hold.queue = "team";
  ASSERT_TRUE(client_->Submit(hold, "").ok());
  const CommandResult opened = Session({"open", "--queue", "team", "--gpus", "1", "--wait", "3s"});
  EXPECT_NE(opened.exit_code, 0) << opened.out;
  EXPECT_TRUE(Says(opened.err, "Queued")) << opened.err;
  const CommandResult list = Session({"list"});
  EXPECT_TRUE(Says(list.out, "Queued")) << list.out;
  EXPECT_TRUE(Says(list.out, "capability")) << list.out;
}

TEST_F(SessionTest, TtlIdleTimeoutAndAnUnrenewedLeaseEachExpireASession) {
  ASSERT_NO_FATAL_FAILURE(Start(SessionCluster(1, 3)));
  const uint64_t ttl = Open({"--gpus", "1", "--ttl", "2s"});
  const uint64_t idle = Open({"--gpus", "1", "--idle-timeout", "2s", "--lease", "1h"});
  const uint64_t lease = Open({"--gpus", "1", "--lease", "2s"});
  for (uint64_t job : {ttl, idle, lease}) {
    ASSERT_NE(job, 0u);
    EXPECT_TRUE(WaitState(job, "Expired")) << job << ": " << Info(job).state << " " << Info(job).reason;
  }
  EXPECT_TRUE(Says(Info(ttl).reason, "TTL")) << Info(ttl).reason;
  EXPECT_TRUE(Says(Info(idle).reason, "idle")) << Info(idle).reason;
  EXPECT_TRUE(Says(Info(lease).reason, "lease expired")) << Info(lease).reason;
  const CommandResult shown = Session({"show", std::to_string(lease)});
  EXPECT_TRUE(Says(shown.out, "Expired: lease expired")) << shown.out;
}

TEST_F(SessionTest, ALowSessionIsPreemptedByAHighJob) {
  ASSERT_NO_FATAL_FAILURE(Start(SessionCluster()));
  const uint64_t session = Open({"--gpus", "1", "--class", "low"});
  ASSERT_NE(session, 0u);
  JobSpec urgent = ShellJob("urgent", 1, "true");
  urgent.priority_class = "high";
  auto submitted = client_->Submit(urgent, "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  EXPECT_TRUE(WaitState(session, "Preempted")) << Info(session).state << " " << Info(session).reason;
  EXPECT_TRUE(Says(Info(session).reason, "job " + std::to_string(submitted->job_id))) << Info(session).reason;
  EXPECT_TRUE(WaitFor([&] { return client_->GetJob(JobId(submitted->job_id))->summary.state == "Succeeded"; }, 30s));
}

// The node goes (its worker killed, so its lease lapses and its supervisor
// stops the server): the client's next call fails within its timeout rather
// than hanging, and the session is Failed once the node is lost.
TEST_F(SessionTest, ALostNodeFailsTheSessionAndTheClientsNextCallErrorsInTime) {
  LocalClusterOptions options = SessionCluster();
  // A short node lease, so the node is Lost in seconds (its lease, plus the
  // coordinator's required margin, before it).
  options.coordinator_flags = {"--heartbeat-ms",  "200",  "--node-timeout-ms", "1000", "--node-lease-ms",
                               "2000",            "--node-lost-ms", "7000",    "--preempt-grace-ms", "1000"};
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const uint64_t session = Open({"--gpus", "1"});
  ASSERT_NE(session, 0u);
  HeldClient client = StartHeldClient(session, "alloc 16 hold sync", "held-client");
  ASSERT_TRUE(WaitFor([&] { return Says(ReadAll(client.out), "held"); }, 20s)) << ReadAll(client.out);
  EXPECT_TRUE(Says(ReadAll(client.out), "alloc result=0")) << ReadAll(client.out);
  cluster_->worker(0)->Kill();
  EXPECT_TRUE(WaitState(session, "Failed", 60s)) << Info(session).state << " " << Info(session).reason;
  Release(client);
  ASSERT_TRUE(WaitFor([&] { return Says(ReadAll(client.out), "sync result="); }, 10s)) << ReadAll(client.out);
  const std::string out = ReadAll(client.out);
  EXPECT_FALSE(Says(out, "sync result=0")) << out;
  const size_t ms_at = out.find("ms=", out.find("sync result="));
  ASSERT_NE(ms_at, std::string::npos) << out;
  EXPECT_LT(std::stoll(out.substr(ms_at + 3)), 2000 + 1000) << out;  // its 2 s call timeout, and a margin
  KillClient(client);
}

// The client vanishes mid-session holding memory: after the idle timeout the
// server frees everything it made and exits, and the session is Expired.
TEST_F(SessionTest, AVanishedClientsSessionIsReclaimedAfterItsIdleTimeout) {
  ASSERT_NO_FATAL_FAILURE(Start(SessionCluster()));
  const uint64_t session = Open({"--gpu-memory", "128Mi", "--idle-timeout", "2s", "--lease", "1h"});
  ASSERT_NE(session, 0u);
  HeldClient client = StartHeldClient(session, "alloc 32 hold", "vanishing-client");
  ASSERT_TRUE(WaitFor([&] { return Says(ReadAll(client.out), "held"); }, 20s)) << ReadAll(client.out);
  KillClient(client);
  EXPECT_TRUE(WaitState(session, "Expired")) << Info(session).state << " " << Info(session).reason;
  const std::string log = ServerLog(session);
  EXPECT_TRUE(Says(log, "allocations=1")) << log;
}

// The CLI's private directories (the session's client key) in the cluster's
// dir, the TMPDIR StartHeldClient gives it.
std::vector<std::string> SessionDirsIn(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("gpool-session-", 0) == 0) found.push_back(name);
  }
  return found;
}

// `gpool session run` stopped by SIGTERM (systemd, a job scheduler, kill)
// passes it to its program, waits for it, removes its private directory with
// the session's key and exits as the program did; before, the CLI died first
// and left the key in /tmp.
TEST_F(SessionTest, ASignalledRunEndsItsProgramAndLeavesNoKeyBehind) {
  ASSERT_NO_FATAL_FAILURE(Start(SessionCluster()));
  const uint64_t session = Open({"--gpus", "1"});
  ASSERT_NE(session, 0u);
  HeldClient client = StartHeldClient(session, "alloc 16 hold", "signalled-client");
  ASSERT_TRUE(WaitFor([&] { return Says(ReadAll(client.out), "held"); }, 20s)) << ReadAll(client.out);
  EXPECT_EQ(SessionDirsIn(cluster_->dir()).size(), 1u) << "the key's directory while the program runs";
  const int program = std::stoi(ReadAll(client.pid_file));
  const int status = client.cli->Stop(SIGTERM);
  ASSERT_NE(status, -1) << "the CLI did not end within 10 s of SIGTERM";
  ASSERT_TRUE(WIFEXITED(status)) << "the CLI itself was killed: status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << "it exits as its program did";
  EXPECT_EQ(kill(program, 0), -1) << "its program is gone (reaped by the CLI)";
  EXPECT_EQ(SessionDirsIn(cluster_->dir()), std::vector<std::string>{}) << "the key's directory is removed";
  KillClient(client);
  EXPECT_EQ(Session({"close", std::to_string(session)}).exit_code, 0);
}

// The session server is a task: it outlives its worker, a restarted worker
// adopts it, and the client never notices.
TEST_F(SessionTest, AnOpenSessionSurvivesItsWorkersRestart) {
  ASSERT_NO_FATAL_FAILURE(Start(SessionCluster()));
  const uint64_t session = Open({"--gpus", "1"});
  ASSERT_NE(session, 0u);
  HeldClient client = StartHeldClient(session, "alloc 16 hold sync", "restart-client");
  ASSERT_TRUE(WaitFor([&] { return Says(ReadAll(client.out), "held"); }, 20s)) << ReadAll(client.out);
  cluster_->worker(0)->Kill();
  cluster_->StartWorker(0);
  ASSERT_TRUE(WaitFor([&] { return cluster_->AllNodesReady(); }, 30s));
  EXPECT_EQ(Info(session).state, "Open");
  Release(client);
  ASSERT_TRUE(WaitFor([&] { return Says(ReadAll(client.out), "sync result="); }, 20s)) << ReadAll(client.out);
  EXPECT_TRUE(Says(ReadAll(client.out), "sync result=0")) << ReadAll(client.out);
  KillClient(client);
  EXPECT_EQ(Session({"close", std::to_string(session)}).exit_code, 0);
  EXPECT_TRUE(WaitState(session, "Closed")) << Info(session).state << " " << Info(session).reason;
}

// Sessions are state like jobs: a new leader knows the open one, and the
// client keeps using it.
TEST_F(SessionTest, AnOpenSessionSurvivesALeaderFailover) {
  LocalClusterOptions options = SessionCluster();
  options.coordinators = 3;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const uint64_t session = Open({"--gpus", "1"});
  ASSERT_NE(session, 0u);
  const SessionInfo before = Info(session);
  ASSERT_EQ(before.state, "Open");
  // The client follows redirects to the leader, which answers as such.
  auto leader_index = [&] {
    auto status = client_->ClusterStatus();
    return status.ok() && status->role == "leader" ? std::stoi(status->replica_id) - 1 : -1;
  };
  int leader = -1;
  ASSERT_TRUE(WaitFor([&] { return (leader = leader_index()) >= 0; }, 20s));
  cluster_->KillReplica(leader);
  EXPECT_TRUE(WaitFor([&] {
    const int now = leader_index();
    return now >= 0 && now != leader;
  }, 30s));
  EXPECT_TRUE(WaitFor([&] { return Info(session).state == "Open"; }, 30s)) << Info(session).state;
  EXPECT_EQ(Info(session).endpoint, before.endpoint);
  const CommandResult used = Session({"run", std::to_string(session), "--cuda-interposer", GPOOL_CUDA_INTERPOSER_LIB,
                                      "--", GPOOL_RGPU_CHECK_BIN, "alloc", "8", "sync"});
  EXPECT_EQ(used.exit_code, 0) << used.out << used.err;
  EXPECT_TRUE(Says(used.out, "sync result=0")) << used.out << used.err;
}

}  // namespace
}  // namespace gpool::testing
