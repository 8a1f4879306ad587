// A full data dir is a mode, not a crash (issue 29): a coordinator whose data
// dir sits on a small tmpfs keeps answering reads when the tmpfs fills, refuses
// writes with Unavailable "disk full (<path>, <free> bytes free)", comes back
// up in that mode when restarted while full, and resumes writes by itself
// once space is freed, with every acknowledged job present and no refused one.
//
// Needs root (mount -t tmpfs); skips, saying so, where mounting is refused.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client/client.h"
#include "protocol/base/disk_guard.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "tests/local_cluster.h"
#include "tests/process.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

// A tmpfs of `size` mounted over a fresh dir, unmounted by the destructor;
// 0700, as a coordinator refuses a data dir others can reach (issue 48).
class SmallTmpfs {
 public:
  explicit SmallTmpfs(const std::string& path, const std::string& size) : path_(path) {
    std::filesystem::create_directories(path_);
    CommandResult mounted = RunCommand({"mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0700", "tmpfs", path_});
    mounted_ = mounted.exit_code == 0;
    why_ = mounted.err;
  }
  ~SmallTmpfs() {
    if (mounted_) RunCommand({"umount", "-l", path_});
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string why_;
};

// Writes `path` until the file system refuses, keeping `leave` bytes free
// (in whole 4 KiB pages: what a tmpfs counts).
void Fill(const std::string& path, uint64_t leave) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  std::string chunk(4096, 'f');
  while (true) {
    auto space = StatDisk(std::filesystem::path(path).parent_path().string());
    ASSERT_TRUE(space.ok());
    if (space->free_bytes <= leave) break;
    if (::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) break;
  }
  ::close(fd);
}

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmpfs_ = std::make_unique<SmallTmpfs>(dir_.Join("mnt"), "4m");
    if (!tmpfs_->mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << tmpfs_->why();
    data_dir_ = dir_.Join("mnt") + "/coordinator";
    filler_ = dir_.Join("mnt") + "/filler";
    ClientOptions options;
    options.endpoints = client_port_.endpoint();
    options.timeout_ms = 3000;
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok());
    client_ = std::move(client).value();
  }
  void TearDown() override {
    if (coordinator_) coordinator_->Stop(SIGKILL);
    coordinator_.reset();
  }

  // Starts the coordinator on fixed ports (the endpoints file cannot be
  // written on a full disk) and waits until it answers ClusterStatus.
  Result<ClusterStatusReply> Start() {
    // Reserve 0: only the file system's own ENOSPC stops a write, so the
    // test goes through LevelDB's failure and reopen, the hard path.
    std::vector<std::string> argv = {GPOOL_COORDINATOR_BIN,   "--data-dir",    data_dir_,
                                     "--client-addr",         client_port_.endpoint(),
                                     "--worker-addr",         worker_port_.endpoint(),
                                     "--disk-reserve-bytes",  "0",
                                     "--disk-retry-ms",       "100",
                                     "--insecure"};
    coordinator_ = std::make_unique<Process>("coordinator", argv,
                                             dir_.Join("coordinator-" + std::to_string(starts_++) + ".log"));
    Result<ClusterStatusReply> status = Status::Unavailable("not started");
    WaitFor(
        [&] {
          status = client_->ClusterStatus();
          return status.ok() || !coordinator_->Running();
        },
        20s);
    return status;
  }

  Result<SubmitJobReply> SubmitBig(int i) {
    JobSpec spec = ShellJob("big-" + std::to_string(i), 1, "true");
    spec.tasks[0].env["PAYLOAD"] = std::string(48 << 10, 'x');
    return client_->Submit(spec, "key-" + std::to_string(i));
  }

  std::set<uint64_t> JobIds() {
    std::set<uint64_t> ids;
    auto jobs = client_->ListJobs(true, 0);
    EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
    if (jobs.ok()) {
      for (const auto& job : jobs->jobs) ids.insert(job.job_id);
    }
    return ids;
  }

  TempDir dir_;
  std::unique_ptr<SmallTmpfs> tmpfs_;
  std::string data_dir_;
  std::string filler_;
  ReservedPort client_port_;
  ReservedPort worker_port_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<Process> coordinator_;
  int starts_ = 0;
};

TEST_F(DiskFullTest, ServesReadsRefusesWritesSurvivesARestartAndResumesWithEveryAcknowledgedJob) {
  ASSERT_TRUE(Start().ok()) << coordinator_->Log();
  std::set<uint64_t> acknowledged;
  for (int i = 0; i < 3; ++i) {
    auto submitted = SubmitBig(i);
    ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
    acknowledged.insert(submitted->job_id);
  }

  // Fill the tmpfs to within a page or two and submit until one is refused.
  Fill(filler_, 8 << 10);
  Status refused;
  int next = 100;
  for (; next < 140 && refused.ok(); ++next) {
    auto submitted = SubmitBig(next);
    if (submitted.ok()) {
      acknowledged.insert(submitted->job_id);
    } else {
      refused = submitted.status();
    }
  }
  ASSERT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
  EXPECT_TRUE(refused.message().starts_with("disk full (" + data_dir_ + ", ")) << refused.ToString();
  EXPECT_TRUE(refused.message().find(" bytes free)") != std::string::npos) << refused.ToString();

  // Still up: reads and status answer, writes keep being refused.
  EXPECT_TRUE(coordinator_->Running());
  EXPECT_EQ(JobIds(), acknowledged);
  auto status = client_->ClusterStatus();
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->disk_full);
  EXPECT_TRUE(status->disk_error.starts_with("disk full (")) << status->disk_error;
  EXPECT_EQ(SubmitBig(next++).status().code(), StatusCode::kUnavailable);
  CommandResult cli = RunCommand({GPOOL_CLI_BIN, "--coordinator", client_port_.endpoint(), "status"});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("Disk:     FULL, writes refused, reads served: disk full ("), std::string::npos) << cli.out;
  CommandResult jobs = RunCommand({GPOOL_CLI_BIN, "--coordinator", client_port_.endpoint(), "jobs"});
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
  CommandResult submit =
      RunCommand({GPOOL_CLI_BIN, "--coordinator", client_port_.endpoint(), "submit", "--", "true"});
  EXPECT_NE(submit.exit_code, 0);
  EXPECT_NE(submit.err.find("Unavailable: disk full ("), std::string::npos) << submit.err;

  // The refusal came from a write that failed, not from the reserve check.
  EXPECT_NE(coordinator_->Log().find("data dir refuses writes"), std::string::npos) << coordinator_->Log();
  EXPECT_NE(coordinator_->Log().find("cause=\"committing proposals\""), std::string::npos) << coordinator_->Log();

  // Killed and restarted while the disk is still full: it comes up in the
  // mode (LevelDB cannot open on the disk; a read-only copy serves reads).
  coordinator_->Kill();
  auto restarted = Start();
  ASSERT_TRUE(restarted.ok()) << restarted.status().ToString() << "\n" << coordinator_->Log();
  EXPECT_TRUE(restarted->disk_full) << coordinator_->Log();
  EXPECT_NE(coordinator_->Log().find("cause=\"opening the store\""), std::string::npos) << coordinator_->Log();
  EXPECT_EQ(JobIds(), acknowledged);
  EXPECT_EQ(SubmitBig(next++).status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(coordinator_->Running());

  // Space returns: writes resume by themselves.
  std::filesystem::remove(filler_);
  Result<SubmitJobReply> resumed = Status::Unavailable("not tried");
  ASSERT_TRUE(WaitFor(
      [&] {
        resumed = SubmitBig(next++);
        return resumed.ok();
      },
      20s))
      << resumed.status().ToString() << "\n" << coordinator_->Log();
  acknowledged.insert(resumed->job_id);
  EXPECT_FALSE(client_->ClusterStatus()->disk_full);
  EXPECT_NE(coordinator_->Log().find("writes resumed"), std::string::npos);

  // Durable: a restart finds exactly the acknowledged jobs, none refused.
  coordinator_->Kill();
  auto again = Start();
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << coordinator_->Log();
  EXPECT_FALSE(again->disk_full);
  EXPECT_EQ(JobIds(), acknowledged);
}

// Three replicas, each data dir on its own tmpfs; the leader's fills. It
// stops persisting and so stops answering its peers: the others elect a new
// leader and keep accepting writes (the submission in flight is retried there
// with its idempotency key), the full one stays up, and once its space is
// freed it resumes and catches up.
TEST(DiskFullReplicatedTest, AFullLeaderStepsDownTheOthersKeepServingWritesAndItCatchesUp) {
  LocalClusterOptions options;
  options.coordinators = 3;
  options.workers = 0;
  options.coordinator_flags = {"--disk-reserve-bytes", "0", "--disk-retry-ms", "100"};
  LocalCluster cluster(options);
  std::vector<std::unique_ptr<SmallTmpfs>> disks;
  for (int i = 0; i < 3; ++i) {
    disks.push_back(std::make_unique<SmallTmpfs>(cluster.ReplicaDataDir(i), "4m"));
    if (!disks.back()->mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << disks.back()->why();
  }
  cluster.StartCoordinator();
  ClientOptions client_options;
  client_options.endpoints = cluster.client_endpoint();
  cluster.SecureClient(client_options);
  client_options.timeout_ms = 3000;
  auto client = std::move(Client::Connect(client_options).value());
  auto leader = [&]() -> std::string {
    auto status = client->ClusterStatus();
    return status.ok() && status->role == "leader" ? status->replica_id : "";
  };
  std::string first;
  ASSERT_TRUE(WaitFor([&] { return !(first = leader()).empty(); }, 20s));

  std::set<uint64_t> acknowledged;
  auto submit = [&](int i) {
    JobSpec spec = ShellJob("r-" + std::to_string(i), 1, "true");
    spec.tasks[0].env["PAYLOAD"] = std::string(32 << 10, 'x');
    auto submitted = client->Submit(spec, "r-key-" + std::to_string(i));
    if (submitted.ok()) acknowledged.insert(submitted->job_id);
    return submitted.status();
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(submit(i).ok());

  const int full = std::stoi(first) - 1;
  Fill(cluster.ReplicaDataDir(full) + "/filler", 8 << 10);
  // Keep writing: every submission is acknowledged (by the old leader before
  // its disk refuses, by the new one after), none is refused for good.
  for (int i = 10; i < 25; ++i) EXPECT_TRUE(submit(i).ok()) << "submission " << i;
  std::string second;
  ASSERT_TRUE(WaitFor([&] { return !(second = leader()).empty() && second != first; }, 20s))
      << cluster.coordinator(full)->Log();
  EXPECT_TRUE(cluster.coordinator(full)->Running());
  EXPECT_NE(cluster.coordinator(full)->Log().find("data dir refuses writes"), std::string::npos);
  for (int i = 30; i < 35; ++i) EXPECT_TRUE(submit(i).ok()) << "submission " << i;

  // Space returns: the full replica resumes and catches up with the leader.
  std::filesystem::remove(cluster.ReplicaDataDir(full) + "/filler");
  ASSERT_TRUE(WaitFor([&] { return cluster.coordinator(full)->Log().find("writes resumed") != std::string::npos; },
                      20s))
      << cluster.coordinator(full)->Log();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto status = client->ClusterStatus();
        if (!status.ok() || status->role != "leader") return false;
        for (const auto& r : status->replicas) {
          if (r.id == first) return r.match_index >= status->commit_index;
        }
        return false;
      },
      20s));
  std::set<uint64_t> present;
  auto jobs = client->ListJobs(true, 0);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  for (const auto& job : jobs->jobs) present.insert(job.job_id);
  EXPECT_EQ(present, acknowledged);
}

}  // namespace
}  // namespace gpool::testing
