// Exclusive whole cores end to end (issue 50): a real coordinator and a real
// worker (as root, with this machine's v1 cpuset hierarchy) on 127.0.0.1.
// The worker's spec lists two of this machine's CPUs as its NUMA node's
// cpulist; two tasks asking for one exclusive core each get one each, see
// exactly it in /proc/self/status (Cpus_allowed_list) even after trying to
// widen it, and a third task waits, saying no whole core is free. A task
// without exclusive cores stays off the cores such a task holds (the
// shared pool) and gets them back when it ends.
#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "client/client.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"
#include "topology/cpulist.h"
#include "worker/runner/testing/allowed_cpus.h"

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

// The CPUs of every "Cpus_allowed_list:" line of `log` from byte `from` on.
std::vector<std::vector<uint32_t>> AllowedLines(const std::string& log, size_t from) {
  std::vector<std::vector<uint32_t>> lines;
  for (size_t at = log.find("Cpus_allowed_list:", from); at != std::string::npos;
       at = log.find("Cpus_allowed_list:", at + 1)) {
    const size_t end = log.find('\n', at);
    if (end == std::string::npos) break;  // still being written
    auto cpus = topology::ParseCpuList(AllowedCpus(log.substr(at, end + 1 - at)));
    lines.push_back(cpus.value_or(std::vector<uint32_t>{}));
  }
  return lines;
}

bool CpuListHas(const std::vector<uint32_t>& cpus, uint32_t cpu) {
  return std::find(cpus.begin(), cpus.end(), cpu) != cpus.end();
}

// Root with a writable cpuset hierarchy and two CPUs, else skipped; a
// coordinator and one worker whose NUMA node's cpulist is those two CPUs.
class ExclusiveCoresEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "cpusets need root";
    if (access("/sys/fs/cgroup/cpuset/cgroup.procs", W_OK) != 0 &&
        access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) != 0) {
      GTEST_SKIP() << "no writable cpuset hierarchy";
    }
    cpus_ = worker::FirstAllowedCpus(2);
    if (cpus_.size() < 2) GTEST_SKIP() << "needs two CPUs";
    cpulist_ = std::to_string(cpus_[0]) + "," + std::to_string(cpus_[1]);
    LocalClusterOptions options;
    options.workers = 1;
    options.gpus_per_worker = 0;
    options.worker_spec_extra = "numa:\n  - {id: 0, cpus: 32, memory: 256Gi, cpulist: \"" + cpulist_ + "\"}\n";
    cluster_ = std::make_unique<LocalCluster>(options);
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_));
  }
  std::string TaskLog(uint64_t job, uint32_t index) const {
    return cluster_->WorkerDataDir(0) + "/tasks/" + std::to_string(job) + "." + std::to_string(index) + ".0.log";
  }

  std::vector<uint32_t> cpus_;
  std::string cpulist_;
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(ExclusiveCoresEndToEndTest, TwoTasksNeverShareACoreAndSeeOnlyTheirOwn) {
  LocalCluster& cluster = *cluster_;
  std::unique_ptr<Client>& client = client_;
  const std::vector<uint32_t>& cpus = cpus_;
  const std::string& cpulist = cpulist_;

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

// The shared pool (issue 50): a task without exclusive cores runs off the
// core an exclusive task holds from the moment that one runs, in every line
// it writes after, and gets it back once that task ended.
TEST_F(ExclusiveCoresEndToEndTest, ASharedTaskNeverRunsOnAnExclusiveTasksCore) {
  JobSpec shared = ShellJob("shared", 0, "while :; do grep Cpus_allowed_list /proc/self/status; sleep 0.1; done");
  auto shared_job = client_->Submit(shared, "");
  ASSERT_TRUE(shared_job.ok()) << shared_job.status().ToString();
  const std::string shared_log = TaskLog(shared_job->job_id, 0);
  ASSERT_TRUE(WaitFor([&] { return !AllowedLines(ReadFile(shared_log), 0).empty(); }, 30s))
      << ReadFile(shared_log) << cluster_->worker(0)->Log();
  const std::vector<uint32_t> before = AllowedLines(ReadFile(shared_log), 0).back();
  ASSERT_TRUE(CpuListHas(before, cpus_[0]) && CpuListHas(before, cpus_[1]))
      << "alone, it may run on both: " << ReadFile(shared_log);

  JobSpec pinned = ShellJob("pinned", 0, "grep Cpus_allowed_list /proc/self/status; echo done; exec sleep 300");
  pinned.tasks[0].resources.cpu_milli = 1000;
  pinned.tasks[0].resources.exclusive_cores = true;
  auto pinned_job = client_->Submit(pinned, "");
  ASSERT_TRUE(pinned_job.ok()) << pinned_job.status().ToString();
  const std::string pinned_log = TaskLog(pinned_job->job_id, 0);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(pinned_log).find("done\n") != std::string::npos; }, 30s))
      << ReadFile(pinned_log) << cluster_->worker(0)->Log();
  auto held = topology::ParseCpuList(AllowedCpus(ReadFile(pinned_log)));
  ASSERT_TRUE(held.has_value() && held->size() == 1) << ReadFile(pinned_log);
  const uint32_t core = held->front();

  // Everything the shared task writes from now on was written after the
  // exclusive one ran, so after its core left the pool.
  const size_t from = ReadFile(shared_log).size();
  ASSERT_TRUE(WaitFor([&] { return AllowedLines(ReadFile(shared_log), from).size() >= 5; }, 15s))
      << ReadFile(shared_log);
  for (const auto& line : AllowedLines(ReadFile(shared_log), from)) {
    EXPECT_FALSE(line.empty()) << ReadFile(shared_log);
    EXPECT_FALSE(CpuListHas(line, core)) << "the shared task ran on exclusive core " << core << ":\n"
                                         << ReadFile(shared_log);
  }

  auto cancelled = client_->CancelJob(JobId(pinned_job->job_id), 0);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_TRUE(WaitFor([&] { return CpuListHas(AllowedLines(ReadFile(shared_log), from).back(), core); }, 30s))
      << "core " << core << " not given back:\n" << ReadFile(shared_log) << cluster_->worker(0)->Log();
  (void)client_->CancelJob(JobId(shared_job->job_id), 0);
}

}  // namespace
}  // namespace gpool::testing
