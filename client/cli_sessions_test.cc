// `gpool session`: what it asks the coordinator for, what it prints, and its
// refusals, against a FakeCluster (the end-to-end run of a program through a
// session is tests/session_test.cc).
#include <sys/stat.h>

#include <filesystem>

#include "client/cli_test_fixture.h"
#include "protocol/messages_client.h"
#include "protocol/security/keys.h"

namespace gpool::client::testing {
namespace {

class SessionCliTest : public CliTest {
 protected:
  void SetUp() override {
    config_ = ::testing::TempDir() + "/gpool-session-cli-" + std::to_string(getpid());
    std::filesystem::remove_all(config_);
    environment_["XDG_CONFIG_HOME"] = config_;
  }
  void TearDown() override { std::filesystem::remove_all(config_); }

  // A session job as the coordinator would list it.
  uint64_t AddSession(const std::string& state, const std::string& reason = "") {
    const JobState job_state = state == "Queued" ? JobState::kPending
                               : state == "Open"  ? JobState::kRunning
                                                  : JobState::kCancelled;
    const uint64_t id = AddJob("session", job_state);
    GetJobReply& job = cluster_->jobs.at(id);
    job.spec.session.enabled = true;
    job.spec.tasks.resize(1);
    job.spec.tasks[0].resources.gpus = 1;
    job.summary.gpus = 1;
    job.summary.session.state = state;
    job.summary.session.reason = reason;
    job.summary.session.lease_ms = 900'000;
    job.summary.session.idle_timeout_ms = 900'000;
    if (state == "Open") {
      job.summary.session.node = "gpu-7";
      job.summary.session.endpoint = "tcp://10.0.0.7:41000";
      job.summary.session.server_key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
      job.summary.session.gpu_ms = 90'500;
    }
    return id;
  }

  std::string config_;
};

TEST_F(SessionCliTest, ListShowsSessionsOnlyWithTheirEndpointOrReason) {
  AddJob("train", JobState::kRunning);
  const uint64_t open = AddSession("Open");
  const uint64_t queued = AddSession("Queued", "queue 'team' is at its capability for gpu");
  const uint64_t closed = AddSession("Closed", "closed by its owner");
  ASSERT_EQ(Run({"session", "list"}), kExitOk) << err_.str();
  const std::string out = out_.str();
  EXPECT_EQ(out.find("train"), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(open)), std::string::npos) << out;
  EXPECT_NE(out.find("tcp://10.0.0.7:41000"), std::string::npos) << out;
  EXPECT_NE(out.find("90.5"), std::string::npos) << "GPU-seconds: " << out;
  EXPECT_NE(out.find(std::to_string(queued)), std::string::npos) << out;
  EXPECT_NE(out.find("queue 'team' is at its capability for gpu"), std::string::npos) << out;
  EXPECT_EQ(out.find("closed by its owner"), std::string::npos) << "ended: only with --all\n" << out;
  ASSERT_FALSE(cluster_->list_jobs_requests.empty());
  EXPECT_TRUE(cluster_->list_jobs_requests.back().sessions_only);
  ASSERT_EQ(Run({"session", "list", "--all"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("closed by its owner"), std::string::npos) << out_.str();
  (void)closed;
}

TEST_F(SessionCliTest, OpenAsksForASessionAndWaitsUntilItIsOpen) {
  // The coordinator opens it on the second look.
  int looks = 0;
  cluster_->on_get_job = [&](FakeCluster& cluster, uint64_t id) {
    SessionInfo& session = cluster.jobs.at(id).summary.session;
    session.lease_ms = 60'000;
    if (++looks < 2) {
      session.state = "Queued";
      session.reason = "waiting for the next scheduling cycle";
      return;
    }
    session.state = "Open";
    session.node = "gpu-1";
    session.endpoint = "tcp://10.0.0.1:40000";
  };
  ASSERT_EQ(Run({"session", "open", "--gpu-memory", "20Gi", "--gpu-compute", "30", "--ttl", "2h",
                 "--idle-timeout", "5m", "--near-switch", "leaf-3", "--class", "low", "--queue", "research"}),
            kExitOk)
      << err_.str();
  ASSERT_EQ(cluster_->submits.size(), 1u);
  const JobSpec& spec = cluster_->submits[0].spec;
  EXPECT_TRUE(spec.session.enabled);
  EXPECT_EQ(spec.session.idle_timeout_ms, 300'000u);
  EXPECT_EQ(spec.max_runtime_ms, 7'200'000u);
  EXPECT_EQ(spec.restart.policy, "never");
  EXPECT_EQ(spec.priority_class, "low");
  EXPECT_EQ(spec.queue, "research");
  EXPECT_EQ(spec.prefer_labels.at("topology.gpool.io/tier1"), "leaf-3");
  ASSERT_EQ(spec.tasks.size(), 1u);
  EXPECT_EQ(spec.tasks[0].resources.gpus, 1u);
  EXPECT_EQ(spec.tasks[0].resources.gpu_memory_mib, 20u * 1024);
  EXPECT_EQ(spec.tasks[0].resources.gpu_compute_pct, 30u);
  EXPECT_NE(err_.str().find("Queued: waiting for the next scheduling cycle"), std::string::npos) << err_.str();
  EXPECT_NE(out_.str().find("Open on node gpu-1 at tcp://10.0.0.1:40000"), std::string::npos) << out_.str();
  // Insecure: the key pair drawn for it is kept (0600) where `run` finds it,
  // and the coordinator got its public half.
  const uint64_t id = cluster_->jobs.rbegin()->first;
  const std::string key = config_ + "/gpool/sessions/" + std::to_string(id) + ".key";
  auto pair = security::ReadSecretKeyFile(key);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_EQ(pair->public_key, spec.session.owner_key);
  struct stat st {};
  ASSERT_EQ(stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(SessionCliTest, ASessionThatDoesNotOpenInTimeIsReportedWithItsReason) {
  cluster_->on_get_job = [](FakeCluster& cluster, uint64_t id) {
    cluster.jobs.at(id).summary.session = SessionInfo{"Queued", "insufficient GPUs on every node"};
  };
  EXPECT_EQ(Run({"session", "open", "--gpus", "2", "--wait", "1s"}), kExitUnavailable);
  EXPECT_NE(err_.str().find("insufficient GPUs on every node"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("is still Queued"), std::string::npos) << err_.str();
  EXPECT_TRUE(cluster_->cancels.empty()) << "a plain open stays queued";
}

TEST_F(SessionCliTest, AOneShotSessionThatFailsIsGivenBackAndSaysWhy) {
  cluster_->on_get_job = [](FakeCluster& cluster, uint64_t id) {
    cluster.jobs.at(id).summary.session = SessionInfo{"Failed", "lost with node gpu-3"};
  };
  EXPECT_EQ(Run({"session", "open", "--gpus", "1", "--", "python3", "eval.py"}), kExitError);
  EXPECT_NE(err_.str().find("Failed: lost with node gpu-3"), std::string::npos) << err_.str();
  ASSERT_EQ(cluster_->cancels.size(), 1u);
}

TEST_F(SessionCliTest, CloseRenewAndShow) {
  const uint64_t open = AddSession("Open");
  const uint64_t plain = AddJob("train", JobState::kRunning);
  ASSERT_EQ(Run({"session", "renew", std::to_string(open)}), kExitOk) << err_.str();
  EXPECT_EQ(cluster_->renewals[open], 1);
  EXPECT_EQ(Run({"session", "renew", std::to_string(plain)}), kExitNotFound);
  ASSERT_EQ(Run({"session", "show", std::to_string(open)}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("server key:   rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"), std::string::npos) << out_.str();
  EXPECT_EQ(Run({"session", "show", std::to_string(plain)}), kExitNotFound);
  ASSERT_EQ(Run({"session", "close", std::to_string(open), "--grace", "5s"}), kExitOk) << err_.str();
  ASSERT_EQ(cluster_->cancels.size(), 1u);
  EXPECT_EQ(cluster_->cancels[0].job_id, open);
  EXPECT_EQ(cluster_->cancels[0].grace_ms, 5000u);
}

TEST_F(SessionCliTest, RunNeedsAnOpenSessionAndACommand) {
  const uint64_t queued = AddSession("Queued", "insufficient GPUs");
  EXPECT_EQ(Run({"session", "run", std::to_string(queued), "--", "true"}), kExitError);
  EXPECT_NE(err_.str().find("is Queued: insufficient GPUs"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"session", "run", std::to_string(queued)}), kExitUsage);
}

TEST_F(SessionCliTest, BadArgumentsAreUsageErrors) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"session"},
                                             {"session", "bogus", "1"},
                                             {"session", "show", "x"},
                                             {"session", "show", "0"},
                                             {"session", "list", "--", "ls"},
                                             {"session", "open", "--idle-timeout", "soon"},
                                             {"session", "open", "--gpus", "many"},
                                             {"session", "open", "--near-switch", "bad value!"}}) {
    SCOPED_TRACE(::testing::PrintToString(args));
    EXPECT_EQ(Run(args), kExitUsage) << err_.str();
  }
  EXPECT_TRUE(cluster_->submits.empty());
}

}  // namespace
}  // namespace gpool::client::testing
