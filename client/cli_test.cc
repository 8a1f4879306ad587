#include "client/cli.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "client/fake_client.h"
#include "client/format.h"
#include "client/test_support.h"

namespace gpool {
namespace {

using client::testing::UniqueTempPath;

using client::testing::FakeCliTest;
using client::testing::WriteFile;

class CliTest : public FakeCliTest {
 protected:
  uint64_t AddJob(const std::string& name, JobState state) {
    JobSpec spec;
    spec.name = name;
    TaskGroupSpec group;
    group.command = {"true"};
    group.replicas = 2;
    spec.tasks = {group};
    FakeClient client(cluster_);
    auto reply = client.Submit(spec, "");
    EXPECT_TRUE(reply.ok());
    cluster_->SetJobState(reply->job_id, state);
    cluster_->submits.clear();
    return reply->job_id;
  }
};

TEST_F(CliTest, SubmitFromFlagsBuildsTheSpec) {
  int rc = Run({"submit", "--gpus", "2", "--cpus", "0.5", "--mem", "4Gi", "--name", "exp", "--replicas", "3",
                "--queue", "q1", "--priority", "-5", "--env", "A=1,2", "-e", "B=x=y", "--env=C=", "--", "python3",
                "train.py", "--epochs", "3", "-v"});
  ASSERT_EQ(rc, 0) << err_.str();
  EXPECT_EQ(out_.str(), "job 1 submitted\n");
  ASSERT_EQ(cluster_->submits.size(), 1u);
  const SubmitJob& submit = cluster_->submits[0];
  EXPECT_FALSE(submit.idempotency_key.empty());
  const JobSpec& spec = submit.spec;
  EXPECT_EQ(spec.name, "exp");
  EXPECT_EQ(spec.queue, "q1");
  EXPECT_EQ(spec.priority, -5);
  ASSERT_EQ(spec.tasks.size(), 1u);
  const TaskGroupSpec& group = spec.tasks[0];
  EXPECT_EQ(group.replicas, 3u);
  EXPECT_EQ(group.command, (std::vector<std::string>{"python3", "train.py", "--epochs", "3", "-v"}));
  EXPECT_EQ(group.resources, (Resources{2, 500, 4096}));
  EXPECT_EQ(group.env, (std::map<std::string, std::string>{{"A", "1,2"}, {"B", "x=y"}, {"C", ""}}));
}

TEST_F(CliTest, SubmitFromFlagsDefaultsNameToTheProgram) {
  ASSERT_EQ(Run({"submit", "--", "/usr/bin/nvidia-smi", "-L"}), 0) << err_.str();
  const JobSpec& spec = cluster_->submits.at(0).spec;
  EXPECT_EQ(spec.name, "nvidia-smi");
  EXPECT_EQ(spec.queue, "default");
  EXPECT_EQ(spec.tasks[0].replicas, 1u);
  EXPECT_EQ(spec.tasks[0].resources, Resources{});
}

TEST_F(CliTest, SubmitJsonAndGlobalFlagsAfterTheCommand) {
  ASSERT_EQ(Run({"submit", "--json", "-c", "tcp://h:1", "--", "true"}), 0) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["job_id"], 1);
  EXPECT_EQ(options_.endpoints, "tcp://h:1");
}

TEST_F(CliTest, SubmitFromFileAndOverrides) {
  const std::string path = UniqueTempPath("gpool_cli_test");
  WriteFile(path, "name: fromfile\ncommand: [echo, hi]\nresources: {gpus: 1}\n");
  ASSERT_EQ(Run({"submit", path, "--priority", "9", "--idempotency-key", "k1"}), 0) << err_.str();
  ASSERT_EQ(cluster_->submits.size(), 1u);
  EXPECT_EQ(cluster_->submits[0].spec.name, "fromfile");
  EXPECT_EQ(cluster_->submits[0].spec.priority, 9);
  EXPECT_EQ(cluster_->submits[0].idempotency_key, "k1");

  // The same key again is a duplicate.
  ASSERT_EQ(Run({"submit", path, "--idempotency-key", "k1"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "job 1 submitted (already submitted earlier with this idempotency key)\n");
  std::remove(path.c_str());
}

TEST_F(CliTest, SubmitFromStdin) {
  stdin_.str("name: piped\ncommand: 'echo hi'\n");
  ASSERT_EQ(Run({"submit", "-"}), 0) << err_.str();
  EXPECT_EQ(cluster_->submits.at(0).spec.name, "piped");
}

TEST_F(CliTest, InvalidSpecsAreUsageErrorsAndNeverReachTheCoordinator) {
  stdin_.str("name: j\ncommand: x\nresources: {gpus: two}\n");
  EXPECT_EQ(Run({"submit", "-"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "gpool: InvalidArgument: <stdin>: resources.gpus: expected a non-negative integer, got 'two'\n");
  EXPECT_EQ(Run({"submit", "--gpus", "two", "--", "x"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --gpus: expected an integer from 0 to 4294967295, got 'two'\n");
  EXPECT_EQ(Run({"submit", "--mem", "lots", "--", "x"}), kExitUsage);
  EXPECT_EQ(err_.str().rfind("gpool: InvalidArgument: --mem: 'lots' is not a memory size (", 0), 0u) << err_.str();
  EXPECT_EQ(Run({"submit", "--env", "NOEQUALS", "--", "x"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --env: expected NAME=VALUE, got 'NOEQUALS'\n");
  EXPECT_EQ(Run({"submit", "--replicas", "0", "--", "x"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: tasks[0].replicas: must be at least 1\n");
  EXPECT_EQ(Run({"submit", "/nonexistent.yaml"}), kExitUsage);
  EXPECT_EQ(Run({"submit"}), kExitUsage);
  EXPECT_EQ(Run({"submit", "a.yaml", "--", "x"}), kExitUsage);
  EXPECT_EQ(Run({"submit", "a.yaml", "--gpus", "1"}), kExitUsage);
  EXPECT_EQ(Run({"submit", "--"}), kExitUsage);
  EXPECT_EQ(Run({"submit", "--bogus", "--", "x"}), kExitUsage);
  EXPECT_TRUE(cluster_->submits.empty());
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(CliTest, CoordinatorRejectionsMapToExitCodes) {
  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"submit", "--", "x"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: Unavailable: coordinator at tcp://x:1 did not answer within 5 ms\n");
  cluster_->fail_next = Status::InvalidArgument("tasks[0].resources.gpus: too many");
  EXPECT_EQ(Run({"submit", "--", "x"}), kExitUsage);
  cluster_->fail_next = Status::Unauthenticated("bad token");
  EXPECT_EQ(Run({"jobs"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: Unauthenticated: bad token\n");
  cluster_->fail_next = Status::NotLeader("no leader");
  EXPECT_EQ(Run({"nodes"}), kExitUnavailable);
  cluster_->fail_next = Status::Malformed("reply: garbage");
  EXPECT_EQ(Run({"status"}), kExitError);
}

TEST_F(CliTest, ClientFactoryErrorsAreReported) {
  ClientFactory failing = [](const ClientOptions&) -> Result<std::unique_ptr<Client>> {
    return Status::InvalidArgument("coordinator endpoint 'tcp://x': expected tcp://HOST:PORT");
  };
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"jobs"}, out, err, failing, env_), kExitUsage);
  EXPECT_EQ(err.str(), "gpool: InvalidArgument: coordinator endpoint 'tcp://x': expected tcp://HOST:PORT\n");
}

TEST_F(CliTest, GlobalFlagsAndEnvironment) {
  ASSERT_EQ(Run({"jobs"}), 0);
  EXPECT_EQ(options_.endpoints, "tcp://127.0.0.1:7400");
  EXPECT_EQ(options_.token, "");
  EXPECT_EQ(options_.timeout_ms, 5000);
  EXPECT_EQ(options_.retries, 3);

  environment_["GPOOL_COORDINATOR"] = "tcp://a:7400,tcp://b:7400";
  environment_["GPOOL_TOKEN"] = "envtoken";
  ASSERT_EQ(Run({"jobs"}), 0);
  EXPECT_EQ(options_.endpoints, "tcp://a:7400,tcp://b:7400");
  EXPECT_EQ(options_.token, "envtoken");

  ASSERT_EQ(Run({"-c", "tcp://c:1", "--token", "flag", "--timeout-ms", "250", "jobs"}), 0);
  EXPECT_EQ(options_.endpoints, "tcp://c:1");
  EXPECT_EQ(options_.token, "flag");
  EXPECT_EQ(options_.timeout_ms, 250);

  ASSERT_EQ(Run({"--coordinator=tcp://d:2", "jobs"}), 0);
  EXPECT_EQ(options_.endpoints, "tcp://d:2");

  EXPECT_EQ(Run({"--timeout-ms", "0", "jobs"}), kExitUsage);
  EXPECT_EQ(Run({"--timeout-ms", "soon", "jobs"}), kExitUsage);
}

TEST_F(CliTest, HelpVersionAndUsageErrors) {
  EXPECT_EQ(Run({"--help"}), 0);
  EXPECT_NE(out_.str().find("Usage: gpool [global flags] COMMAND"), std::string::npos);
  EXPECT_EQ(Run({"help"}), 0);
  EXPECT_NE(out_.str().find("Exit codes:"), std::string::npos);
  EXPECT_EQ(Run({"submit", "--help"}), 0);
  EXPECT_NE(out_.str().find("--replicas"), std::string::npos);
  EXPECT_EQ(Run({"help", "logs"}), 0);
  EXPECT_NE(out_.str().find("--bytes"), std::string::npos);
  EXPECT_EQ(Run({"--version"}), 0);
  EXPECT_EQ(out_.str().rfind("gpool ", 0), 0u);
  EXPECT_EQ(Run({}), kExitUsage);
  EXPECT_NE(err_.str().find("gpool: InvalidArgument: missing COMMAND"), std::string::npos);
  EXPECT_EQ(Run({"frobnicate"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: unknown command 'frobnicate'\nRun 'gpool --help' for usage.\n");
  EXPECT_EQ(Run({"--bogus"}), kExitUsage);
  EXPECT_EQ(Run({"jobs", "extra"}), kExitUsage);
  EXPECT_EQ(Run({"job"}), kExitUsage);
  EXPECT_EQ(Run({"job", "abc"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: expected a job ID (a positive integer), got 'abc'\n");
  EXPECT_EQ(Run({"job", "0"}), kExitUsage);
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(CliTest, TaskRefs) {
  auto ref = ParseTaskRef("17.2");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->job, JobId(17));
  EXPECT_EQ(ref->index, 2u);
  ref = ParseTaskRef("17");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->job, JobId(17));
  EXPECT_EQ(ref->index, 0u);
  for (const char* bad : {"", ".", "17.", ".2", "17.2.3", "x", "17.x", "-1", "0.1", "17.99999999999"}) {
    EXPECT_FALSE(ParseTaskRef(bad).ok()) << bad;
  }
}

TEST_F(CliTest, Logs) {
  uint64_t id = AddJob("j", JobState::kRunning);
  cluster_->logs[{id, 2}] = "line one\nline two\n";
  ASSERT_EQ(Run({"logs", std::to_string(id) + ".2"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "line one\nline two\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->log_requests.size(), 1u);
  EXPECT_EQ(cluster_->log_requests[0].job_id, id);
  EXPECT_EQ(cluster_->log_requests[0].task_index, 2u);
  EXPECT_EQ(cluster_->log_requests[0].max_bytes, 65536u);

  ASSERT_EQ(Run({"logs", std::to_string(id) + ".2", "--bytes", "9"}), 0);
  EXPECT_EQ(out_.str(), "line two\n");
  EXPECT_EQ(err_.str(), "(showing the last 9 of 18 bytes; --bytes N shows more)\n");

  ASSERT_EQ(Run({"--json", "logs", std::to_string(id) + ".2"}), 0);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["data"], "line one\nline two\n");

  EXPECT_EQ(Run({"logs", std::to_string(id)}), kExitNotFound);  // index 0 has no log
  EXPECT_EQ(cluster_->log_requests.back().task_index, 0u);
  EXPECT_EQ(err_.str(), "gpool: NotFound: task 1.0 has no log\n");

  EXPECT_EQ(Run({"logs", "17.x"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: expected a TASK as JOB.INDEX (e.g. 17.2) or JOB, got '17.x'\n");
  EXPECT_EQ(Run({"logs", "1.0", "--bytes", "99999999999"}), kExitUsage);
}

TEST_F(CliTest, JobsJobCancelNodesStatus) {
  uint64_t done = AddJob("done", JobState::kSucceeded);
  uint64_t running = AddJob("running", JobState::kRunning);

  ASSERT_EQ(Run({"jobs"}), 0);
  EXPECT_NE(out_.str().find("running"), std::string::npos);
  EXPECT_EQ(out_.str().find("done"), std::string::npos);
  EXPECT_FALSE(cluster_->list_jobs_requests.back().include_finished);
  ASSERT_EQ(Run({"jobs", "--all", "--json"}), 0);
  EXPECT_TRUE(cluster_->list_jobs_requests.back().include_finished);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["jobs"].size(), 2u);

  ASSERT_EQ(Run({"job", std::to_string(running)}), 0);
  EXPECT_EQ(out_.str().rfind("Job 2: running\n", 0), 0u) << out_.str();
  EXPECT_EQ(Run({"job", "99"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: job 99 does not exist\n");

  ASSERT_EQ(Run({"cancel", std::to_string(running), "--grace", "3s"}), 0);
  EXPECT_EQ(out_.str(), "job 2 Cancelled\n");
  EXPECT_EQ(cluster_->cancels.back().grace_ms, 3000u);
  EXPECT_EQ(Run({"cancel", std::to_string(done)}), kExitError);
  EXPECT_EQ(cluster_->cancels.back().grace_ms, 10000u);
  EXPECT_EQ(Run({"cancel", "99"}), kExitNotFound);

  NodeSummary node;
  node.name = "gpu-node-1";
  node.state = "Ready";
  cluster_->nodes.nodes = {node};
  ASSERT_EQ(Run({"nodes"}), 0);
  EXPECT_NE(out_.str().find("gpu-node-1"), std::string::npos);
  cluster_->status.replica_id = "c1";
  cluster_->status.role = "leader";
  ASSERT_EQ(Run({"status"}), 0);
  EXPECT_EQ(out_.str().rfind("Replica:  c1 (leader, term 0)\n", 0), 0u) << out_.str();
  ASSERT_EQ(Run({"status", "--json"}), 0);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["role"], "leader");
}

TEST_F(CliTest, WaitPollsUntilTheJobFinishes) {
  uint64_t id = AddJob("j", JobState::kRunning);
  cluster_->on_get_job = [](FakeCluster& c, uint64_t job) {
    if (c.get_job_calls == 3) c.SetJobState(job, JobState::kSucceeded);
  };
  ASSERT_EQ(Run({"wait", std::to_string(id)}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "job 1 Succeeded\n");
  EXPECT_EQ(sleeps_, (std::vector<int64_t>{200, 200}));
}

TEST_F(CliTest, WaitExitsOneWhenTheJobFails) {
  uint64_t id = AddJob("j", JobState::kFailed);
  cluster_->jobs[id].summary.reason = "task 1.0 exited with code 2";
  EXPECT_EQ(Run({"wait", std::to_string(id)}), kExitJobUnsuccessful);
  EXPECT_EQ(out_.str(), "job 1 Failed: task 1.0 exited with code 2\n");
  uint64_t cancelled = AddJob("c", JobState::kCancelled);
  EXPECT_EQ(Run({"wait", std::to_string(cancelled), "--json"}), kExitJobUnsuccessful);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["state"], "Cancelled");
}

TEST_F(CliTest, WaitTimesOut) {
  uint64_t id = AddJob("j", JobState::kRunning);
  EXPECT_EQ(Run({"wait", std::to_string(id), "--timeout", "1s"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: DeadlineExceeded: job 1 is still Running after 1s\n");
  EXPECT_EQ(cluster_->get_job_calls, 6);  // at 0, 200, ..., 1000 ms
  EXPECT_EQ(Run({"wait", "77"}), kExitNotFound);
  EXPECT_EQ(Run({"wait", std::to_string(id), "--timeout", "soon"}), kExitUsage);
}

TEST_F(CliTest, SubmitAndWait) {
  cluster_->on_get_job = [](FakeCluster& c, uint64_t job) { c.SetJobState(job, JobState::kFailed, "boom"); };
  EXPECT_EQ(Run({"submit", "--wait", "--", "false"}), kExitJobUnsuccessful);
  EXPECT_EQ(out_.str(), "job 1 submitted\njob 1 Failed: boom\n");
}

// --- admin replica ----------------------------------------------------------------

TEST_F(CliTest, AdminReplicaAddSendsTheRequestAndPrintsTheVoters) {
  cluster_->status.commit_index = 56;
  ASSERT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://10.0.0.4:7402", "--client-addr",
                 "tcp://10.0.0.4:7400", "--worker-addr", "tcp://10.0.0.4:7401"}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(), "replica 4 added; voters now 1, 2, 3, 4 (committed at index 57)\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->replica_changes.size(), 1u);
  const ChangeReplicas& request = cluster_->replica_changes[0];
  EXPECT_EQ(request.op, "add");
  EXPECT_EQ(request.replica_id, 4u);
  EXPECT_EQ(request.peer_address, "tcp://10.0.0.4:7402");
  EXPECT_EQ(request.client_address, "tcp://10.0.0.4:7400");
  EXPECT_EQ(request.worker_address, "tcp://10.0.0.4:7401");
}

TEST_F(CliTest, AdminReplicaAddWithoutClientAddrAndOtherTransports) {
  ASSERT_EQ(Run({"admin", "replica", "add", "9", "--peer-addr=ipc:///tmp/gpool-9.sock"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->replica_changes.back().peer_address, "ipc:///tmp/gpool-9.sock");
  EXPECT_EQ(cluster_->replica_changes.back().client_address, "");
  // Global flags may come anywhere; flags before the ID are fine too.
  ASSERT_EQ(Run({"-c", "tcp://h:1", "admin", "replica", "add", "--peer-addr", "inproc://r10",
                 "--client-addr", "tcp://[::1]:7400", "10"}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(options_.endpoints, "tcp://h:1");
  EXPECT_EQ(cluster_->replica_changes.back().replica_id, 10u);
  EXPECT_EQ(cluster_->replica_changes.back().peer_address, "inproc://r10");
  EXPECT_EQ(cluster_->replica_changes.back().client_address, "tcp://[::1]:7400");
  EXPECT_EQ(out_.str(), "replica 10 added; voters now 1, 2, 3, 9, 10 (committed at index 2)\n");
}

TEST_F(CliTest, AdminReplicaRemove) {
  cluster_->status.commit_index = 57;
  ASSERT_EQ(Run({"admin", "replica", "remove", "2"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "replica 2 removed; voters now 1, 3 (committed at index 58)\n");
  ASSERT_EQ(cluster_->replica_changes.size(), 1u);
  EXPECT_EQ(cluster_->replica_changes[0].op, "remove");
  EXPECT_EQ(cluster_->replica_changes[0].replica_id, 2u);
  EXPECT_EQ(cluster_->replica_changes[0].peer_address, "");
  EXPECT_EQ(cluster_->replica_changes[0].client_address, "");
  EXPECT_EQ(cluster_->voters, (std::vector<uint64_t>{1, 3}));
}

TEST_F(CliTest, AdminReplicaJson) {
  cluster_->status.commit_index = 10;
  ASSERT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://h4:7402", "--json"}), kExitOk) << err_.str();
  auto added = nlohmann::json::parse(out_.str());
  EXPECT_EQ(added["index"], 11);
  EXPECT_EQ(added["voters"], nlohmann::json::parse("[1,2,3,4]"));
  ASSERT_EQ(Run({"--json", "admin", "replica", "remove", "1"}), kExitOk) << err_.str();
  auto removed = nlohmann::json::parse(out_.str());
  EXPECT_EQ(removed["index"], 12);
  EXPECT_EQ(removed["voters"], nlohmann::json::parse("[2,3,4]"));
}

TEST_F(CliTest, AdminReplicaBadIdsAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string id;
  };
  const std::vector<Case> cases = {
      {{"admin", "replica", "add", "abc", "--peer-addr", "tcp://h:1"}, "abc"},
      {{"admin", "replica", "add", "0", "--peer-addr", "tcp://h:1"}, "0"},
      {{"admin", "replica", "add", "-3", "--peer-addr", "tcp://h:1"}, "-3"},
      {{"admin", "replica", "remove", "1.5"}, "1.5"},
      {{"admin", "replica", "remove", "+4"}, "+4"},
      {{"admin", "replica", "remove", "0x10"}, "0x10"},
      {{"admin", "replica", "remove", "18446744073709551616"}, "18446744073709551616"},  // 2^64
      {{"admin", "replica", "remove", ""}, ""},
      {{"admin", "replica", "remove", "-1"}, "-1"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Run(c.args), kExitUsage) << c.id;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: expected a replica ID (a positive integer), got '" + c.id + "'\n");
  }
  // The largest id is fine.
  ASSERT_EQ(Run({"admin", "replica", "remove", "18446744073709551615"}), kExitNotFound);
  EXPECT_EQ(cluster_->replica_changes.size(), 1u);
  EXPECT_EQ(cluster_->replica_changes[0].replica_id, UINT64_MAX);
  EXPECT_EQ(clients_made_, 1);
}

TEST_F(CliTest, AdminReplicaBadEndpointsAreUsageErrors) {
  for (const char* bad : {"h4:7402", "tcp://h4", "tcp://h4:", "tcp://:7402", "tcp://h4:0", "tcp://h4:65536",
                          "tcp://h4:x", "tcp://h4:-1", "udp://h4:7402", "ipc://", "inproc://", "tcp://h 4:7402",
                          "", "tcp://h4:7402\n"}) {
    EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", bad}), kExitUsage) << bad;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --peer-addr: expected tcp://HOST:PORT, ipc://PATH or "
                          "inproc://NAME, got '" + std::string(bad) + "'\n");
  }
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://*:7402"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --peer-addr: 'tcp://*:7402' is a bind address; give one that "
                        "others can connect to\n");
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://h4:7402", "--client-addr", "h4:7400"}),
            kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: --client-addr: expected tcp://HOST:PORT, ipc://PATH or "
                        "inproc://NAME, got 'h4:7400'\n");
  EXPECT_TRUE(cluster_->replica_changes.empty());
  EXPECT_EQ(clients_made_, 0);
  // The edges of the port range are fine.
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://h4:1"}), kExitOk) << err_.str();
  EXPECT_EQ(Run({"admin", "replica", "add", "5", "--peer-addr", "tcp://h5:65535"}), kExitOk) << err_.str();
}

TEST_F(CliTest, AdminReplicaAddRequiresPeerAddr) {
  EXPECT_EQ(Run({"admin", "replica", "add", "4"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "gpool: InvalidArgument: admin replica add: --peer-addr is required (usage: gpool admin replica add ID "
            "--peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT])\nRun 'gpool --help' for usage.\n");
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--client-addr", "tcp://h4:7400"}), kExitUsage);
  EXPECT_NE(err_.str().find("--peer-addr is required"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr"}), kExitUsage);  // flag without its value
  EXPECT_TRUE(cluster_->replica_changes.empty());
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(CliTest, AdminReplicaUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"admin"}, "admin: expected a subcommand: replica add|remove|list"},
      {{"admin", "replicas"}, "admin: unknown subcommand 'replicas'; expected 'replica'"},
      {{"admin", "replica"}, "admin replica: expected add, remove or list"},
      {{"admin", "replica", "delete", "4"}, "admin replica: unknown subcommand 'delete'; expected add, remove or list"},
      {{"admin", "replica", "add", "--peer-addr", "tcp://h:1"},
       "usage: gpool admin replica add ID --peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT]"},
      {{"admin", "replica", "remove"}, "usage: gpool admin replica remove ID"},
      {{"admin", "replica", "list", "4"}, "usage: gpool admin replica list"},
      {{"admin", "replica", "remove", "4", "--peer-addr", "tcp://h:1"},
       "--peer-addr only applies to 'admin replica add'"},
      {{"admin", "replica", "list", "--client-addr", "tcp://h:1"}, "--client-addr only applies to 'admin replica add'"},
      {{"admin", "replica", "remove", "4", "5", "6"}, "usage: gpool admin replica add|remove|list ..."},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Run(c.args), kExitUsage) << c.message;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + c.message + "\nRun 'gpool --help' for usage.\n");
  }
  EXPECT_EQ(Run({"admin", "replica", "list", "--bogus"}), kExitUsage);
  EXPECT_EQ(err_.str().rfind("gpool: InvalidArgument: admin: ", 0), 0u) << err_.str();
  EXPECT_TRUE(cluster_->replica_changes.empty());
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(CliTest, AdminReplicaCoordinatorErrorsMapToExitCodes) {
  EXPECT_EQ(Run({"admin", "replica", "add", "3", "--peer-addr", "tcp://h3:7402"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: AlreadyExists: replica 3 is already a voter\n");
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(Run({"admin", "replica", "remove", "7"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: replica 7 is not a voter\n");
  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"admin", "replica", "add", "4", "--peer-addr", "tcp://h4:7402"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: Unavailable: coordinator at tcp://x:1 did not answer within 5 ms\n");
  cluster_->fail_next = Status::NotLeader("no leader");
  EXPECT_EQ(Run({"admin", "replica", "remove", "1"}), kExitUnavailable);
  cluster_->fail_next = Status::InvalidArgument("replica_id: must be positive");
  EXPECT_EQ(Run({"admin", "replica", "remove", "1"}), kExitUsage);
  cluster_->fail_next = Status::FailedPrecondition("a configuration change is already in progress");
  EXPECT_EQ(Run({"admin", "replica", "remove", "1", "--json"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: FailedPrecondition: a configuration change is already in progress\n");
  EXPECT_EQ(out_.str(), "");
  cluster_->fail_next = Status::Unauthenticated("bad token");
  EXPECT_EQ(Run({"admin", "replica", "list"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: Unauthenticated: bad token\n");
  // None of the failed changes touched the voters.
  EXPECT_EQ(cluster_->voters, (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(CliTest, AdminReplicaListShowsTheReplicaTable) {
  cluster_->status.replica_id = "1";
  cluster_->status.role = "leader";
  cluster_->status.commit_index = 120;
  cluster_->status.replicas = {ReplicaInfo{"1", "tcp://10.0.0.1:7400", "leader", 121},
                               ReplicaInfo{"2", "tcp://10.0.0.2:7400", "follower", 117},
                               ReplicaInfo{"3", "", "follower", 0}};
  ASSERT_EQ(Run({"admin", "replica", "list"}), kExitOk) << err_.str();
  const std::string table =
      "REPLICA  ADDRESS              ROLE      MATCH  LAG\n"
      "1        tcp://10.0.0.1:7400  leader    121    0\n"
      "2        tcp://10.0.0.2:7400  follower  117    3\n"
      "3        -                    follower  0      -\n";
  EXPECT_EQ(out_.str(), table);
  EXPECT_TRUE(cluster_->replica_changes.empty());
  // The same table ends `gpool status`.
  ASSERT_EQ(Run({"status"}), kExitOk);
  EXPECT_EQ(out_.str().substr(out_.str().size() - table.size()), table);

  ASSERT_EQ(Run({"admin", "replica", "list", "--json"}), kExitOk);
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["commit_index"], 120);
  ASSERT_EQ(json["replicas"].size(), 3u);
  EXPECT_EQ(json["replicas"][1]["id"], "2");
  EXPECT_EQ(json["replicas"][1]["match_index"], 117);

  cluster_->status.replicas.clear();
  ASSERT_EQ(Run({"admin", "replica", "list"}), kExitOk);
  EXPECT_EQ(out_.str(), "No replicas.\n");
}

TEST_F(CliTest, AdminHelp) {
  ASSERT_EQ(Run({"help", "admin"}), kExitOk);
  const std::string help = out_.str();
  EXPECT_NE(help.find("  gpool admin replica add ID --peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT]\n"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  gpool admin replica remove ID\n"), std::string::npos) << help;
  EXPECT_NE(help.find("  gpool admin replica list\n"), std::string::npos) << help;
  EXPECT_NE(help.find("--client-addr ENDPOINT"), std::string::npos) << help;
  ASSERT_EQ(Run({"admin", "replica", "add", "--help"}), kExitOk);
  EXPECT_EQ(out_.str(), help);
  ASSERT_EQ(Run({"--help"}), kExitOk);
  EXPECT_NE(out_.str().find("\n  admin replica add ID --peer-addr ENDPOINT  "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\n  admin replica remove ID  "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\n  admin replica list  "), std::string::npos) << out_.str();
  EXPECT_EQ(clients_made_, 0);
}

// --- submit: class, pool, user, placement, elastic groups ------------------------------

TEST_F(CliTest, SubmitPolicyFlagsBuildTheSpec) {
  ASSERT_EQ(Run({"submit", "--class", "high", "--pool", "exclusive", "--user", "bob", "--selector", "rack=r1,zone=a",
                 "--selector", "gpu=a100", "--prefer", "zone=b", "--toleration", "maint", "--toleration",
                 "dedicated=ml,spot", "--replicas", "4", "--min-replicas", "2", "--gpus", "2", "--gpu-model",
                 "A100-SXM4-80GB", "--numa", "single-numa-node", "--network", "single-switch", "--network-tier",
                 "2", "--", "python3", "train.py"}),
            kExitOk)
      << err_.str();
  ASSERT_EQ(cluster_->submits.size(), 1u);
  const JobSpec& spec = cluster_->submits[0].spec;
  EXPECT_EQ(spec.numa_policy, "single-numa-node");
  EXPECT_EQ(spec.network_mode, "single-switch");
  EXPECT_EQ(spec.network_tier, 2u);
  EXPECT_EQ(spec.priority_class, "high");
  EXPECT_EQ(spec.pool, "exclusive");
  EXPECT_EQ(spec.user, "bob");
  EXPECT_EQ(spec.node_selector,
            (std::map<std::string, std::string>{{"rack", "r1"}, {"zone", "a"}, {"gpu", "a100"}}));
  EXPECT_EQ(spec.prefer_labels, (std::map<std::string, std::string>{{"zone", "b"}}));
  EXPECT_EQ(spec.tolerations, (std::vector<std::string>{"maint", "dedicated=ml", "spot"}));
  ASSERT_EQ(spec.tasks.size(), 1u);
  EXPECT_EQ(spec.tasks[0].replicas, 4u);
  EXPECT_EQ(spec.tasks[0].min_replicas, 2u);
  EXPECT_EQ(spec.tasks[0].resources, (Resources{2, 0, 0, "A100-SXM4-80GB"}));

  // `gpool job` shows what was asked for.
  ASSERT_EQ(Run({"job", "1"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("  Class:          high\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("  User:           bob\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("  Tolerates:      maint, dedicated=ml, spot\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("4 (min 2)  2 GPUs (A100-SXM4-80GB)"), std::string::npos) << out_.str();
}

TEST_F(CliTest, SubmitDefaultsClassPoolAndUserFromTheEnvironment) {
  ASSERT_EQ(Run({"submit", "--", "true"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.priority_class, "medium");
  EXPECT_EQ(cluster_->submits.back().spec.pool, "public");
  EXPECT_EQ(cluster_->submits.back().spec.user, "");  // no $USER: no user
  EXPECT_EQ(cluster_->submits.back().spec.tasks[0].min_replicas, 0u);

  environment_["USER"] = "alice";
  ASSERT_EQ(Run({"submit", "--", "true"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "alice");
  ASSERT_EQ(Run({"submit", "--user", "bob", "--", "true"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "bob");

  // The spec file's user wins over $USER; --user wins over both.
  stdin_.str("name: j\nuser: carol\ncommand: x\n");
  ASSERT_EQ(Run({"submit", "-"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "carol");
  stdin_.clear();
  stdin_.str("name: j\nuser: carol\ncommand: x\n");
  ASSERT_EQ(Run({"submit", "-", "--user", "dave"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "dave");
  stdin_.clear();
  stdin_.str("name: j\ncommand: x\n");
  ASSERT_EQ(Run({"submit", "-"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.back().spec.user, "alice");
  EXPECT_EQ(cluster_->submits.size(), 6u);

  // A login name the coordinator would refuse is reported with the way out.
  environment_["USER"] = "DOMAIN\\alice";
  EXPECT_EQ(Run({"submit", "--", "true"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: $USER is not a valid gpool user (user: 'DOMAIN\\alice' may only "
                        "contain letters, digits, '-', '_' and '.'); give one with --user NAME\n");
  ASSERT_EQ(Run({"submit", "--user", "alice", "--", "true"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->submits.size(), 7u);
}

TEST_F(CliTest, SubmitFileKeepsItsPolicyFieldsAndFlagsAddToThem) {
  const std::string path = UniqueTempPath("gpool_cli_policy");
  WriteFile(path,
            "name: p\npriority_class: low\npool: pooled\nnode_selector: {rack: r1, zone: a}\n"
            "prefer_labels: {ssd: 'yes'}\ntolerations: [maint]\nnuma_policy: best-effort\nreplicas: 3\n"
            "min_replicas: 1\ncommand: x\nresources: {gpus: 1, gpu_model: H100}\n");
  ASSERT_EQ(Run({"submit", path}), kExitOk) << err_.str();
  JobSpec spec = cluster_->submits.back().spec;
  EXPECT_EQ(spec.priority_class, "low");
  EXPECT_EQ(spec.pool, "pooled");
  EXPECT_EQ(spec.node_selector, (std::map<std::string, std::string>{{"rack", "r1"}, {"zone", "a"}}));
  EXPECT_EQ(spec.prefer_labels, (std::map<std::string, std::string>{{"ssd", "yes"}}));
  EXPECT_EQ(spec.tolerations, std::vector<std::string>{"maint"});
  EXPECT_EQ(spec.numa_policy, "best-effort");
  EXPECT_EQ(spec.tasks[0].min_replicas, 1u);
  EXPECT_EQ(spec.tasks[0].resources.gpu_model, "H100");

  ASSERT_EQ(Run({"submit", path, "--class", "high", "--pool", "public", "--selector", "rack=r2",
                 "--toleration", "maint,spot"}),
            kExitOk)
      << err_.str();
  spec = cluster_->submits.back().spec;
  EXPECT_EQ(spec.priority_class, "high");
  EXPECT_EQ(spec.pool, "public");
  EXPECT_EQ(spec.node_selector, (std::map<std::string, std::string>{{"rack", "r2"}, {"zone", "a"}}));
  EXPECT_EQ(spec.tolerations, (std::vector<std::string>{"maint", "spot"}));

  // Group settings belong in the file.
  for (const char* flag : {"--min-replicas", "--gpu-model"}) {
    EXPECT_EQ(Run({"submit", path, flag, "1"}), kExitUsage) << flag;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + std::string(flag) +
                              " only applies to 'submit -- CMD'; set resources in the spec file\n"
                              "Run 'gpool --help' for usage.\n");
  }
  EXPECT_EQ(cluster_->submits.size(), 2u);
  std::remove(path.c_str());
}

TEST_F(CliTest, BadPolicyFlagsNameTheFlagAndNeverReachTheCoordinator) {
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--class", "urgent"}, "--class: 'urgent' is not high, medium or low"},
      {{"--class", "High"}, "--class: 'High' is not high, medium or low"},
      {{"--pool", "shared"}, "--pool: 'shared' is not public, pooled or exclusive"},
      {{"--numa", "strict"}, "--numa: 'strict' is not none, best-effort or single-numa-node"},
      {{"--network", "leaf"}, "--network: 'leaf' is not none, best-effort or single-switch"},
      {{"--network", "single-switch", "--network-tier", "0"}, "--network-tier: tiers count from 1 (the leaf switch)"},
      {{"--network", "single-switch", "--network-tier", "9"}, "--network-tier: expected an integer from 0 to 8, got '9'"},
      {{"--selector", "rack"}, "--selector: expected KEY=VALUE, got 'rack'"},
      {{"--selector", "rack=r1,zone"}, "--selector: expected KEY=VALUE, got 'zone'"},
      {{"--selector", "a b=1"}, "--selector: label key 'a b' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"--selector", "=r1"}, "--selector: '=r1': the label key is empty"},
      {{"--selector", "rack=r1", "--selector", "rack=r2"}, "--selector: rack is set twice ('r1' and 'r2')"},
      {{"--prefer", "zone=a/b"},
       "--prefer: the value of zone ('a/b') may only contain letters, digits, '.', '_' and '-'"},
      {{"--toleration", "=x"}, "--toleration: '=x': the taint key is empty"},
      {{"--toleration", "ma int"}, "--toleration: taint key 'ma int' may only contain letters, digits, '.', '_', '/' "
                                   "and '-'"},
      {{"--toleration", "k=a b"}, "--toleration: the value of k ('a b') may only contain letters, digits, '.', '_' "
                                  "and '-'"},
      {{"--min-replicas", "two"}, "--min-replicas: expected an integer from 0 to 4294967295, got 'two'"},
      {{"--replicas", "2", "--min-replicas", "3"}, "--min-replicas: 3 is more than the 2 replicas (--replicas)"},
      {{"--min-replicas", "2"}, "--min-replicas: 2 is more than the 1 replicas (--replicas)"},
      {{"--gpu-model", "A100"}, "--gpu-model: needs --gpus (the task asks for no GPUs)"},
      {{"--gpus", "1", "--gpu-model", "A 100"},
       "tasks[0].resources.gpu_model: 'A 100' must be at most 63 letters, digits, '.', '_' and '-'"},
      {{"--user", "a b"}, "user: 'a b' may only contain letters, digits, '-', '_' and '.'"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"submit"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    args.insert(args.end(), {"--", "x"});
    EXPECT_EQ(Run(args), kExitUsage) << c.message;
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + c.message + "\n");
  }
  EXPECT_TRUE(cluster_->submits.empty());
  EXPECT_EQ(clients_made_, 0);
}

// --- queue create|update|delete|tree -------------------------------------------------

TEST(QuotaFlagTest, ParsesEveryResource) {
  auto quota = ParseQuota("--capability", "gpu=16,gpu/A100=8,cpu=64,memory=256Gi");
  ASSERT_TRUE(quota.ok()) << quota.status().ToString();
  EXPECT_EQ(*quota, (Quota{{"gpu", 16}, {"gpu/A100", 8}, {"cpu", 64000}, {"memory", 262144}}));
  struct Case {
    std::string text;
    Quota want;
  };
  const std::vector<Case> cases = {
      {"cpu=0.5", {{"cpu", 500}}},
      {"cpu=1.25", {{"cpu", 1250}}},
      {"cpu=250m", {{"cpu", 250}}},
      {"memory=512", {{"memory", 512}}},  // a bare number is MiB
      {"memory=512Mi", {{"memory", 512}}},
      {"memory=1.5Gi", {{"memory", 1536}}},
      {"memory=2Ti", {{"memory", 2097152}}},
      {"gpu=0", {{"gpu", 0}}},
      {"gpu/H100-SXM5_80GB.v2=1", {{"gpu/H100-SXM5_80GB.v2", 1}}},
      {"none", {}},
  };
  for (const auto& c : cases) {
    auto parsed = ParseQuota("--deserved", c.text);
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.status().ToString();
    EXPECT_EQ(*parsed, c.want) << c.text;
  }
  // What the CLI prints reads back as the same quota.
  for (const Quota& q : {*quota, Quota{{"cpu", 500}, {"memory", 1536}}, Quota{{"memory", 100}}, Quota{}}) {
    auto again = ParseQuota("--capability", FormatQuota(q));
    ASSERT_TRUE(again.ok()) << FormatQuota(q);
    EXPECT_EQ(*again, q) << FormatQuota(q);
  }
}

TEST(QuotaFlagTest, ErrorsAreTypedAndNameTheFlag) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "--guarantee: expected RESOURCE=AMOUNT,... (e.g. gpu=16,cpu=64,memory=256Gi) or none"},
      {"gpu", "--guarantee: expected RESOURCE=AMOUNT, got 'gpu'"},
      {"=4", "--guarantee: expected RESOURCE=AMOUNT, got '=4'"},
      {"gpu=1,", "--guarantee: expected RESOURCE=AMOUNT, got ''"},
      {"gpu=1,,cpu=1", "--guarantee: expected RESOURCE=AMOUNT, got ''"},
      {"gpus=4", "--guarantee: unknown resource 'gpus' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)"},
      {"GPU=4", "--guarantee: unknown resource 'GPU' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)"},
      {"gpu/=4", "--guarantee: unknown resource 'gpu/' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)"},
      {"gpu/A 100=4", "--guarantee: unknown resource 'gpu/A 100' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)"},
      {"gpu=1.5", "--guarantee: gpu: expected a whole number of GPUs, got '1.5'"},
      {"gpu=-1", "--guarantee: gpu: expected a whole number of GPUs, got '-1'"},
      {"gpu=", "--guarantee: gpu: expected a whole number of GPUs, got ''"},
      {"gpu/A100=x", "--guarantee: gpu/A100: expected a whole number of GPUs, got 'x'"},
      {"gpu=18446744073709551616", "--guarantee: gpu: expected a whole number of GPUs, got '18446744073709551616'"},
      {"cpu=fast", "--guarantee: cpu: 'fast' is not a CPU count (use cores such as 2 or 0.5, or milli-cores such as 500m)"},
      {"cpu=0.0001", "--guarantee: cpu: '0.0001' is finer than 1/1000 of a core"},
      {"memory=lots", "--guarantee: memory: 'lots' is not a memory size (use MiB such as 4096, or a number with Ki, Mi, Gi, Ti, "
                     "Pi or K, M, G, T, P such as 80Gi)"},
      {"gpu=1,gpu=2", "--guarantee: gpu is given twice"},
  };
  for (const auto& c : cases) {
    auto parsed = ParseQuota("--guarantee", c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(parsed.status().message(), c.message) << c.text;
  }
  auto unit = ParseQuota("--guarantee", "memory=4XB");
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.status().message().rfind("--guarantee: memory: '4XB' is not a memory size", 0), 0u) << unit.status().message();
}

class QueueCliTest : public CliTest {
 protected:
  // research (under root) with every quota, and vision under research.
  void AddResearch() {
    QueueSummary research;
    research.spec.name = "research";
    research.spec.capability = {{"gpu", 16}, {"cpu", 64000}};
    research.spec.deserved = {{"gpu", 8}};
    research.spec.guarantee = {{"gpu", 4}};
    research.allocated = {{"gpu", 6}, {"cpu", 12000}, {"memory", 65536}};
    research.jobs_pending = 2;
    research.jobs_running = 1;
    cluster_->queues["research"] = research;
    QueueSummary vision;
    vision.spec.name = "vision";
    vision.spec.parent = "research";
    vision.spec.capability = {{"gpu/A100", 8}};
    cluster_->queues["vision"] = vision;
  }

  const QueueSpec& Spec(const std::string& name) const { return cluster_->queues.at(name).spec; }

  // Runs `args`, expecting exit `code` with exactly `error` on stderr, and an
  // UpdateQueue sent (and refused by the coordinator) only when `sent`.
  void ExpectRejected(const std::vector<std::string>& args, int code, const std::string& error, bool sent = false) {
    SCOPED_TRACE(::testing::PrintToString(args));
    const size_t updates = cluster_->queue_updates.size();
    EXPECT_EQ(Run(args), code);
    EXPECT_EQ(err_.str(), error);
    EXPECT_EQ(out_.str(), "");
    EXPECT_EQ(cluster_->queue_updates.size(), updates + (sent ? 1 : 0));
  }
};

TEST_F(QueueCliTest, CreateSendsTheSpecAndPrintsItsQuotas) {
  ASSERT_EQ(Run({"queue", "create", "research", "--capability", "gpu=16,gpu/A100=8,cpu=64,memory=256Gi",
                 "--deserved", "gpu=8,cpu=0.5", "--guarantee", "gpu=4"}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(), "queue research created under root: capability gpu=16,gpu/A100=8,cpu=64,memory=256Gi; "
                        "deserved gpu=8,cpu=0.5; guarantee gpu=4\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->queue_updates.size(), 1u);
  const UpdateQueue& request = cluster_->queue_updates[0];
  EXPECT_EQ(request.op, "create");
  EXPECT_EQ(request.spec.name, "research");
  EXPECT_EQ(request.spec.parent, "root");
  EXPECT_EQ(request.spec.capability, (Quota{{"gpu", 16}, {"gpu/A100", 8}, {"cpu", 64000}, {"memory", 262144}}));
  EXPECT_EQ(request.spec.deserved, (Quota{{"gpu", 8}, {"cpu", 500}}));
  EXPECT_EQ(request.spec.guarantee, (Quota{{"gpu", 4}}));
  EXPECT_EQ(Spec("research"), request.spec);

  ASSERT_EQ(Run({"queue", "create", "vision", "--parent", "research"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue vision created under research: capability none; deserved none; guarantee none\n");
  EXPECT_EQ(Spec("vision").parent, "research");

  ASSERT_EQ(Run({"queue", "create", "--json", "nlp", "--deserved", "gpu=2"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["queue"]["spec"]["name"], "nlp");
  EXPECT_EQ(json["queue"]["spec"]["parent"], "root");
  EXPECT_EQ(json["queue"]["spec"]["deserved"]["gpu"], 2);
}

TEST_F(QueueCliTest, CreateErrors) {
  AddResearch();
  ExpectRejected({"queue", "create", "research"}, kExitError, "gpool: AlreadyExists: queue 'research' already exists\n",
                 /*sent=*/true);
  ExpectRejected({"queue", "create", "x", "--parent", "nowhere"}, kExitNotFound,
                 "gpool: NotFound: parent queue 'nowhere' does not exist\n", /*sent=*/true);
  // The coordinator's rules against the rest of the tree.
  ExpectRejected({"queue", "create", "x", "--parent", "research", "--capability", "gpu=32"}, kExitError,
                 "gpool: FailedPrecondition: capability gpu=32 of queue x is more than its parent research's 16\n",
                 true);
  uint64_t job = AddJob("j", JobState::kPending);
  cluster_->jobs[job].spec.queue = "default";
  ExpectRejected({"queue", "create", "x", "--parent", "default"}, kExitError,
                 "gpool: FailedPrecondition: queue 'default' has unfinished jobs (job 1); jobs run only in leaf "
                 "queues\n",
                 true);

  // Checked before anything is sent.
  ExpectRejected({"queue", "create", "default"}, kExitError, "gpool: AlreadyExists: queue default always exists\n");
  ExpectRejected({"queue", "create", "x", "--capability", "gpu=4", "--deserved", "gpu=8"}, kExitUsage,
                 "gpool: InvalidArgument: deserved gpu=8 is more than capability 4\n");
  ExpectRejected({"queue", "create", "x", "--deserved", "memory=1Gi", "--guarantee", "memory=2Gi"}, kExitUsage,
                 "gpool: InvalidArgument: guarantee memory=2048 is more than deserved 1024\n");
  ExpectRejected({"queue", "create", "x", "--capability", "gpus=4"}, kExitUsage,
                 "gpool: InvalidArgument: --capability: unknown resource 'gpus' (expected gpu, cpu, memory, gpu_memory or "
                 "gpu/<model>)\n");
  ExpectRejected({"queue", "create", "x", "--deserved", "cpu=lots"}, kExitUsage,
                 "gpool: InvalidArgument: --deserved: cpu: 'lots' is not a CPU count (use cores such as 2 or 0.5, or "
                 "milli-cores such as 500m)\n");
  ExpectRejected({"queue", "create", "a b"}, kExitUsage,
                 "gpool: InvalidArgument: queue: 'a b' may only contain letters, digits, '-', '_' and '.'\n");
  ExpectRejected({"queue", "create", "x", "--parent", "x"}, kExitUsage,
                 "gpool: InvalidArgument: parent: a queue cannot be its own parent\n");
  EXPECT_EQ(cluster_->queue_updates.size(), 4u);  // only the four the coordinator refused
}

TEST_F(QueueCliTest, UpdateReplacesOnlyTheQuotasGiven) {
  AddResearch();
  ASSERT_EQ(Run({"queue", "update", "research", "--deserved", "gpu=10,cpu=8"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue research updated: capability gpu=16,cpu=64; deserved gpu=10,cpu=8; guarantee gpu=4\n");
  EXPECT_EQ(cluster_->list_queues_calls, 1);
  ASSERT_EQ(cluster_->queue_updates.size(), 1u);
  const UpdateQueue& request = cluster_->queue_updates[0];
  EXPECT_EQ(request.op, "update");
  EXPECT_EQ(request.spec.name, "research");
  EXPECT_EQ(request.spec.parent, "root");
  EXPECT_EQ(request.spec.capability, (Quota{{"gpu", 16}, {"cpu", 64000}}));
  EXPECT_EQ(request.spec.deserved, (Quota{{"gpu", 10}, {"cpu", 8000}}));
  EXPECT_EQ(request.spec.guarantee, (Quota{{"gpu", 4}}));
  EXPECT_EQ(Spec("research"), request.spec);

  // A flag replaces its whole quota; "none" clears it.
  ASSERT_EQ(Run({"queue", "update", "research", "--capability", "memory=1Ti", "--guarantee", "none"}), kExitOk)
      << err_.str();
  EXPECT_EQ(Spec("research").capability, (Quota{{"memory", 1048576}}));
  EXPECT_EQ(Spec("research").deserved, (Quota{{"gpu", 10}, {"cpu", 8000}}));
  EXPECT_TRUE(Spec("research").guarantee.empty());

  // A child keeps its parent.
  ASSERT_EQ(Run({"queue", "update", "vision", "--deserved", "gpu/A100=2", "--json"}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->queue_updates.back().spec.parent, "research");
  EXPECT_EQ(nlohmann::json::parse(out_.str())["queue"]["spec"]["capability"]["gpu/A100"], 8);

  // root and default have quotas too.
  ASSERT_EQ(Run({"queue", "update", "root", "--capability", "gpu=32"}), kExitOk) << err_.str();
  EXPECT_EQ(Spec("root").capability, (Quota{{"gpu", 32}}));
  EXPECT_EQ(Spec("root").parent, "");
}

TEST_F(QueueCliTest, UpdateChecksTheResultBeforeSending) {
  AddResearch();
  // deserved gpu=8 stays, so capability gpu=6 would be below it.
  ExpectRejected({"queue", "update", "research", "--capability", "gpu=6"}, kExitUsage,
                 "gpool: InvalidArgument: queue research with this update: deserved gpu=8 is more than capability "
                 "6\n");
  EXPECT_EQ(cluster_->list_queues_calls, 1);
  ExpectRejected({"queue", "update", "nowhere", "--deserved", "gpu=1"}, kExitNotFound,
                 "gpool: NotFound: queue 'nowhere' does not exist\n");
  // Bad flags are found without asking the coordinator anything.
  ExpectRejected({"queue", "update", "research", "--guarantee", "gpu=9", "--deserved", "gpu=8"}, kExitUsage,
                 "gpool: InvalidArgument: guarantee gpu=9 is more than deserved 8\n");
  ExpectRejected({"queue", "update", "research", "--capability", "gpu=x"}, kExitUsage,
                 "gpool: InvalidArgument: --capability: gpu: expected a whole number of GPUs, got 'x'\n");
  EXPECT_EQ(cluster_->list_queues_calls, 2);
  EXPECT_TRUE(cluster_->queue_updates.empty());
  // The coordinator's rules against the rest of the tree: vision may hold 8 A100s.
  ExpectRejected({"queue", "update", "research", "--capability", "gpu=16,gpu/A100=4"}, kExitError,
                 "gpool: FailedPrecondition: capability gpu/A100=8 of queue vision is more than its parent "
                 "research's 4\n",
                 true);
  EXPECT_EQ(Spec("research").capability, (Quota{{"gpu", 16}, {"cpu", 64000}}));
}

TEST_F(QueueCliTest, Delete) {
  AddResearch();
  ExpectRejected({"queue", "delete", "research"}, kExitError,
                 "gpool: FailedPrecondition: queue 'research' has child queue 'vision'; delete it first\n", true);
  ASSERT_EQ(Run({"queue", "delete", "vision"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "queue vision deleted\n");
  EXPECT_EQ(cluster_->queue_updates.back().op, "delete");
  EXPECT_EQ(cluster_->queue_updates.back().spec.name, "vision");
  EXPECT_FALSE(cluster_->queues.count("vision"));

  // Unfinished jobs keep a queue; finished ones do not.
  uint64_t job = AddJob("j", JobState::kRunning);
  cluster_->jobs[job].spec.queue = "research";
  ExpectRejected({"queue", "delete", "research"}, kExitError,
                 "gpool: FailedPrecondition: queue 'research' has unfinished job 1\n", true);
  cluster_->SetJobState(job, JobState::kSucceeded);
  ASSERT_EQ(Run({"queue", "delete", "research", "--json"}), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["queue"]["spec"]["name"], "research");
  EXPECT_FALSE(cluster_->queues.count("research"));

  ExpectRejected({"queue", "delete", "research"}, kExitNotFound,
                 "gpool: NotFound: queue 'research' does not exist\n", true);
  const size_t sent = cluster_->queue_updates.size();
  ExpectRejected({"queue", "delete", "default"}, kExitError,
                 "gpool: FailedPrecondition: queue default always exists and cannot be deleted\n");
  ExpectRejected({"queue", "delete", "root"}, kExitError,
                 "gpool: FailedPrecondition: queue root always exists and cannot be deleted\n");
  EXPECT_EQ(cluster_->queue_updates.size(), sent);
  EXPECT_EQ(cluster_->queues.size(), 2u);
}

TEST_F(QueueCliTest, TreeShowsTheHierarchy) {
  AddResearch();
  ASSERT_EQ(Run({"queue", "tree"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "QUEUE       GPU       GPU/A100  CPU        MEM(GiB)  PENDING  RUNNING\n"
            "root        0/-/-/-   0/-/-/-   0/-/-/-    0/-/-/-   0        0\n"
            "  default   0/-/-/-   0/-/-/-   0/-/-/-    0/-/-/-   0        0\n"
            "  research  6/8/4/16  0/-/-/-   12/-/-/64  64/-/-/-  2        1\n"
            "    vision  0/-/-/-   0/-/-/8   0/-/-/-    0/-/-/-   0        0\n"
            "(each resource: allocated/deserved/guarantee/capability; - = not set)\n");
  ASSERT_EQ(Run({"queue", "tree", "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  ASSERT_EQ(json["queues"].size(), 4u);
  EXPECT_EQ(json["queues"][0]["spec"]["name"], "root");
  EXPECT_EQ(json["queues"][1]["spec"]["name"], "default");
  EXPECT_EQ(json["queues"][2]["spec"]["name"], "research");
  EXPECT_EQ(json["queues"][3]["spec"]["name"], "vision");
  EXPECT_EQ(json["queues"][2]["allocated"]["memory"], 65536);
  EXPECT_TRUE(cluster_->queue_updates.empty());
}

TEST_F(QueueCliTest, UsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string create = " (usage: gpool queue create NAME [--parent P] [--capability QUOTA] [--deserved QUOTA] "
                             "[--guarantee QUOTA])";
  const std::vector<Case> cases = {
      {{"queue"}, "queue: expected a subcommand: create, update, delete or tree"},
      {{"queue", "list"}, "queue: unknown subcommand 'list'; expected create, update, delete or tree"},
      {{"queue", "create"}, "queue create: expected one queue NAME, got 0 arguments" + create},
      {{"queue", "create", "a", "b"}, "queue create: expected one queue NAME, got 2 arguments" + create},
      {{"queue", "delete"}, "queue delete: expected one queue NAME, got 0 arguments (usage: gpool queue delete NAME)"},
      {{"queue", "tree", "x"}, "queue tree: takes no arguments (usage: gpool queue tree)"},
      {{"queue", "update", "research"},
       "queue update: nothing to change; give --capability, --deserved or --guarantee (usage: gpool queue update NAME "
       "[--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA])"},
      {{"queue", "update", "research", "--parent", "x", "--deserved", "gpu=1"},
       "--parent only applies to 'queue create'"},
      {{"queue", "delete", "research", "--capability", "gpu=1"},
       "--capability only applies to 'queue create' and 'queue update'"},
      {{"queue", "tree", "--guarantee", "none"}, "--guarantee only applies to 'queue create' and 'queue update'"},
  };
  for (const auto& c : cases) {
    ExpectRejected(c.args, kExitUsage, "gpool: InvalidArgument: " + c.message + "\nRun 'gpool --help' for usage.\n");
  }
  EXPECT_EQ(Run({"queue", "tree", "--bogus"}), kExitUsage);
  EXPECT_EQ(err_.str().rfind("gpool: InvalidArgument: queue: ", 0), 0u) << err_.str();
  EXPECT_EQ(clients_made_, 0);
}

TEST_F(QueueCliTest, CoordinatorErrorsMapToExitCodes) {
  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"queue", "tree"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: Unavailable: coordinator at tcp://x:1 did not answer within 5 ms\n");
  cluster_->fail_next = Status::NotLeader("no leader");
  EXPECT_EQ(Run({"queue", "create", "x"}), kExitUnavailable);
  cluster_->fail_next = Status::InvalidArgument("capability: children's deserved exceeds the parent's");
  EXPECT_EQ(Run({"queue", "create", "x"}), kExitUsage);
  // An update fails at its first call, the ListQueues.
  cluster_->fail_next = Status::Unauthenticated("bad token");
  EXPECT_EQ(Run({"queue", "update", "default", "--deserved", "gpu=1"}), kExitError);
  EXPECT_EQ(err_.str(), "gpool: Unauthenticated: bad token\n");
  // Injected failures come before the fake records a request: nothing was applied.
  EXPECT_TRUE(cluster_->queue_updates.empty());
  EXPECT_EQ(cluster_->list_queues_calls, 0);
  EXPECT_EQ(cluster_->queues.size(), 2u);
}

TEST_F(QueueCliTest, Help) {
  ASSERT_EQ(Run({"help", "queue"}), kExitOk);
  const std::string help = out_.str();
  for (const char* line :
       {"  gpool queue create NAME [--parent P] [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]\n",
        "  gpool queue update NAME [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]\n",
        "  gpool queue delete NAME\n", "  gpool queue tree\n", "--capability QUOTA", "--parent P"}) {
    EXPECT_NE(help.find(line), std::string::npos) << line << help;
  }
  ASSERT_EQ(Run({"queue", "create", "--help"}), kExitOk);
  EXPECT_EQ(out_.str(), help);
  ASSERT_EQ(Run({"--help"}), kExitOk);
  for (const char* line : {"\n  queue create NAME [--parent P] [QUOTAS]  ", "\n  queue update NAME [QUOTAS]  ",
                           "\n  queue delete NAME  ", "\n  queue tree  ", "\n  explain ID  ",
                           "\n  node taint NAME KEY=VALUE... KEY-...  "}) {
    EXPECT_NE(out_.str().find(line), std::string::npos) << line << out_.str();
  }
  EXPECT_EQ(clients_made_, 0);
}

// --- explain ---------------------------------------------------------------------------

TEST_F(QueueCliTest, ExplainShowsReasonsQueuePathAndJobsAhead) {
  AddResearch();
  // Three jobs in vision: a high one (ahead whatever its priority), an
  // earlier medium one of the same priority (ahead), a later one (behind).
  uint64_t high = AddJob("high", JobState::kPending);
  uint64_t early = AddJob("early", JobState::kPending);
  uint64_t target = AddJob("target", JobState::kPending);
  uint64_t late = AddJob("late", JobState::kPending);
  uint64_t running = AddJob("running", JobState::kRunning);
  for (uint64_t id : {high, early, target, late, running}) {
    cluster_->jobs[id].spec.queue = "vision";
    cluster_->jobs[id].summary.queue = "vision";
  }
  cluster_->jobs[high].spec.priority_class = "high";
  cluster_->jobs[high].spec.priority = -5;
  cluster_->jobs[target].reasons = {"queue research: deserved gpu=8 reached", "node-0: cordoned"};
  cluster_->jobs[target].summary.gpus = 8;

  ASSERT_EQ(Run({"explain", std::to_string(target)}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "Job 3 target: Pending in queue vision, priority 0, 8 GPUs\n"
            "Reasons:\n"
            "  - queue research: deserved gpu=8 reached\n"
            "  - node-0: cordoned\n"
            "Queue path (leaf to root; each resource: allocated/deserved/capability, - = not set):\n"
            "  QUEUE     GPU     GPU/A100  CPU      MEM(GiB)\n"
            "  vision    0/-/-   0/-/8     0/-/-    0/-/-\n"
            "  research  6/8/16  0/-/-     12/-/64  64/-/-\n"
            "  root      0/-/-   0/-/-     0/-/-    0/-/-\n"
            "2 jobs ahead in queue vision\n");
  EXPECT_EQ(cluster_->explain_requests, std::vector<uint64_t>{target});

  ASSERT_EQ(Run({"explain", std::to_string(late), "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["job"]["job_id"], late);
  EXPECT_EQ(json["jobs_ahead"], 3);
  ASSERT_EQ(json["queue_path"].size(), 3u);
  EXPECT_EQ(json["queue_path"][0]["spec"]["name"], "vision");
  EXPECT_EQ(json["queue_path"][2]["spec"]["name"], "root");

  ASSERT_EQ(Run({"explain", std::to_string(high)}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("Reasons: none\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\n0 jobs ahead in queue vision\n"), std::string::npos) << out_.str();
}

TEST_F(QueueCliTest, ExplainErrors) {
  EXPECT_EQ(Run({"explain", "99"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: job 99 does not exist\n");
  EXPECT_EQ(Run({"explain", "abc"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: expected a job ID (a positive integer), got 'abc'\n");
  EXPECT_EQ(Run({"explain"}), kExitUsage);
  EXPECT_EQ(Run({"explain", "1", "2"}), kExitUsage);
  EXPECT_EQ(cluster_->explain_requests, std::vector<uint64_t>{99});
}

// --- node cordon|uncordon|label|pool ---------------------------------------------------

class NodeCliTest : public CliTest {
 protected:
  NodeCliTest() {
    NodeSummary a;
    a.name = "node-0";
    a.state = "Ready";
    a.pool = "public";
    a.labels = {{"rack", "r1"}, {"old", "x"}};
    NodeSummary b;
    b.name = "node-1";
    b.state = "NotReady";
    b.pool = "public";
    cluster_->nodes.nodes = {a, b};
  }

  const NodeSummary& Node(size_t i) const { return cluster_->nodes.nodes.at(i); }

  // Runs `args`, expecting a usage error with exactly `message` and no request sent.
  void ExpectRejected(const std::vector<std::string>& args, const std::string& message, bool usage_hint) {
    SCOPED_TRACE(::testing::PrintToString(args));
    EXPECT_EQ(Run(args), kExitUsage);
    EXPECT_EQ(err_.str(), "gpool: InvalidArgument: " + message + "\n" +
                              (usage_hint ? "Run 'gpool --help' for usage.\n" : ""));
    EXPECT_EQ(out_.str(), "");
    EXPECT_TRUE(cluster_->node_updates.empty());
    EXPECT_EQ(clients_made_, 0);
  }
};

TEST_F(NodeCliTest, CordonAndUncordon) {
  ASSERT_EQ(Run({"node", "cordon", "node-0"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 cordoned\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->node_updates.size(), 1u);
  EXPECT_EQ(cluster_->node_updates[0].node, "node-0");
  EXPECT_EQ(cluster_->node_updates[0].op, "cordon");
  EXPECT_TRUE(cluster_->node_updates[0].labels.empty());
  EXPECT_TRUE(cluster_->node_updates[0].remove_labels.empty());
  EXPECT_EQ(cluster_->node_updates[0].pool, "");
  EXPECT_TRUE(Node(0).cordoned);
  EXPECT_FALSE(Node(1).cordoned);

  // `nodes` shows the state the coordinator reports.
  ASSERT_EQ(Run({"nodes"}), kExitOk);
  EXPECT_NE(out_.str().find("\nnode-0  Ready,Cordoned  public  "), std::string::npos) << out_.str();

  // Cordoning again is harmless.
  ASSERT_EQ(Run({"node", "cordon", "node-0"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 cordoned\n");
  EXPECT_EQ(Node(0).state, "Ready,Cordoned");

  ASSERT_EQ(Run({"node", "uncordon", "node-0"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 uncordoned\n");
  EXPECT_EQ(cluster_->node_updates.back().op, "uncordon");
  EXPECT_FALSE(Node(0).cordoned);
  EXPECT_EQ(Node(0).state, "Ready");

  // A node that is not ready can be cordoned too.
  ASSERT_EQ(Run({"node", "cordon", "node-1"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-1 cordoned\n");
  EXPECT_EQ(Node(1).state, "NotReady,Cordoned");
}

TEST_F(NodeCliTest, LabelSetsAndRemovesAndPrintsAllLabelsSorted) {
  ASSERT_EQ(Run({"node", "label", "node-0", "team=vision", "old-", "zone="}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: rack=r1, team=vision, zone=\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->node_updates.size(), 1u);
  const UpdateNode& request = cluster_->node_updates[0];
  EXPECT_EQ(request.node, "node-0");
  EXPECT_EQ(request.op, "label");
  EXPECT_EQ(request.labels, (std::map<std::string, std::string>{{"team", "vision"}, {"zone", ""}}));
  EXPECT_EQ(request.remove_labels, (std::vector<std::string>{"old"}));
  EXPECT_EQ(request.pool, "");
  EXPECT_EQ(Node(0).labels,
            (std::map<std::string, std::string>{{"rack", "r1"}, {"team", "vision"}, {"zone", ""}}));

  // Overwriting a value; a key given twice with the same value is fine; so is removing twice.
  ASSERT_EQ(Run({"node", "label", "node-0", "team=nlp", "team=nlp", "zone-", "zone-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: rack=r1, team=nlp\n");
  EXPECT_EQ(cluster_->node_updates.back().labels, (std::map<std::string, std::string>{{"team", "nlp"}}));
  EXPECT_EQ(cluster_->node_updates.back().remove_labels, (std::vector<std::string>{"zone"}));

  // Every character the rules allow, at the longest lengths.
  const std::string key = "example.com/gpu_type-" + std::string(42, 'k');
  const std::string value = "A100_80GB.sxm-" + std::string(49, 'v');
  ASSERT_EQ(key.size(), 63u);
  ASSERT_EQ(value.size(), 63u);
  ASSERT_EQ(Run({"node", "label", "node-0", key + "=" + value}), kExitOk) << err_.str();
  EXPECT_EQ(Node(0).labels.at(key), value);

  // Removing everything.
  ASSERT_EQ(Run({"node", "label", "node-0", "rack-", "team-", key + "-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: none\n");
  EXPECT_TRUE(Node(0).labels.empty());

  // Removing a label the node does not have is not an error (as on the coordinator).
  ASSERT_EQ(Run({"node", "label", "node-0", "nothere-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: none\n");
}

TEST_F(NodeCliTest, RemovingALabelFromTheNodesOwnSpecPrintsANote) {
  cluster_->spec_labels["node-0"] = {{"rack", "r1"}};
  cluster_->nodes.nodes[0].labels["rack"] = "r9";  // an operator override of the spec's r1
  ASSERT_EQ(Run({"node", "label", "node-0", "rack-", "old-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 labels: rack=r1\n");
  EXPECT_EQ(err_.str(), "gpool: note: rack is still rack=r1: it comes from node node-0's own labels, which "
                        "'node label' can override but not remove\n");
}

TEST_F(NodeCliTest, Pool) {
  for (const char* pool : {"exclusive", "pooled", "public"}) {
    ASSERT_EQ(Run({"node", "pool", "node-1", pool}), kExitOk) << err_.str();
    EXPECT_EQ(out_.str(), std::string("node node-1 moved to pool ") + pool + "\n");
    EXPECT_EQ(cluster_->node_updates.back().op, "pool");
    EXPECT_EQ(cluster_->node_updates.back().pool, pool);
    EXPECT_EQ(Node(1).pool, pool);
  }
  EXPECT_EQ(cluster_->node_updates.size(), 3u);
  EXPECT_EQ(Node(0).pool, "public");
}

TEST_F(NodeCliTest, JsonPrintsTheReply) {
  ASSERT_EQ(Run({"node", "cordon", "node-0", "--json"}), kExitOk) << err_.str();
  auto cordoned = nlohmann::json::parse(out_.str());
  EXPECT_EQ(cordoned["node"]["name"], "node-0");
  EXPECT_EQ(cordoned["node"]["cordoned"], true);
  EXPECT_EQ(cordoned["node"]["state"], "Ready,Cordoned");

  ASSERT_EQ(Run({"--json", "node", "uncordon", "node-0"}), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["node"]["cordoned"], false);

  ASSERT_EQ(Run({"node", "label", "--json", "node-0", "team=vision", "old-"}), kExitOk) << err_.str();
  auto labelled = nlohmann::json::parse(out_.str());
  EXPECT_EQ(labelled["node"]["labels"], nlohmann::json::parse(R"({"rack":"r1","team":"vision"})"));

  ASSERT_EQ(Run({"node", "pool", "node-0", "pooled", "--json"}), kExitOk) << err_.str();
  auto pooled = nlohmann::json::parse(out_.str());
  EXPECT_EQ(pooled["node"]["pool"], "pooled");
  EXPECT_EQ(pooled.size(), 1u);  // {"node": {...}}, the UpdateNodeReply as is
}

TEST_F(NodeCliTest, UnknownNodeIsNotFound) {
  const std::vector<std::vector<std::string>> cases = {
      {"node", "cordon", "node-9"},
      {"node", "uncordon", "node-9"},
      {"node", "label", "node-9", "team=vision"},
      {"node", "pool", "node-9", "exclusive"},
      {"node", "pool", "node-9", "exclusive", "--json"},
  };
  for (const auto& args : cases) {
    EXPECT_EQ(Run(args), kExitNotFound) << args[1];
    EXPECT_EQ(err_.str(), "gpool: NotFound: node node-9 is not registered\n");
    EXPECT_EQ(out_.str(), "");
  }
  EXPECT_EQ(cluster_->node_updates.size(), cases.size());
  EXPECT_FALSE(Node(0).cordoned);
}

TEST_F(NodeCliTest, CoordinatorErrorsMapToExitCodes) {
  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"node", "cordon", "node-0"}), kExitUnavailable);
  EXPECT_EQ(err_.str(), "gpool: Unavailable: coordinator at tcp://x:1 did not answer within 5 ms\n");
  cluster_->fail_next = Status::InvalidArgument("labels: more than 256 changes at once");
  EXPECT_EQ(Run({"node", "label", "node-0", "a=1"}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: labels: more than 256 changes at once\n");
  cluster_->fail_next = Status::NotLeader("no leader");
  EXPECT_EQ(Run({"node", "pool", "node-0", "pooled"}), kExitUnavailable);
  cluster_->fail_next = Status::Unauthenticated("bad token");
  EXPECT_EQ(Run({"node", "uncordon", "node-0"}), kExitError);
  EXPECT_EQ(out_.str(), "");
  EXPECT_FALSE(Node(0).cordoned);
  EXPECT_EQ(Node(0).pool, "public");
}

TEST_F(NodeCliTest, GlobalFlagsMayComeAnywhere) {
  ASSERT_EQ(Run({"node", "label", "-c", "tcp://h:1", "node-0", "--token=a=b-", "team=vision"}), kExitOk)
      << err_.str();
  EXPECT_EQ(options_.endpoints, "tcp://h:1");
  EXPECT_EQ(options_.token, "a=b-");
  EXPECT_EQ(cluster_->node_updates.back().labels, (std::map<std::string, std::string>{{"team", "vision"}}));
  ASSERT_EQ(Run({"--coordinator=tcp://h:2", "node", "cordon", "node-1", "--timeout-ms", "100"}), kExitOk)
      << err_.str();
  EXPECT_EQ(options_.endpoints, "tcp://h:2");
  EXPECT_EQ(options_.timeout_ms, 100);
}

TEST_F(NodeCliTest, UsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"node"}, "node: expected a subcommand: show, cordon, uncordon, label, pool or taint"},
      {{"node", "drain", "node-0"},
       "node: unknown subcommand 'drain'; expected show, cordon, uncordon, label, pool or taint"},
      {{"node", "show"}, "node show: missing the node NAME (usage: gpool node show NAME)"},
      {{"node", "show", "node-0", "node-1"},
       "node show: expected one node NAME, got 2 arguments (usage: gpool node show NAME)"},
      {{"node", "cordon"}, "node cordon: missing the node NAME (usage: gpool node cordon NAME)"},
      {{"node", "uncordon"}, "node uncordon: missing the node NAME (usage: gpool node uncordon NAME)"},
      {{"node", "label"}, "node label: missing the node NAME (usage: gpool node label NAME KEY=VALUE... KEY-...)"},
      {{"node", "pool"}, "node pool: missing the node NAME (usage: gpool node pool NAME public|pooled|exclusive)"},
      {{"node", "cordon", "node-0", "node-1"},
       "node cordon: expected one node NAME, got 2 arguments (usage: gpool node cordon NAME)"},
      {{"node", "uncordon", "node-0", "x"},
       "node uncordon: expected one node NAME, got 2 arguments (usage: gpool node uncordon NAME)"},
      {{"node", "label", "node-0"},
       "node label: expected at least one KEY=VALUE (set) or KEY- (remove) (usage: gpool node label NAME "
       "KEY=VALUE... KEY-...)"},
      {{"node", "pool", "node-0"},
       "node pool: expected a node NAME and a POOL (usage: gpool node pool NAME public|pooled|exclusive)"},
      {{"node", "pool", "node-0", "public", "pooled"},
       "node pool: expected a node NAME and a POOL (usage: gpool node pool NAME public|pooled|exclusive)"},
  };
  for (const auto& c : cases) ExpectRejected(c.args, c.message, /*usage_hint=*/true);
  EXPECT_EQ(Run({"node", "cordon", "node-0", "--bogus"}), kExitUsage);
  EXPECT_EQ(err_.str().rfind("gpool: InvalidArgument: node: ", 0), 0u) << err_.str();
  EXPECT_TRUE(cluster_->node_updates.empty());
}

// --- nodes --devices, node show ----------------------------------------------------------

class NodeDevicesCliTest : public CliTest {
 protected:
  NodeDevicesCliTest() {
    // node-0: 8 GPUs in two NVLink groups (0-3 and 4-7), one NUMA node each.
    NodeSummary a;
    a.name = "node-0";
    a.state = "Ready";
    a.pool = "public";
    a.gpus_total = 8;
    a.gpus_used = 1;
    a.cpu_milli_total = 64000;
    a.memory_mib_total = 512 * 1024;
    a.labels = {{"rack", "r1"}};
    for (uint32_t i = 0; i < 8; ++i) {
      DeviceSummary d;
      d.index = i;
      d.uuid = "GPU-" + std::to_string(i) + "0000000-aaaa-bbbb-cccc-dddddddddddd";
      d.model = "A100";
      d.memory_mib = 40 * 1024;
      d.numa = i < 4 ? 0 : 1;
      // Each GPU reports only its next neighbour in its group: the group is still all four.
      if (i % 4 != 3) d.nvlink_peers = {i + 1};
      a.devices.push_back(d);
    }
    a.devices[2].task = "7.1";
    const auto groups = LinkGroups(a.devices);
    for (size_t i = 0; i < groups.size(); ++i) a.devices[i].link_group = groups[i];
    a.numa = {NumaSummary{0, 32000, 256 * 1024, {0, 1, 2, 3}}, NumaSummary{1, 32000, 256 * 1024, {4, 5, 6, 7}}};
    // node-1: two PCIe GPUs, no links, no NUMA information.
    NodeSummary b;
    b.name = "node-1";
    b.state = "Ready";
    b.pool = "pooled";
    b.gpus_total = 2;
    for (uint32_t i = 0; i < 2; ++i) {
      DeviceSummary d;
      d.index = i;
      d.uuid = "GPU-b" + std::to_string(i);
      d.model = "T4";
      d.memory_mib = 16 * 1024;
      b.devices.push_back(d);
    }
    cluster_->nodes.nodes = {a, b};
  }
};

TEST_F(NodeDevicesCliTest, NodesListsDevicesOnlyWhenAsked) {
  ASSERT_EQ(Run({"nodes"}), kExitOk) << err_.str();
  const std::string plain = out_.str();
  EXPECT_EQ(plain.find("Node node-0:"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("INDEX"), std::string::npos) << plain;

  ASSERT_EQ(Run({"nodes", "--devices"}), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_EQ(text.rfind(plain, 0), 0u) << text;  // the nodes table first, unchanged
  EXPECT_EQ(text.substr(plain.size()),
            "\n"
            "Node node-0:\n"
            "  INDEX  UUID             MODEL  MEM(GiB)  NUMA  LINK GROUP  HEALTH  SHARING  TASK\n"
            "  0      GPU-00000000...  A100   40        0     0           ok      -        -\n"
            "  1      GPU-10000000...  A100   40        0     0           ok      -        -\n"
            "  2      GPU-20000000...  A100   40        0     0           ok      -        7.1\n"
            "  3      GPU-30000000...  A100   40        0     0           ok      -        -\n"
            "  4      GPU-40000000...  A100   40        1     1           ok      -        -\n"
            "  5      GPU-50000000...  A100   40        1     1           ok      -        -\n"
            "  6      GPU-60000000...  A100   40        1     1           ok      -        -\n"
            "  7      GPU-70000000...  A100   40        1     1           ok      -        -\n"
            "\n"
            "Node node-1:\n"
            "  INDEX  UUID    MODEL  MEM(GiB)  NUMA  LINK GROUP  HEALTH  SHARING  TASK\n"
            "  0      GPU-b0  T4     16        -     -           ok      -        -\n"
            "  1      GPU-b1  T4     16        -     -           ok      -        -\n");
  EXPECT_EQ(err_.str(), "");

  // --json is the reply as it came; devices only when asked for.
  ASSERT_EQ(Run({"nodes", "--json"}), kExitOk);
  EXPECT_EQ(nlohmann::json::parse(out_.str())["nodes"][0].count("devices") == 0 ||
                nlohmann::json::parse(out_.str())["nodes"][0]["devices"].empty(),
            true)
      << out_.str();
  ASSERT_EQ(Run({"nodes", "--devices", "--json"}), kExitOk);
  const std::string json = out_.str();
  auto parsed = nlohmann::json::parse(json);
  EXPECT_EQ(parsed["nodes"][0]["devices"][6]["link_group"], 1);
  EXPECT_EQ(parsed["nodes"][1]["devices"][0]["link_group"], -1);
}

TEST_F(NodeDevicesCliTest, ShowNodeWithTwoLinkGroups) {
  ASSERT_EQ(Run({"node", "show", "node-0"}), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_EQ(text.rfind("Node node-0\n  State:      Ready\n", 0), 0u) << text;
  EXPECT_NE(text.find("  Labels:     rack=r1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  GPUs:       1/8 used\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nNUMA nodes:\n"
                      "  ID  CPUS  MEM(GiB)  GPUS\n"
                      "  0   32    256       0-3\n"
                      "  1   32    256       4-7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  2      GPU-20000000-aaaa-bbbb-cccc-dddddddddddd  A100   40        0     0           ok      -        7.1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.substr(text.find("\nNVLink groups:")),
            "\nNVLink groups:\n  group 0: GPUs 0-3 (NVLink)\n  group 1: GPUs 4-7 (NVLink)\n");
  EXPECT_EQ(err_.str(), "");
  EXPECT_TRUE(cluster_->node_updates.empty());  // showing changes nothing
}

TEST_F(NodeDevicesCliTest, ShowNodeWithoutLinks) {
  ASSERT_EQ(Run({"node", "show", "node-1"}), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_NE(text.find("\nNUMA nodes: none reported\n"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.find("\nNVLink groups:")), "\nNVLink groups:\n  no NVLink: GPUs 0-1\n");
}

TEST_F(NodeDevicesCliTest, ShowNodeAsJson) {
  ASSERT_EQ(Run({"node", "show", "node-0", "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["name"], "node-0");
  ASSERT_EQ(json["devices"].size(), 8u);
  EXPECT_EQ(json["devices"][2]["task"], "7.1");
  EXPECT_EQ(json["devices"][3]["link_group"], 0);
  EXPECT_EQ(json["devices"][4]["link_group"], 1);
  EXPECT_EQ(json["numa"][0]["gpus"], (nlohmann::json{0, 1, 2, 3}));
  // Global flags go before the command too.
  ASSERT_EQ(Run({"--json", "node", "show", "node-1"}), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["name"], "node-1");
}

TEST_F(NodeDevicesCliTest, ShowUnknownNodeIsNotFound) {
  EXPECT_EQ(Run({"node", "show", "node-9"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: node node-9 is not registered\n");
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(Run({"node", "show", "node-9", "--json"}), kExitNotFound);
  EXPECT_EQ(out_.str(), "");

  cluster_->fail_next = Status::Unavailable("coordinator at tcp://x:1 did not answer within 5 ms");
  EXPECT_EQ(Run({"node", "show", "node-0"}), kExitUnavailable);
  EXPECT_EQ(out_.str(), "");
}

TEST_F(NodeDevicesCliTest, HelpNamesTheNewForms) {
  ASSERT_EQ(Run({"--help"}), kExitOk);
  EXPECT_NE(out_.str().find("  nodes [--devices]  "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("  node show NAME  "), std::string::npos) << out_.str();
  ASSERT_EQ(Run({"help", "nodes"}), kExitOk);
  EXPECT_NE(out_.str().find("--devices"), std::string::npos) << out_.str();
}

TEST_F(NodeCliTest, BadLabelsAndPoolsAreRejectedBeforeSending) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string long_key(64, 'k');
  const std::string long_value(64, 'v');
  const std::vector<Case> cases = {
      {{"team"}, "node label: 'team' is neither KEY=VALUE (set a label) nor KEY- (remove one)"},
      {{"a=1", "team"}, "node label: 'team' is neither KEY=VALUE (set a label) nor KEY- (remove one)"},
      {{""}, "node label: '' is neither KEY=VALUE (set a label) nor KEY- (remove one)"},
      {{"=vision"}, "node label: '=vision': the label key is empty"},
      {{"="}, "node label: '=': the label key is empty"},
      {{"-"}, "node label: '-': the label key is empty"},
      {{long_key + "=v"}, "node label: label key '" + long_key + "' is longer than 63 characters"},
      {{long_key + "-"}, "node label: label key '" + long_key + "' is longer than 63 characters"},
      {{"te am=x"}, "node label: label key 'te am' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"team:x=1"}, "node label: label key 'team:x' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"t\xc3\xa9" "am=1"},
       "node label: label key 't\xc3\xa9" "am' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"te*m-"}, "node label: label key 'te*m' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"team=" + long_value}, "node label: the value of team is longer than 63 characters"},
      {{"team=a/b"}, "node label: the value of team ('a/b') may only contain letters, digits, '.', '_' and '-'"},
      {{"team=a b"}, "node label: the value of team ('a b') may only contain letters, digits, '.', '_' and '-'"},
      {{"team=a=b"}, "node label: the value of team ('a=b') may only contain letters, digits, '.', '_' and '-'"},
      {{"team=vision", "team-"}, "node label: team is both set and removed"},
      {{"team-", "team=vision"}, "node label: team is both set and removed"},
      {{"team=vision", "team=nlp"}, "node label: team is set twice ('vision' and 'nlp')"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"node", "label", "node-0"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ExpectRejected(args, c.message, /*usage_hint=*/false);
  }
  ExpectRejected({"node", "label", "node-0", "-x=1"},
                 "node: '-x=1' is not a flag, and a label key cannot start with '-'", false);
  ExpectRejected({"node", "label", "node-0", "--team-"},
                 "node: '--team-' is not a flag, and a label key cannot start with '-'", false);
  ExpectRejected({"node", "pool", "node-0", "shared"},
                 "node pool: unknown pool 'shared'; expected public, pooled or exclusive", false);
  ExpectRejected({"node", "pool", "node-0", "Public"},
                 "node pool: unknown pool 'Public'; expected public, pooled or exclusive", false);
  ExpectRejected({"node", "pool", "node-0", ""}, "node pool: unknown pool ''; expected public, pooled or exclusive",
                 false);
  // The node name follows the coordinator's rules (protocol/validate.h).
  ExpectRejected({"node", "cordon", ""}, "node: must not be empty", false);
  ExpectRejected({"node", "cordon", "node/0"}, "node: 'node/0' may only contain letters, digits, '-', '_' and '.'",
                 false);
  EXPECT_EQ(Node(0).labels, (std::map<std::string, std::string>{{"rack", "r1"}, {"old", "x"}}));
}

TEST_F(NodeCliTest, TaintSetsAndRemovesAndPrintsAllTaintsSorted) {
  ASSERT_EQ(Run({"node", "taint", "node-0", "maint=", "dedicated=ml"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 taints: dedicated=ml, maint=\n");
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(cluster_->node_updates.size(), 1u);
  const UpdateNode& request = cluster_->node_updates[0];
  EXPECT_EQ(request.node, "node-0");
  EXPECT_EQ(request.op, "taint");
  EXPECT_EQ(request.taints, (std::map<std::string, std::string>{{"dedicated", "ml"}, {"maint", ""}}));
  EXPECT_TRUE(request.remove_taints.empty());
  EXPECT_TRUE(request.labels.empty());
  EXPECT_TRUE(request.remove_labels.empty());
  EXPECT_EQ(Node(0).labels, (std::map<std::string, std::string>{{"rack", "r1"}, {"old", "x"}}));  // untouched

  // `nodes` shows them in their own column.
  ASSERT_EQ(Run({"nodes"}), kExitOk);
  EXPECT_NE(out_.str().find("  dedicated=ml,maint=  old=x,rack=r1\n"), std::string::npos) << out_.str();

  ASSERT_EQ(Run({"node", "taint", "node-0", "maint-", "dedicated=gpu", "nothere-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 taints: dedicated=gpu\n");
  EXPECT_EQ(cluster_->node_updates.back().remove_taints, (std::vector<std::string>{"maint", "nothere"}));

  ASSERT_EQ(Run({"node", "taint", "node-0", "dedicated-", "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["node"]["name"], "node-0");
  EXPECT_TRUE(!json["node"].contains("taints") || json["node"]["taints"].empty()) << out_.str();
  ASSERT_EQ(Run({"node", "taint", "node-0", "x-"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "node node-0 taints: none\n");
  EXPECT_TRUE(Node(0).taints.empty());

  EXPECT_EQ(Run({"node", "taint", "node-9", "maint="}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: node node-9 is not registered\n");
}

TEST_F(NodeCliTest, BadTaintsAreRejectedBeforeSending) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"maint"}, "node taint: 'maint' is neither KEY=VALUE (set a taint) nor KEY- (remove one)"},
      {{"=ml"}, "node taint: '=ml': the taint key is empty"},
      {{"a b=1"}, "node taint: taint key 'a b' may only contain letters, digits, '.', '_', '/' and '-'"},
      {{"k=a/b"}, "node taint: the value of k ('a/b') may only contain letters, digits, '.', '_' and '-'"},
      {{"k=1", "k-"}, "node taint: k is both set and removed"},
      {{"k=1", "k=2"}, "node taint: k is set twice ('1' and '2')"},
  };
  for (const auto& [taints, message] : cases) {
    std::vector<std::string> args = {"node", "taint", "node-0"};
    args.insert(args.end(), taints.begin(), taints.end());
    ExpectRejected(args, message, /*usage_hint=*/false);
  }
  ExpectRejected({"node", "taint", "node-0", "-k=1"},
                 "node: '-k=1' is not a flag, and a label key cannot start with '-'", false);
  ExpectRejected({"node", "taint"},
                 "node taint: missing the node NAME (usage: gpool node taint NAME KEY=VALUE... KEY-...)", true);
  ExpectRejected({"node", "taint", "node-0"},
                 "node taint: expected at least one KEY=VALUE (set) or KEY- (remove) (usage: gpool node taint NAME "
                 "KEY=VALUE... KEY-...)",
                 true);
  EXPECT_TRUE(Node(0).taints.empty());
}

TEST_F(NodeCliTest, Help) {
  ASSERT_EQ(Run({"help", "node"}), kExitOk);
  const std::string help = out_.str();
  for (const char* form : {"  gpool node cordon NAME\n", "  gpool node uncordon NAME\n",
                           "  gpool node label NAME KEY=VALUE... KEY-...\n",
                           "  gpool node pool NAME public|pooled|exclusive\n",
                           "  gpool node taint NAME KEY=VALUE... KEY-...\n"}) {
    EXPECT_NE(help.find(form), std::string::npos) << form << help;
  }
  ASSERT_EQ(Run({"node", "label", "--help"}), kExitOk);
  EXPECT_EQ(out_.str(), help);
  ASSERT_EQ(Run({"--help"}), kExitOk);
  for (const char* line : {"\n  node cordon NAME  ", "\n  node uncordon NAME  ", "\n  node label NAME KEY=VALUE... KEY-...  ",
                           "\n  node pool NAME POOL  "}) {
    EXPECT_NE(out_.str().find(line), std::string::npos) << line << out_.str();
  }
  EXPECT_EQ(clients_made_, 0);
}

TEST(ExitCodeTest, MapsStatusCodes) {
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFor(Status::InvalidArgument("")), 2);
  EXPECT_EQ(ExitCodeFor(Status::NotFound("")), 3);
  EXPECT_EQ(ExitCodeFor(Status::Unavailable("")), 4);
  EXPECT_EQ(ExitCodeFor(Status::DeadlineExceeded("")), 4);
  EXPECT_EQ(ExitCodeFor(Status::NotLeader("")), 4);
  EXPECT_EQ(ExitCodeFor(Status::FailedPrecondition("")), 5);
  EXPECT_EQ(ExitCodeFor(Status::AlreadyExists("")), 5);
  EXPECT_EQ(ExitCodeFor(Status::Internal("")), 5);
}

TEST(WaitTimeoutTest, Parses) {
  EXPECT_EQ(*ParseWaitTimeout("90"), 90'000);
  EXPECT_EQ(*ParseWaitTimeout("90s"), 90'000);
  EXPECT_EQ(*ParseWaitTimeout("5m"), 300'000);
  EXPECT_EQ(*ParseWaitTimeout("2h"), 7'200'000);
  EXPECT_EQ(*ParseWaitTimeout("0"), 0);
  for (const char* bad : {"", "s", "-1", "1.5m", "1d", "x"}) EXPECT_FALSE(ParseWaitTimeout(bad).ok()) << bad;
}

}  // namespace
}  // namespace gpool
