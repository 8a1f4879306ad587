// Stable task names on the worker (job_hosts.h): the hosts file, the MPI
// hostfile by name, MPI's variables, and what a gang task's start gets.
#include "worker/runner/job_hosts.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "protocol/wire.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

using testing::HasEnv;

std::vector<TaskHost> Gang() {
  return {{"mpi-w-0", "node-a", 2}, {"mpi-w-1", "node-a", 2}, {"mpi-w-2", "10.0.0.7", 1}, {"mpi-w-3", "gone", 1}};
}

// Task `index` of job 4, a gang of Gang(), placed on node-a.
BindTask GangTask(uint32_t index) {
  BindTask bind;
  bind.task = TaskId{JobId(4), index, 0};
  bind.command = {"true"};
  bind.task_hosts = Gang();
  bind.hosts = {HostSlots{"node-a", 4}};
  return bind;
}

TEST(JobHostsTest, HostsFileKeepsTheNodesEntriesAndAddsOneLinePerResolvableTask) {
  int lookups = 0;
  auto resolve = [&](const std::string& host) -> std::string {
    ++lookups;
    return host == "node-a" ? "10.0.0.5" : host == "gone" ? "" : host;
  };
  std::vector<std::string> unresolved;
  const std::string hosts = JobHostsFile("127.0.0.1 localhost", Gang(), resolve, &unresolved);
  EXPECT_EQ(hosts,
            "127.0.0.1 localhost\n"
            "# gpool: the job's tasks by stable name\n"
            "10.0.0.5 mpi-w-0\n"
            "10.0.0.5 mpi-w-1\n"
            "10.0.0.7 mpi-w-2\n");
  EXPECT_EQ(unresolved, std::vector<std::string>{"mpi-w-3"});
  EXPECT_EQ(lookups, 3) << "each host is resolved once";
  EXPECT_EQ(ResolveHost("10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(ResolveHost("::1"), "::1");
  EXPECT_EQ(ResolveHost("no-such-host.invalid"), "");
}

TEST(JobHostsTest, MpiHostfileListsTasksByNameWithTheirSlots) {
  EXPECT_EQ(MpiHostfileByName(Gang()), "mpi-w-0 slots=2\nmpi-w-1 slots=2\nmpi-w-2 slots=1\nmpi-w-3 slots=1\n");
}

TEST(JobHostsTest, MpiLauncherEnvPointsMpiAtGpoolRshUnlessTheJobSaysOtherwise) {
  auto env = MpiLauncherEnv("/data/tasks/gpool-rsh", "/data/tasks/1.0.0.hostfile", {"HYDRA_LAUNCHER=fork", "A=b"});
  EXPECT_EQ(env.at("OMPI_MCA_plm_rsh_agent"), "/data/tasks/gpool-rsh");
  EXPECT_EQ(env.at("HYDRA_LAUNCHER_EXEC"), "/data/tasks/gpool-rsh");
  EXPECT_EQ(env.count("HYDRA_LAUNCHER"), 0u) << "the job's own setting wins";
  EXPECT_EQ(env.at("OMPI_MCA_orte_default_hostfile"), "/data/tasks/1.0.0.hostfile");
  EXPECT_EQ(env.at("OMPI_MCA_if_base_do_not_resolve"), "1");
  EXPECT_EQ(env.count("OMPI_ALLOW_RUN_AS_ROOT"), 0u) << "never forced on users";
  EXPECT_EQ(MpiLauncherEnv("", "", {}).count("OMPI_MCA_plm_rsh_agent"), 0u);
}

TEST(JobHostsTest, ABindWithBadTaskNamesIsRefusedNamingTheEntry) {
  const NodeSpec node = testing::TaskManagerNode(2);
  BindTask bind;
  bind.task = TaskId{JobId(1), 0, 0};
  bind.command = {"true"};
  bind.task_hosts = Gang();
  EXPECT_TRUE(ValidateBind(bind, node).ok());
  for (auto [name, host, slots, why] : std::vector<std::tuple<std::string, std::string, uint32_t, std::string>>{
           {"bad name", "h", 1, "task_hosts[1].name"},
           {"a..b", "h", 1, "task_hosts[1].name"},
           {std::string(64, 'a'), "h", 1, "task_hosts[1].name"},
           {"mpi-w-0", "h", 1, "appears twice"},
           {"ok", "", 1, "task_hosts[1].host"},
           {"ok", "two words", 1, "task_hosts[1].host"},
           {"ok", "h", 0, "task_hosts[1].slots"}}) {
    BindTask bad = bind;
    bad.task_hosts[1] = TaskHost{name, host, slots};
    Status status = ValidateBind(bad, node);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(status.message().find(why), std::string::npos) << status.ToString();
  }
}

TEST(JobHostsTest, BindTaskHostsSurviveTheWire) {
  BindTask bind;
  bind.task = TaskId{JobId(3), 1, 2};
  bind.command = {"true"};
  bind.task_hosts = Gang();
  auto back = wire::UnpackFromString<BindTask>(wire::PackToString(bind));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->task_hosts, Gang());
}

// A gang task's start: the job's hosts file and the hostfile by name are
// written, and the env names them and points MPI at gpool-rsh.
TEST(JobHostsTest, AGangTaskStartsWithItsJobsHostsFileAndHostfile) {
  testing::TempDir dir;
  testing::CapturedLog log;
  FakeClock clock;
  FakeProcessLauncher launcher;
  const NodeSpec node = testing::TaskManagerNode(2);
  TaskManagerOptions options = testing::TaskManagerTestOptions(node, dir, &launcher, &clock, log);
  options.rsh_agent = dir.path() + "/tasks/gpool-rsh";
  options.etc_hosts = dir.Write("etc-hosts", "127.0.0.1 localhost\n");
  options.resolve = [](const std::string& host) { return host == "gone" ? std::string() : "10.0.0.9"; };
  options.private_hosts = true;
  auto tm = TaskManager::Open(std::move(options));
  ASSERT_TRUE(tm.ok());
  const BindTask bind = GangTask(1);
  ASSERT_TRUE((*tm)->Bind(bind).ok());
  (*tm)->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  const LaunchRequest& request = launcher.launched()[0].request;
  const std::string hosts = dir.path() + "/tasks/4.hosts";
  const std::string hostfile = dir.path() + "/tasks/4.1.0.hostfile";
  EXPECT_EQ(request.hosts_file, hosts);
  EXPECT_TRUE(HasEnv(request, "GPOOL_HOSTS_FILE=" + hosts));
  EXPECT_TRUE(HasEnv(request, "GPOOL_HOSTFILE=" + hostfile));
  EXPECT_TRUE(HasEnv(request, "OMPI_MCA_plm_rsh_agent=" + dir.path() + "/tasks/gpool-rsh"));
  EXPECT_TRUE(HasEnv(request, "OMPI_MCA_orte_default_hostfile=" + hostfile));
  EXPECT_EQ(testing::ReadFile(hosts),
            "127.0.0.1 localhost\n# gpool: the job's tasks by stable name\n10.0.0.9 mpi-w-0\n10.0.0.9 mpi-w-1\n"
            "10.0.0.7 mpi-w-2\n");  // an address is its own answer: the lookup is not asked
  EXPECT_EQ(testing::ReadFile(hostfile), MpiHostfileByName(Gang()));
  EXPECT_TRUE(log.Contains("have no hosts line task=4.1 names=mpi-w-3")) << log.text();
  EXPECT_TRUE((*tm)->RunningPid(bind.task).ok());
  EXPECT_EQ((*tm)->RunningPid(TaskId{JobId(4), 0, 0}).status().code(), StatusCode::kNotFound);
}

// A TaskManager without root's private hosts, every name resolving.
struct UnprivilegedHosts {
  UnprivilegedHosts() {
    TaskManagerOptions options = testing::TaskManagerTestOptions(testing::TaskManagerNode(2), dir, &launcher, &clock, log);
    options.resolve = [](const std::string&) { return std::string("10.0.0.9"); };
    options.finished_retention_ms = 1'000;
    auto opened = TaskManager::Open(std::move(options));
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    if (opened.ok()) tm = std::move(opened).value();
  }
  testing::TempDir dir;
  testing::CapturedLog log;
  FakeClock clock;
  FakeProcessLauncher launcher;
  std::unique_ptr<TaskManager> tm;
};

TEST(JobHostsTest, WithoutRootTheHostsFileIsOnlyNamedInTheEnv) {
  UnprivilegedHosts node;
  auto& [dir, log, clock, launcher, tm] = node;
  ASSERT_NE(tm, nullptr);
  BindTask bind = GangTask(0);
  bind.hosts.clear();
  ASSERT_TRUE(tm->Bind(bind).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 1u);
  EXPECT_TRUE(launcher.launched()[0].request.hosts_file.empty());
  EXPECT_TRUE(HasEnv(launcher.launched()[0].request, "GPOOL_HOSTS_FILE=" + dir.path() + "/tasks/4.hosts"));
  EXPECT_TRUE(log.Contains("through GPOOL_HOSTS_FILE only")) << log.text();
}

// Hosts files go once nothing reads them: a task's hostfile when its exit is
// acknowledged, its job's hosts file once no task of the job here may still
// run; not with the records, minutes later.
TEST(JobHostsTest, HostsFilesAreRemovedWithTheLastTaskOfTheJob) {
  UnprivilegedHosts node;
  auto& [dir, log, clock, launcher, tm] = node;
  (void)clock;
  ASSERT_NE(tm, nullptr);
  for (uint32_t index : {0u, 1u}) ASSERT_TRUE(tm->Bind(GangTask(index)).ok());
  tm->Poll();
  ASSERT_EQ(launcher.launched().size(), 2u);
  const std::string hosts = dir.path() + "/tasks/4.hosts";
  ASSERT_TRUE(std::filesystem::exists(hosts));
  ASSERT_TRUE(std::filesystem::exists(dir.path() + "/tasks/4.1.0.hostfile"));
  auto finish = [&](size_t launched) {
    launcher.Exit(launcher.launched()[launched].pid, 0);
    tm->Poll();
    std::vector<uint64_t> seqs;
    for (const auto& [seq, event] : tm->Outbox()) seqs.push_back(seq);
    for (uint64_t seq : seqs) tm->AckEvent(seq);
  };
  finish(1);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/tasks/4.1.0.hostfile"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/tasks/4.0.0.hostfile"));
  EXPECT_TRUE(std::filesystem::exists(hosts)) << "task 4.0 still runs here";
  finish(0);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/tasks/4.0.0.hostfile"));
  EXPECT_FALSE(std::filesystem::exists(hosts));
}

}  // namespace
}  // namespace gpool::worker
