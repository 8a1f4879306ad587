// Exclusive whole cores end to end (issue 50): a real coordinator and a real
// worker (as root, with this machine's v1 cpuset hierarchy) on 127.0.0.1.
// The worker's spec lists two of this machine's CPUs as its NUMA node's
// cpulist; two tasks asking for one exclusive core each get one each, see
// exactly it in /proc/self/status (Cpus_allowed_list) even after trying to
// widen it, and a third task waits, saying no whole core is free.
#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include <set>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

// The value of the log's last "Cpus_allowed_list:" line, "" before it has one.
std::string AllowedCpus(const std::string& log) {
  const size_t at = log.rfind("Cpus_allowed_list:");
  if (at == std::string::npos) return "";
  const size_t begin = log.find_first_not_of(" \t", at + 18);
  const size_t end = log.find('\n', begin);
  return end == std::string::npos ? "" : log.substr(begin, end - begin);
}

TEST(ExclusiveCoresEndToEndTest, TwoTasksNeverShareACoreAndSeeOnlyTheirOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "cpusets need root";
  if (access("/sys/fs/cgroup/cpuset/cgroup.procs", W_OK) != 0 &&
      access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) != 0) {
    GTEST_SKIP() << "no writable cpuset hierarchy";
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<uint32_t> cpus;
  for (uint32_t cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  const std::string cpulist = std::to_string(cpus[0]) + "," + std::to_string(cpus[1]);

  LocalClusterOptions options;
  options.workers = 1;
  options.gpus_per_worker = 0;
  options.worker_spec_extra = "numa:\n  - {id: 0, cpus: 32, memory: 256Gi, cpulist: \"" + cpulist + "\"}\n";
  LocalCluster cluster(options);
  std::unique_ptr<Client> client;
  ASSERT_NO_FATAL_FAILURE(StartReadyCluster(cluster, client));

  // Each reports its CPUs, tries to widen them to both, and reports again.
  JobSpec pinned = ShellJob("pinned", 0,
                            "grep Cpus_allowed_list /proc/self/status; taskset -p -c " + cpulist +
                                " $$ >/dev/null 2>&1; grep Cpus_allowed_list /proc/self/status; echo done; "
                                "exec sleep 300",
                            2);
  pinned.tasks[0].resources.cpu_milli = 1000;
  pinned.tasks[0].resources.exclusive_cores = true;
  auto submitted = client->Submit(pinned, "");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const std::string tasks = cluster.WorkerDataDir(0) + "/tasks/";
  std::set<std::string> seen;
  for (uint32_t t = 0; t < 2; ++t) {
    const std::string log_path = tasks + std::to_string(submitted->job_id) + "." + std::to_string(t) + ".0.log";
    ASSERT_TRUE(WaitFor([&] { return ReadFile(log_path).find("done\n") != std::string::npos; }, 30s))
        << ReadFile(log_path) << cluster.worker(0)->Log();
    const std::string log = ReadFile(log_path);
    const std::string first = log.substr(0, log.find('\n'));
    EXPECT_EQ(AllowedCpus(first + "\n"), AllowedCpus(log)) << "the task widened its own CPUs:\n" << log;
    seen.insert(AllowedCpus(log));
  }
  EXPECT_EQ(seen, (std::set<std::string>{std::to_string(cpus[0]), std::to_string(cpus[1])}))
      << "each task has one core of its own, and they differ";

  JobSpec third = pinned;
  third.name = "third";
  third.tasks[0].replicas = 1;
  auto waiting = client->Submit(third, "");
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  std::vector<std::string> reasons;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto job = client->GetJob(JobId(waiting->job_id));
        if (!job.ok()) return false;
        reasons = job->reasons;
        for (const auto& reason : reasons) {
          if (reason.find("too few whole cores free for exclusive use") != std::string::npos) return true;
        }
        return false;
      },
      15s))
      << ::testing::PrintToString(reasons);
  (void)client->CancelJob(JobId(waiting->job_id), 0);
  (void)client->CancelJob(JobId(submitted->job_id), 0);
}

}  // namespace
}  // namespace gpool::testing
