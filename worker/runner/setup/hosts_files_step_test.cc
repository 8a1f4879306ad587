// HostsFilesStep: a gang with names gets its job's hosts file, its hostfile
// by name and MPI's variables; one with a host list gets an MPI hostfile; a
// file that cannot be written is logged and the task starts without it; the
// job's hosts file goes only with the job's last record.
#include "worker/runner/setup/hosts_files_step.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "worker/runner/job_hosts.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

namespace fs = std::filesystem;
using testing::HasEnv;

class HostsFilesStepTest : public ::testing::Test {
 protected:
  HostsFilesStepOptions Options(bool private_hosts = false) {
    HostsFilesStepOptions options;
    options.state_root = dir_.path();
    options.etc_hosts = dir_.Write("etc-hosts", "127.0.0.1 localhost\n");
    options.rsh_agent = "/usr/bin/gpool-rsh";
    options.private_hosts = private_hosts;
    options.resolver = &resolver_;
    return options;
  }
  static BindTask GangBind(uint32_t index) {
    BindTask bind;
    bind.task = TaskId{JobId(4), index, 0};
    bind.command = {"true"};
    bind.task_hosts = {{"w-0", "node-a", 1, "10.0.0.1"}, {"w-1", "node-b", 1, ""}};
    return bind;
  }

  FakeClock clock_;
  HostResolver resolver_{HostResolverOptions{
      .resolve = [](const std::string& host) { return host == "node-b" ? std::string("10.0.0.2") : std::string(); },
      .clock = &clock_,
      .threads = 0}};
  testing::TempDir dir_;
  testing::CapturedLog log_;
  TaskSetupRecord record_;
};

TEST_F(HostsFilesStepTest, AGangWithNamesGetsItsJobsHostsFileAndMpisVariables) {
  resolver_.Lookup("node-b");  // what the TaskManager's wait for names did
  HostsFilesStep step(Options(/*private_hosts=*/true), log_.logger());
  BindTask bind = GangBind(0);
  TaskSetupContext ctx(bind.task, bind, record_);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  const std::string hosts = JobHostsPath(dir_.path(), bind.task);
  const std::string hostfile = TaskHostfilePath(dir_.path(), bind.task);
  const std::string content = testing::ReadFile(hosts);
  EXPECT_EQ(content.rfind("127.0.0.1 localhost\n", 0), 0u) << content;
  EXPECT_NE(content.find("10.0.0.1"), std::string::npos) << content;
  EXPECT_NE(content.find("10.0.0.2"), std::string::npos) << content;
  EXPECT_TRUE(fs::exists(hostfile));
  EXPECT_TRUE(HasEnv(ctx.request, "GPOOL_HOSTS_FILE=" + hosts));
  EXPECT_TRUE(HasEnv(ctx.request, "GPOOL_HOSTFILE=" + hostfile));
  EXPECT_TRUE(std::is_sorted(ctx.request.env.begin(), ctx.request.env.end()));
  EXPECT_EQ(ctx.request.hosts_file, hosts);

  step.Undo(ctx);  // the job's other tasks may still need it
  EXPECT_TRUE(fs::exists(hosts));
  step.Remove(bind.task, /*job_gone=*/false);
  EXPECT_FALSE(fs::exists(hostfile));
  EXPECT_TRUE(fs::exists(hosts));
  step.Remove(bind.task, /*job_gone=*/true);
  EXPECT_FALSE(fs::exists(hosts));
}

TEST_F(HostsFilesStepTest, WithoutARootWorkerNamesComeThroughTheVariableOnly) {
  HostsFilesStep step(Options(), log_.logger());
  BindTask bind = GangBind(1);
  bind.task_hosts[1].host = "node-gone";  // the resolver answers nothing for it
  TaskSetupContext ctx(bind.task, bind, record_);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_TRUE(ctx.request.hosts_file.empty());
  EXPECT_TRUE(log_.Contains("task resolves its gang's names through GPOOL_HOSTS_FILE only"));
  EXPECT_TRUE(log_.Contains("task names whose node does not resolve have no hosts line task=4.1 "));
  EXPECT_EQ(testing::ReadFile(JobHostsPath(dir_.path(), bind.task)).find("node-gone"), std::string::npos);
}

TEST_F(HostsFilesStepTest, AHostListGetsAnMpiHostfileAndAMalformedOneNone) {
  HostsFilesStep step(Options(), log_.logger());
  BindTask bind = testing::OneGpuBind(5);
  bind.hosts = {HostSlots{"node-a", 4}, HostSlots{"node-b", 2}};
  TaskSetupContext ctx(bind.task, bind, record_);
  ctx.request.env = {"GPOOL_HOSTFILE=/stale"};
  ASSERT_TRUE(step.Prepare(ctx).ok());
  const std::string hostfile = TaskHostfilePath(dir_.path(), bind.task);
  EXPECT_EQ(testing::ReadFile(hostfile), "node-a slots=4\nnode-b slots=2\n");
  EXPECT_EQ(ctx.request.env, std::vector<std::string>{"GPOOL_HOSTFILE=" + hostfile});

  BindTask bad = testing::OneGpuBind(6);
  bad.hosts = {HostSlots{"node a", 1}};
  TaskSetupContext bad_ctx(bad.task, bad, record_);
  ASSERT_TRUE(step.Prepare(bad_ctx).ok()) << "the task starts without it";
  EXPECT_TRUE(bad_ctx.request.env.empty());
  EXPECT_TRUE(log_.Contains("the bind's host list is malformed; no hostfile written task=6.0 "));
}

TEST_F(HostsFilesStepTest, AFileThatCannotBeWrittenIsLoggedAndTheTaskStarts) {
  HostsFilesStepOptions options = Options();
  options.state_root = dir_.path() + "/missing";
  HostsFilesStep step(options, log_.logger());
  BindTask bind = GangBind(0);
  TaskSetupContext ctx(bind.task, bind, record_);
  ASSERT_TRUE(step.Prepare(ctx).ok());
  EXPECT_TRUE(ctx.request.env.empty());
  EXPECT_TRUE(log_.Contains("cannot write the job's hosts file or hostfile task=4.0 "));
}

}  // namespace
}  // namespace gpool::worker
