// A task is hostile to the other tasks on its node: what it can do to the
// shared activity directory and to a ledger path it pre-creates must never
// crash or hang another task, nor lift its memory limit.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "worker/cuda/cuda_test_support.h"
#include "worker/cuda/device_activity.h"

namespace gpool::cuda {
namespace {

using testing::CudaTask;
using testing::ValueOf;

// The fake driver's device 0 UUID ("gpoolfake", zeros, device number), as
// activity file names begin.
constexpr const char* kFakeUuid0 = "67706f6f6c66616b6500000000000000";
const std::string kBurst30[] = {"GPOOL_GPU_COMPUTE_PCT=30", "GPOOL_SHARING_QOS=burst-share"};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& bytes, mode_t mode) {
  std::ofstream(path, std::ios::binary) << bytes;
  chmod(path.c_str(), mode);
}

std::string MakeActivityDir(const CudaTask& task, mode_t mode) {
  const std::string dir = task.dir() + "/shared-activity.d";
  std::filesystem::create_directory(dir);
  chmod(dir.c_str(), mode);
  return dir;
}

// Every kind of junk a hostile task can leave under this GPU's names, and,
// while the burst task runs, its own files truncated and overwritten with
// garbage and every file and the directory held locked: the burst task
// still finishes (within a deadline), and junk never reads as a neighbour.
TEST(CudaThrottle, HostileActivityFilesNeitherCrashNorHangABurstTask) {
  CudaTask burst;
  const std::string dir = MakeActivityDir(burst, 01777);
  const std::string prefix = dir + "/" + kFakeUuid0 + ".";
  WriteFile(prefix + "empty", "", 0666);
  WriteFile(prefix + "garbage", std::string(4096, '\xff'), 0666);
  mkfifo((prefix + "fifo").c_str(), 0666);
  std::filesystem::create_directory(prefix + "dir");
  std::filesystem::create_symlink("/dev/zero", prefix + "link");
  std::filesystem::create_symlink(prefix + "fifo", prefix + "fifo-link");
  const int dir_lock = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_EQ(flock(dir_lock, LOCK_EX), 0);
  const int file_lock = open((prefix + "garbage").c_str(), O_RDONLY);
  ASSERT_EQ(flock(file_lock, LOCK_EX), 0);

  auto check = burst.Start({"ledger", "GPOOL_CUDA_ACTIVITY=" + dir, "GPOOL_CUDA_LOG=" + burst.dir() + "/log",
                            kBurst30[0], kBurst30[1]},
                           {"busy", "2000", "1000"});
  std::atomic<bool> done{false};
  int attacks = 0;
  std::thread hostile([&] {
    while (!done.load()) {
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string path = entry.path().string();
        if (!entry.is_regular_file() || entry.is_symlink() || path.find(".garbage") != std::string::npos) continue;
        const int fd = open(path.c_str(), O_WRONLY | O_NOFOLLOW);
        if (fd < 0) continue;
        (void)ftruncate(fd, 0);  // what used to SIGBUS everyone mapping the file
        (void)!write(fd, "\x01\x02\x03", (attacks % 2) != 0 ? 3 : 0);
        close(fd);
        ++attacks;
      }
      const timespec pace{0, 500'000};  // pacing the attacker, not waiting for anything
      nanosleep(&pace, nullptr);
    }
  });
  const auto r = check.FinishWithin(30);
  done.store(true);
  hostile.join();
  close(file_lock);
  close(dir_lock);
  ASSERT_EQ(r.exit_code, 0) << r.output << ReadAll(burst.dir() + "/log");
  EXPECT_GT(attacks, 0);
  // Junk is not a neighbour: alone, the task bursts.
  EXPECT_GT(ValueOf(r.output, "busy_fraction"), 0.6) << r.output;
}

// An activity path that is a symlink, or a directory anyone can write
// without the sticky bit (anyone could remove others' files), is not
// trusted: burst is off, the task keeps to its share, and the log says why.
TEST(CudaThrottle, AnUntrustedActivityPathTurnsBurstOff) {
  CudaTask burst;
  const std::string good = MakeActivityDir(burst, 01777);
  const std::string link = burst.dir() + "/link.d";
  std::filesystem::create_symlink(good, link);
  const std::string open_dir = burst.dir() + "/open.d";
  std::filesystem::create_directory(open_dir);
  chmod(open_dir.c_str(), 0777);
  // Owned by another user (who could remove others' files despite the
  // sticky bit); only where the test may give a directory away (root).
  const std::string foreign = burst.dir() + "/foreign.d";
  std::filesystem::create_directory(foreign);
  chmod(foreign.c_str(), 01777);
  std::vector<std::pair<std::string, std::string>> cases = {
      {link, "reason=not_a_directory_or_symlink"}, {open_dir, "reason=writable_by_others_without_sticky_bit"}};
  if (chown(foreign.c_str(), 65534, 65534) == 0) cases.emplace_back(foreign, "reason=owned_by_another_user");
  for (const auto& [path, reason] : cases) {
    const std::string log = burst.dir() + "/log-" + std::filesystem::path(path).filename().string();
    const auto r = burst.Start({"ledger", "GPOOL_CUDA_ACTIVITY=" + path, "GPOOL_CUDA_LOG=" + log, kBurst30[0],
                                kBurst30[1]},
                               {"busy", "2000", "1000"})
                       .FinishWithin(30);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const double fraction = ValueOf(r.output, "busy_fraction");
    EXPECT_GT(fraction, 0.15) << path << r.output;
    EXPECT_LT(fraction, 0.45) << path << r.output;
    const std::string text = ReadAll(log);
    EXPECT_NE(text.find("event=activity_untrusted"), std::string::npos) << text;
    EXPECT_NE(text.find(reason), std::string::npos) << text;
  }
}

// A process publishes one file of its own per GPU (readable by other
// users' tasks whatever its umask), and leaves none behind when it exits.
TEST(CudaThrottle, AProcessPublishesItsOwnFileAndRemovesItAtExit) {
  CudaTask task;
  const mode_t umask_before = umask(077);  // the child inherits it: nothing may depend on it
  auto check = task.Start({"ledger"}, {"busy", "1000", "50", "hold"});
  umask(umask_before);
  ASSERT_NE(check.ReadUntil("held").find("held"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(lstat(task.activity().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(task.activity())) {
    ++files;
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.rfind(std::string(kFakeUuid0) + ".", 0), 0u) << name;
    ASSERT_EQ(lstat(entry.path().c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << name;
    EXPECT_EQ(st.st_mode & 07777, 0644u) << name;
    EXPECT_EQ(st.st_size, 32) << name;
  }
  EXPECT_EQ(files, 1);
  const auto r = check.FinishWithin(30);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::is_empty(task.activity()));
}

// The worker sweeps activity files no one wrote for a long while (a killed
// process's). A live process whose file was swept during a pause publishes
// again at its next launch, or burst-share neighbours would think it idle.
TEST(CudaThrottle, AProcessWhoseFileWasSweptDuringAPausePublishesAgain) {
  CudaTask task;
  auto check = task.Start({"ledger"},
                          {"busy", "1000", "20", "hold", "busy", "1000", "20", "hold"});
  ASSERT_NE(check.ReadUntil("held").find("held"), std::string::npos);
  auto files = [&] {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(task.activity())) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  };
  const auto before = files();
  ASSERT_EQ(before.size(), 1u);
  std::filesystem::remove(task.activity() + "/" + before[0]);  // as the worker's sweep does
  // The pause is what is tested: longer than the product's recheck
  // threshold (kRecheckAfterIdleNs), so the next launch looks again.
  std::this_thread::sleep_for(std::chrono::nanoseconds(cuda::kRecheckAfterIdleNs) + std::chrono::milliseconds(100));
  check.Continue();
  ASSERT_NE(check.ReadUntil("held").find("held"), std::string::npos);
  const auto after = files();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], before[0]) << "published again under a new name";
  const auto r = check.FinishWithin(30);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::is_empty(task.activity()));
}

// A ledger another user could write (here: mode 0666, or a symlink; tests
// run as root, so ownership cannot be tried) is not used, and every
// allocation is refused rather than counted nowhere.
TEST(CudaInterposer, AnUntrustedLedgerRefusesEveryAllocation) {
  CudaTask task;
  const std::string own = task.dir() + "/own-ledger";
  WriteFile(own, "", 0600);
  for (const std::string how : {"0666", "symlink", "foreign"}) {
    const bool symlink = how == "symlink";
    std::filesystem::remove(task.ledger());
    if (symlink) {
      std::filesystem::create_symlink(own, task.ledger());
    } else {
      WriteFile(task.ledger(), "", how == "0666" ? 0666 : 0600);
    }
    // Another user's 0600 file: only where the test may give a file away (root).
    if (how == "foreign" && chown(task.ledger().c_str(), 65534, 65534) != 0) continue;
    const std::string log = task.dir() + "/log-" + how;
    const auto r = task.Run({"GPOOL_GPU_MEMORY_MIB=64", "ledger", "GPOOL_CUDA_LOG=" + log},
                            {"alloc", "v2", "1M", "2", "alloc", "managed", "1M", "2", "reached", "0"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::string text = ReadAll(log);
    EXPECT_NE(text.find(symlink ? "ledger_not_trusted=1" : "event=ledger_not_trusted"), std::string::npos) << text;
    EXPECT_NE(text.find("reason=ledger_not_trusted"), std::string::npos) << text;
    EXPECT_EQ(std::filesystem::file_size(own), 0u);  // neither file was written
    if (!symlink) {
      EXPECT_EQ(std::filesystem::file_size(task.ledger()), 0u);
    }
  }
}

TEST(CudaInterposer, APrecreatedLedgerOfThisUserWithMode0600IsUsed) {
  CudaTask task;
  WriteFile(task.ledger(), "", 0600);
  const auto r =
      task.Run({"GPOOL_GPU_MEMORY_MIB=64", "ledger"}, {"alloc", "v2", "48M", "0", "alloc", "v2", "17M", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace gpool::cuda
