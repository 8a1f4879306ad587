// `gpool exec` and `gpool exec-rsh` against the FakeCluster: streaming, the
// command's exit code as the CLI's, signals forwarded, typed errors, and
// which credential and job scope a call inside a task uses.
#include <signal.h>

#include "client/cli_test_fixture.h"
#include "protocol/messages_exec.h"

namespace gpool::client::testing {
namespace {

ExecPollReply Output(std::string out, std::string err = {}) {
  ExecPollReply reply;
  reply.stdout_data.assign(out);
  reply.stderr_data.assign(err);
  return reply;
}

ExecPollReply Exited(int32_t code, int32_t signal = 0, std::string message = {}) {
  ExecPollReply reply;
  reply.exited = true;
  reply.exit_code = code;
  reply.signal = signal;
  reply.message = std::move(message);
  return reply;
}

TEST_F(CliTest, ExecStreamsOutputAndExitsWithTheCommandsCode) {
  cluster_->exec_polls = {Output("hello "), ExecPollReply{}, Output("world\n", "warn\n"), Exited(3)};
  EXPECT_EQ(Run({"exec", "train-worker-1", "--", "sh", "-c", "echo hi; exit 3"}), 3) << err_.str();
  EXPECT_EQ(out_.str(), "hello world\n");
  EXPECT_EQ(err_.str(), "warn\n");
  ASSERT_EQ(cluster_->exec_starts.size(), 1u);
  EXPECT_EQ(cluster_->exec_starts[0].task, "train-worker-1");
  EXPECT_EQ(cluster_->exec_starts[0].job_id, 0u);
  EXPECT_EQ(cluster_->exec_starts[0].command, (std::vector<std::string>{"sh", "-c", "echo hi; exit 3"}));
  EXPECT_EQ(cluster_->exec_starts[0].key.size(), 32u) << "a retry of the start is the same command";
  // Each poll asks from what it already has; an empty one waits a moment.
  ASSERT_EQ(cluster_->exec_poll_requests.size(), 4u);
  EXPECT_EQ(cluster_->exec_poll_requests[1].stdout_offset, 6u);
  EXPECT_EQ(cluster_->exec_poll_requests[3].stdout_offset, 12u);
  EXPECT_EQ(cluster_->exec_poll_requests[3].stderr_offset, 5u);
  EXPECT_EQ(cluster_->exec_poll_requests[3].exec_id, 7u);
  EXPECT_EQ(sleeps_.size(), 1u);

  cluster_->exec_poll_requests.clear();
  cluster_->exec_polls = {Exited(0)};
  EXPECT_EQ(Run({"exec", "17.2", "--", "true"}), 0);
}

TEST_F(CliTest, ExecOfAKilledCommandExitsAs128PlusTheSignalAndSaysWhy) {
  cluster_->exec_polls = {Exited(137, SIGKILL, "the task ended")};
  EXPECT_EQ(Run({"exec", "t-w-0", "--", "sleep", "9"}), 128 + SIGKILL);
  EXPECT_EQ(err_.str(), "gpool: the command was ended: the task ended\n");
}

TEST_F(CliTest, ExecErrorsAreTypedAndStartNothingWhenTheCallIsBad) {
  EXPECT_EQ(Run({"exec", "t-w-0"}), kExitUsage);
  EXPECT_NE(err_.str().find("give the command after '--'"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"exec", "--", "true"}), kExitUsage) << "no task";
  EXPECT_EQ(Run({"exec", "t-w-0", "--", ""}), kExitUsage);
  EXPECT_EQ(err_.str(), "gpool: InvalidArgument: command: empty\n");
  EXPECT_TRUE(cluster_->exec_starts.empty());

  cluster_->exec_start_error = Status::NotFound("no unfinished job has a task named t-w-0");
  EXPECT_EQ(Run({"exec", "t-w-0", "--", "true"}), kExitNotFound);
  EXPECT_EQ(err_.str(), "gpool: NotFound: no unfinished job has a task named t-w-0\n");
  cluster_->exec_start_error = Status::FailedPrecondition("task t-w-0 (1.0) is Pending, not Running");
  EXPECT_EQ(Run({"exec", "t-w-0", "--", "true"}), kExitError);
  cluster_->exec_start_error = Status::Unauthenticated("wrong or missing token");
  EXPECT_EQ(Run({"exec", "t-w-0", "--", "true"}), kExitError);
  EXPECT_TRUE(cluster_->exec_poll_requests.empty());
  // A poll that fails (the worker restarted and forgot it) ends the CLI with its error.
  cluster_->exec_start_error.reset();
  cluster_->exec_polls.clear();
  EXPECT_EQ(Run({"exec", "t-w-0", "--", "true"}), kExitNotFound);
}

TEST_F(CliTest, ExecForwardsSignalsAndASecondInterruptKills) {
  std::vector<int> pending = {SIGINT, 0, SIGINT, 0, SIGTERM};
  int watched = 0;
  env_.watch_signals = [&] { ++watched; };
  env_.take_signal = [&] {
    if (pending.empty()) return 0;
    int signal = pending.front();
    pending.erase(pending.begin());
    return signal;
  };
  cluster_->exec_polls = {ExecPollReply{}, ExecPollReply{}, ExecPollReply{}, ExecPollReply{}, ExecPollReply{},
                          Exited(130, SIGINT)};
  EXPECT_EQ(Run({"exec", "t-w-0", "--", "sleep", "60"}), 128 + SIGINT);
  EXPECT_EQ(watched, 1);
  ASSERT_EQ(cluster_->exec_signals.size(), 3u);
  EXPECT_EQ(cluster_->exec_signals[0].signal, SIGINT);
  EXPECT_EQ(cluster_->exec_signals[1].signal, SIGKILL);
  EXPECT_EQ(cluster_->exec_signals[2].signal, SIGTERM);
  EXPECT_EQ(cluster_->exec_signals[0].exec_id, 7u);
  EXPECT_EQ(cluster_->exec_signals[0].task, "t-w-0");
}

// The task's own exec token (issue 48: derived for that task, opaque to the CLI).
TEST_F(CliTest, InsideATaskExecUsesTheTasksExecTokenAndScopesNamesToItsJob) {
  environment_ = {{"GPOOL_TOKEN", "cluster"}, {"GPOOL_EXEC_TOKEN", "task-token"}, {"GPOOL_JOB_ID", "12"}};
  cluster_->exec_polls = {Exited(0)};
  EXPECT_EQ(Run({"exec", "mpi-w-1", "--", "true"}), 0) << err_.str();
  EXPECT_EQ(options_.token, "task-token");
  EXPECT_EQ(cluster_->exec_starts.back().job_id, 12u);
  // An explicit --token wins, and then names are not scoped.
  EXPECT_EQ(Run({"--token", "mine", "exec", "mpi-w-1", "--", "true"}), 0);
  EXPECT_EQ(options_.token, "mine");
  EXPECT_EQ(cluster_->exec_starts.back().job_id, 0u);
}

TEST_F(CliTest, ExecRshRunsTheWordsAsOneShellLineInTheNamedTask) {
  environment_ = {{"GPOOL_EXEC_TOKEN", "task-token"}, {"GPOOL_JOB_ID", "12"}};
  cluster_->exec_polls = {Output("ok\n"), Exited(0)};
  // As Open MPI calls its agent: HOST, then orted's words, flags and quotes included.
  EXPECT_EQ(Run({"exec-rsh", "mpi-w-3", "orted", "-mca", "ess", "\"env\"", "--tree-spawn"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "ok\n");
  ASSERT_EQ(cluster_->exec_starts.size(), 1u);
  const gpool::ExecStart& start = cluster_->exec_starts[0];
  EXPECT_EQ(start.task, "mpi-w-3");
  EXPECT_EQ(start.job_id, 12u);
  EXPECT_EQ(options_.token, "task-token");
  ASSERT_EQ(start.command.size(), 3u);
  EXPECT_EQ(start.command[0], "/bin/sh");
  EXPECT_EQ(start.command[1], "-c");
  EXPECT_NE(start.command[2].find("; orted -mca ess \"env\" --tree-spawn; "), std::string::npos) << start.command[2];
  EXPECT_NE(start.command[2].find("OMPI_MCA_orte_tmpdir_base"), std::string::npos);

  // ssh's own options before HOST (as Hydra passes them) are skipped.
  EXPECT_EQ(Run({"exec-rsh", "-x", "-o", "BatchMode=yes", "mpi-w-2", "hydra_pmi_proxy", "--control-port", "1"}), 0);
  EXPECT_EQ(cluster_->exec_starts.back().task, "mpi-w-2");
  EXPECT_NE(cluster_->exec_starts.back().command[2].find("; hydra_pmi_proxy --control-port 1; "), std::string::npos);
  EXPECT_EQ(Run({"exec-rsh", "mpi-w-2"}), kExitUsage);
  EXPECT_EQ(Run({"exec-rsh", "-x"}), kExitUsage);
}

}  // namespace
}  // namespace gpool::client::testing
