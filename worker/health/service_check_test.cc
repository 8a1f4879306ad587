#include "worker/health/service_check.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "protocol/base/disk_guard.h"
#include "protocol/base/testing/fake_clock.h"
#include "protocol/health.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

constexpr uint64_t kSvcTestMib = 1024 * 1024;

// A fake node: /sys, /proc and /dev under one temporary directory, and
// options that read them with nothing else enabled.
class SvcFakeNode {
 public:
  std::string sys() const { return dir_.path() + "/sys"; }
  std::string proc() const { return dir_.path() + "/proc"; }
  std::string dev() const { return dir_.path() + "/dev"; }

  void Write(const std::string& relative, const std::string& content) const { dir_.Write(relative, content); }
  void Remove(const std::string& relative) const {
    std::filesystem::remove_all(std::filesystem::path(dir_.path()) / relative);
  }
  void NvSwitch() const { Write("dev/nvidia-nvswitch0", ""); }
  void Process(int pid, const std::string& comm) const { Write("proc/" + std::to_string(pid) + "/comm", comm + "\n"); }
  void Modules(const std::string& names) const {
    std::string text;
    size_t start = 0;
    while (start <= names.size() && !names.empty()) {
      const size_t space = names.find(' ', start);
      text += names.substr(start, space - start) + " 16384 0 - Live 0x0000000000000000\n";
      if (space == std::string::npos) break;
      start = space + 1;
    }
    Write("proc/modules", text);
  }
  void Ib() const { Write("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n"); }

  ServiceCheckOptions Options() const {
    ServiceCheckOptions o;
    o.sysfs_root = sys();
    o.proc_root = proc();
    o.dev_root = dev();
    o.nvswitch = NvswitchMode::kAuto;
    o.peermem = PeermemMode::kOff;
    o.clock = &clock;
    return o;
  }

  FakeClock clock;

 private:
  testing::TempDir dir_;
};

std::vector<std::string> SvcTestKeys(const std::vector<HealthFinding>& findings) {
  std::vector<std::string> keys;
  for (const auto& f : findings) keys.push_back(std::string(ToString(f.kind)) + "@" + f.device);
  return keys;
}

TEST(ServiceCheckTest, ModesParse) {
  EXPECT_EQ(NvswitchModeFromString("auto"), NvswitchMode::kAuto);
  EXPECT_EQ(NvswitchModeFromString("yes"), NvswitchMode::kYes);
  EXPECT_EQ(NvswitchModeFromString("no"), NvswitchMode::kNo);
  EXPECT_FALSE(NvswitchModeFromString("maybe").has_value());
  EXPECT_EQ(PeermemModeFromString("auto"), PeermemMode::kAuto);
  EXPECT_EQ(PeermemModeFromString("required"), PeermemMode::kRequired);
  EXPECT_EQ(PeermemModeFromString("off"), PeermemMode::kOff);
  EXPECT_FALSE(PeermemModeFromString("").has_value());
}

TEST(ServiceCheckTest, DefaultsAndKinds) {
  ServiceCheckOptions defaults;
  EXPECT_EQ(defaults.interval_ms, 10000);
  EXPECT_EQ(defaults.sysfs_root, "/sys");
  EXPECT_EQ(defaults.proc_root, "/proc");
  EXPECT_EQ(defaults.dev_root, "/dev");
  EXPECT_EQ(defaults.disk_min_free_mib, 1024);
  EXPECT_EQ(defaults.coordinator_silent_threshold_ms, 5000);
  EXPECT_EQ(defaults.peermem_reload_interval_ms, 600000);
  EXPECT_EQ(defaults.peermem_reload_command, (std::vector<std::string>{"modprobe", "nvidia_peermem"}));
  ServiceCheck check(defaults);
  EXPECT_EQ(check.name(), "services");
  EXPECT_EQ(check.interval_ms(), 10000);
  EXPECT_EQ(check.kinds(), (std::vector<HealthKind>{HealthKind::kFabricmanagerDown, HealthKind::kPeermemMissing,
                                                    HealthKind::kDiskLow, HealthKind::kCoordinatorUnreachable,
                                                    HealthKind::kFabricmanagerRestart}));
  EXPECT_FALSE(defaults.fabricmanager_restart) << "the worker turns it on (build_monitor.cc), not the check";
  EXPECT_EQ(defaults.fabricmanager_restart_command,
            (std::vector<std::string>{"systemctl", "restart", "nvidia-fabricmanager"}));
}

TEST(ServiceCheckTest, FabricManagerRunningOnNvswitchSystem) {
  SvcFakeNode node;
  node.NvSwitch();
  node.Process(1, "systemd");
  node.Process(812, "nv-fabricmanage");  // as the kernel cuts it
  ServiceCheck check(node.Options());
  EXPECT_TRUE(check.Run(0).empty());
  node.Remove("proc/812");
  node.Process(813, "nv-fabricmanager");  // a fake /proc with the full name
  EXPECT_TRUE(check.Run(1).empty());
}

TEST(ServiceCheckTest, FabricManagerMissingOnNvswitchSystemIsFatal) {
  SvcFakeNode node;
  node.NvSwitch();
  node.Process(1, "systemd");
  node.Process(2, "nv-fabricmanagerx");  // not it
  node.Write("proc/self/comm", "nv-fabricmanage\n");  // not a pid directory
  ServiceCheck check(node.Options());
  auto findings = check.Run(0);
  ASSERT_EQ(SvcTestKeys(findings), (std::vector<std::string>{"fabricmanager-down@"}));
  EXPECT_EQ(findings[0].severity, HealthSeverity::kFatal);
  EXPECT_FALSE(findings[0].message.empty());

  node.Process(900, "nv-fabricmanage");
  EXPECT_TRUE(check.Run(1).empty());
}

const HealthFinding* SvcTestFind(const std::vector<HealthFinding>& findings, HealthKind kind) {
  for (const auto& f : findings) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

// PATH with `dir` first for the life of the object; the old value back after.
class SvcPathFirst {
 public:
  explicit SvcPathFirst(const std::string& dir) : old_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    setenv("PATH", (dir + ":" + old_).c_str(), 1);
  }
  ~SvcPathFirst() { setenv("PATH", old_.c_str(), 1); }
  SvcPathFirst(const SvcPathFirst&) = delete;
  SvcPathFirst& operator=(const SvcPathFirst&) = delete;

 private:
  std::string old_;
};

// Issue 50: a stopped fabric manager is restarted through systemd (here a
// fake `systemctl` first on PATH that starts a fake nv-fabricmanager in the
// fake /proc), and the restart is alerted as its own condition.
TEST(ServiceCheckTest, AStoppedFabricManagerIsRestartedThroughSystemctlAndAlerted) {
  SvcFakeNode node;
  node.NvSwitch();
  node.Process(2, "bash");  // a readable /proc without the fabric manager
  testing::TempDir bin;
  const std::string calls = bin.path() + "/calls";
  bin.Write("systemctl", "#!/bin/sh\necho \"$@\" >> " + calls + "\nmkdir -p " + node.proc() +
                             "/4242 && echo nv-fabricmanager > " + node.proc() + "/4242/comm\n");
  std::filesystem::permissions(bin.path() + "/systemctl", std::filesystem::perms::owner_all);
  SvcPathFirst path(bin.path());
  testing::CapturedLog log;
  ServiceCheckOptions o = node.Options();
  o.fabricmanager_restart = true;
  o.logger = log.logger();
  ServiceCheck check(o);

  std::vector<HealthFinding> first = check.Run(0);
  ASSERT_NE(SvcTestFind(first, HealthKind::kFabricmanagerRestart), nullptr) << "alerted from the first attempt";
  EXPECT_EQ(check.restart_attempts(), 1u);
  // The child runs on its own; later runs collect it (no run waits for it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (check.restart_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    check.Run(0);
  }
  ASSERT_FALSE(check.restart_running());
  const std::vector<HealthFinding> after = check.Run(0);
  EXPECT_EQ(SvcTestFind(after, HealthKind::kFabricmanagerDown), nullptr) << "running again";
  const HealthFinding* restart = SvcTestFind(after, HealthKind::kFabricmanagerRestart);
  ASSERT_NE(restart, nullptr);
  EXPECT_EQ(restart->severity, HealthSeverity::kWarning) << "a record and an alert, not a fence";
  EXPECT_NE(restart->message.find("systemctl restart nvidia-fabricmanager (attempt 1) succeeded"), std::string::npos)
      << restart->message;
  std::ifstream in(calls);
  std::stringstream said;
  said << in.rdbuf();
  EXPECT_EQ(said.str(), "restart nvidia-fabricmanager\n");
  EXPECT_TRUE(log.Contains("fabric manager restart succeeded")) << log.text();

  node.clock.Advance(o.fabricmanager_restart_interval_ms);
  EXPECT_EQ(SvcTestFind(check.Run(0), HealthKind::kFabricmanagerRestart), nullptr) << "the alert is held, then clears";
}

TEST(ServiceCheckTest, AFailedFabricManagerRestartIsAlertedAndRateLimited) {
  SvcFakeNode node;
  node.NvSwitch();
  node.Process(2, "bash");
  std::vector<std::vector<std::string>> runs;
  ServiceCheckOptions o = node.Options();
  o.fabricmanager_restart = true;
  o.fabricmanager_restart_run = [&runs](const std::vector<std::string>& argv) {
    runs.push_back(argv);
    return Status::Internal("Unit nvidia-fabricmanager.service not found.");
  };
  ServiceCheck check(o);
  std::vector<HealthFinding> findings = check.Run(0);
  ASSERT_NE(SvcTestFind(findings, HealthKind::kFabricmanagerDown), nullptr);
  EXPECT_NE(SvcTestFind(findings, HealthKind::kFabricmanagerDown)->message.find("restart attempts=1"),
            std::string::npos);
  const HealthFinding* restart = SvcTestFind(findings, HealthKind::kFabricmanagerRestart);
  ASSERT_NE(restart, nullptr);
  EXPECT_NE(restart->message.find("failed: "), std::string::npos) << restart->message;
  EXPECT_NE(restart->message.find("not found"), std::string::npos) << restart->message;
  node.clock.Advance(60'000);
  check.Run(0);
  EXPECT_EQ(runs.size(), 1u) << "at most once per interval";
  node.clock.Advance(o.fabricmanager_restart_interval_ms);
  check.Run(0);
  EXPECT_EQ(runs.size(), 2u);

  o.fabricmanager_restart = false;  // off: the worker's flag
  ServiceCheck off(o);
  EXPECT_EQ(SvcTestKeys(off.Run(0)), (std::vector<std::string>{"fabricmanager-down@"}));
  EXPECT_EQ(runs.size(), 2u);
}

// The node's label repair.gpool.io/fabricmanager-restart=off is asked before
// each restart, so an operator's `gpool node label` (pushed to the worker)
// stops restarts without a worker restart, and its removal lets them go on.
TEST(ServiceCheckTest, TheNodeLabelTurnsFabricManagerRestartsOffAndOnAtRuntime) {
  SvcFakeNode node;
  node.NvSwitch();
  node.Process(2, "bash");
  std::vector<std::vector<std::string>> runs;
  bool labelled_off = true;
  ServiceCheckOptions o = node.Options();
  o.fabricmanager_restart = true;
  o.fabricmanager_restart_off = [&labelled_off] { return labelled_off; };
  o.fabricmanager_restart_run = [&runs](const std::vector<std::string>& argv) {
    runs.push_back(argv);
    return Status::Internal("Unit nvidia-fabricmanager.service not found.");
  };
  ServiceCheck check(o);
  EXPECT_EQ(SvcTestKeys(check.Run(0)), (std::vector<std::string>{"fabricmanager-down@"})) << "fenced, not restarted";
  node.clock.Advance(o.fabricmanager_restart_interval_ms);
  check.Run(0);
  EXPECT_TRUE(runs.empty());
  EXPECT_EQ(check.restart_attempts(), 0u);

  labelled_off = false;
  const std::vector<HealthFinding> on = check.Run(0);
  EXPECT_EQ(runs.size(), 1u);
  EXPECT_NE(SvcTestFind(on, HealthKind::kFabricmanagerRestart), nullptr);
}

TEST(ServiceCheckTest, FabricManagerNotNeededWithoutNvswitch) {
  SvcFakeNode node;
  node.Process(1, "systemd");
  node.Write("dev/nvidia0", "");
  ServiceCheck check(node.Options());
  EXPECT_TRUE(check.Run(0).empty());

  // Forced either way.
  ServiceCheckOptions yes = node.Options();
  yes.nvswitch = NvswitchMode::kYes;
  EXPECT_EQ(SvcTestKeys(ServiceCheck(yes).Run(0)), (std::vector<std::string>{"fabricmanager-down@"}));
  node.NvSwitch();
  ServiceCheckOptions no = node.Options();
  no.nvswitch = NvswitchMode::kNo;
  EXPECT_TRUE(ServiceCheck(no).Run(0).empty());
}

TEST(ServiceCheckTest, FabricManagerUnreadableProcReportsNothing) {
  SvcFakeNode node;
  node.NvSwitch();
  ServiceCheckOptions o = node.Options();
  o.proc_root = node.proc() + "/missing";
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty());
  // A comm that is unreadable (a directory) is just not a match.
  node.Write("proc/5/comm/x", "");
  EXPECT_EQ(SvcTestKeys(ServiceCheck(node.Options()).Run(0)), (std::vector<std::string>{"fabricmanager-down@"}));
}

TEST(ServiceCheckTest, PeermemAutoNeedsGpusAndInfiniband) {
  SvcFakeNode node;
  node.Modules("nvidia_uvm nvidia");
  ServiceCheckOptions o = node.Options();
  o.peermem = PeermemMode::kAuto;
  o.has_nvidia_gpus = true;
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty()) << "no InfiniBand device";

  node.Ib();
  auto findings = ServiceCheck(o).Run(0);
  ASSERT_EQ(SvcTestKeys(findings), (std::vector<std::string>{"peermem-missing@"}));
  EXPECT_EQ(findings[0].severity, HealthSeverity::kDegraded);

  o.has_nvidia_gpus = false;
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty()) << "no GPUs";

  o.has_nvidia_gpus = true;
  node.Modules("nvidia_peermem nvidia_uvm nvidia");
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty());
}

TEST(ServiceCheckTest, PeermemRequiredAndOff) {
  SvcFakeNode node;
  node.Modules("nvidia nvidia_peermemx");  // a different module
  ServiceCheckOptions o = node.Options();
  o.peermem = PeermemMode::kRequired;  // whatever the hardware
  EXPECT_EQ(SvcTestKeys(ServiceCheck(o).Run(0)), (std::vector<std::string>{"peermem-missing@"}));
  o.peermem = PeermemMode::kOff;
  o.has_nvidia_gpus = true;
  node.Ib();
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty());
}

TEST(ServiceCheckTest, PeermemUnreadableModulesReportsNothing) {
  SvcFakeNode node;
  ServiceCheckOptions o = node.Options();
  o.peermem = PeermemMode::kRequired;
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty());  // no proc/modules
  node.Write("proc/modules/x", "");              // a directory
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty());
}

TEST(ServiceCheckTest, PeermemReloadIsRateLimited) {
  SvcFakeNode node;
  node.Modules("nvidia");
  testing::CapturedLog log;
  std::vector<std::vector<std::string>> runs;
  ServiceCheckOptions o = node.Options();
  o.peermem = PeermemMode::kRequired;
  o.peermem_reload = true;
  o.peermem_reload_run = [&](const std::vector<std::string>& argv) {
    runs.push_back(argv);
    return Status::Internal("modprobe: FATAL: Module nvidia_peermem not found");
  };
  o.logger = log.logger();
  ServiceCheck check(o);

  auto findings = check.Run(0);
  ASSERT_EQ(SvcTestKeys(findings), (std::vector<std::string>{"peermem-missing@"}));
  EXPECT_NE(findings[0].message.find("reload attempts=1"), std::string::npos) << findings[0].message;
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0], (std::vector<std::string>{"modprobe", "nvidia_peermem"}));
  EXPECT_TRUE(log.Contains("peermem reload failed")) << log.text();
  EXPECT_TRUE(log.Contains("command=\"modprobe nvidia_peermem\"")) << log.text();

  node.clock.Advance(10'000);
  EXPECT_EQ(check.Run(1).size(), 1u);
  node.clock.Advance(9 * 60'000);
  EXPECT_EQ(check.Run(2).size(), 1u);
  EXPECT_EQ(runs.size(), 1u) << "at most once per interval";
  EXPECT_EQ(check.reload_attempts(), 1u);

  node.clock.Advance(50'000);  // 10 min since the first
  EXPECT_EQ(check.Run(3).size(), 1u);
  EXPECT_EQ(runs.size(), 2u);
  EXPECT_EQ(check.reload_attempts(), 2u);
}

TEST(ServiceCheckTest, PeermemReloadThatWorksClearsTheFinding) {
  SvcFakeNode node;
  node.Modules("nvidia");
  testing::CapturedLog log;
  ServiceCheckOptions o = node.Options();
  o.peermem = PeermemMode::kRequired;
  o.peermem_reload = true;
  o.peermem_reload_command = {"/sbin/modprobe", "-v", "nvidia_peermem"};
  o.peermem_reload_run = [&](const std::vector<std::string>& argv) {
    EXPECT_EQ(argv.size(), 3u);
    node.Modules("nvidia_peermem nvidia");
    return Status::Ok();
  };
  o.logger = log.logger();
  ServiceCheck check(o);
  EXPECT_TRUE(check.Run(0).empty());
  EXPECT_EQ(check.reload_attempts(), 1u);
  EXPECT_TRUE(log.Contains("peermem reload succeeded")) << log.text();
  EXPECT_TRUE(check.Run(1).empty());
  EXPECT_EQ(check.reload_attempts(), 1u);
}

TEST(ServiceCheckTest, PeermemReloadOnlyWhenEnabledAndMissing) {
  SvcFakeNode node;
  node.Modules("nvidia");
  int runs = 0;
  ServiceCheckOptions o = node.Options();
  o.peermem = PeermemMode::kRequired;
  o.peermem_reload = false;
  o.peermem_reload_run = [&](const std::vector<std::string>&) {
    ++runs;
    return Status::Ok();
  };
  EXPECT_EQ(ServiceCheck(o).Run(0).size(), 1u);
  EXPECT_EQ(runs, 0);
  node.Modules("nvidia_peermem");
  o.peermem_reload = true;
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty());
  EXPECT_EQ(runs, 0);
}

TEST(ServiceCheckTest, PeermemReloadThroughAChildProcess) {
  SvcFakeNode node;
  node.Modules("nvidia");
  testing::CapturedLog log;
  ServiceCheckOptions o = node.Options();
  o.peermem = PeermemMode::kRequired;
  o.peermem_reload = true;
  o.logger = log.logger();

  // A program that cannot be run fails at once, logged; nothing left running.
  o.peermem_reload_command = {"/nonexistent/gpool-modprobe"};
  ServiceCheck missing(o);
  EXPECT_EQ(missing.Run(0).size(), 1u);
  EXPECT_FALSE(missing.reload_running());
  EXPECT_TRUE(log.Contains("peermem reload failed")) << log.text();

  // A real child: the check does not wait for it; a later run collects it,
  // or the check's end kills it.
  o.peermem_reload_command = {"sleep", "30"};
  o.peermem_reload_timeout_ms = 1000;
  ServiceCheck slow(o);
  EXPECT_EQ(slow.Run(0).size(), 1u);
  EXPECT_TRUE(slow.reload_running());
  EXPECT_EQ(slow.reload_attempts(), 1u);
  node.clock.Advance(1000);
  EXPECT_EQ(slow.Run(1).size(), 1u);
  EXPECT_FALSE(slow.reload_running());
  EXPECT_TRUE(log.Contains("killed at its timeout")) << log.text();

  o.peermem_reload_command = {"sleep", "30"};
  ServiceCheck ended(o);
  EXPECT_EQ(ended.Run(0).size(), 1u);
  EXPECT_TRUE(ended.reload_running());
}  // `ended` kills and reaps its child here

TEST(ServiceCheckTest, ChildCommandOutcomes) {
  auto ok = ChildCommand::Start({"true"}, 0, 60'000);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE((*ok)->Wait().ok());

  auto fails = ChildCommand::Start({"sh", "-c", "exit 3"}, 0, 60'000);
  ASSERT_TRUE(fails.ok()) << fails.status().ToString();
  Status status = (*fails)->Wait();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("status 3"), std::string::npos) << status.ToString();

  auto missing = ChildCommand::Start({"/nonexistent/gpool-cmd"}, 0, 60'000);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_EQ(ChildCommand::Start({}, 0, 1).status().code(), StatusCode::kInvalidArgument);

  // Deadlines are in the caller's clock: no real time passes in the test.
  auto slow = ChildCommand::Start({"sleep", "30"}, 100, 500);
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_FALSE((*slow)->Poll(599).has_value());
  std::optional<Status> killed = (*slow)->Poll(600);
  ASSERT_TRUE(killed.has_value());
  EXPECT_EQ(killed->code(), StatusCode::kDeadlineExceeded);
}

TEST(ServiceCheckTest, DiskLowThroughInjectedStatvfs) {
  SvcFakeNode node;
  uint64_t free_bytes = 512 * kSvcTestMib;
  std::string asked;
  ServiceCheckOptions o = node.Options();
  o.data_dir = "/var/lib/gpool";
  o.free_bytes = [&](const std::string& path) -> Result<uint64_t> {
    asked = path;
    return free_bytes;
  };
  ServiceCheck check(o);
  auto findings = check.Run(0);
  EXPECT_EQ(asked, "/var/lib/gpool");
  ASSERT_EQ(SvcTestKeys(findings), (std::vector<std::string>{"disk-low@disk"}));
  EXPECT_EQ(findings[0].severity, HealthSeverity::kDegraded);
  EXPECT_NE(findings[0].message.find("512 MiB"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find("1024 MiB"), std::string::npos) << findings[0].message;

  free_bytes = 1024 * kSvcTestMib;  // at the threshold: fine
  EXPECT_TRUE(check.Run(1).empty());
  free_bytes = 1024 * kSvcTestMib - 1;
  EXPECT_EQ(check.Run(2).size(), 1u);
}

TEST(ServiceCheckTest, DiskErrorsAndNoDataDirReportNothing) {
  SvcFakeNode node;
  testing::CapturedLog log;
  int calls = 0;
  ServiceCheckOptions o = node.Options();
  o.logger = log.logger();
  o.free_bytes = [&](const std::string&) -> Result<uint64_t> {
    ++calls;
    return Status::IoError("statvfs: No such file or directory");
  };
  EXPECT_TRUE(ServiceCheck(o).Run(0).empty());
  EXPECT_EQ(calls, 0) << "no data_dir: no disk check";

  o.data_dir = "/missing";
  ServiceCheck check(o);
  EXPECT_TRUE(check.Run(0).empty());
  EXPECT_TRUE(check.Run(1).empty());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(log.Contains("disk check cannot read free space")) << log.text();

  // The real statvfs on a real directory answers.
  testing::TempDir dir;
  auto real = FreeBytes(dir.path());
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  EXPECT_FALSE(FreeBytes(dir.path() + "/missing").ok());
  ServiceCheckOptions plain = node.Options();
  plain.data_dir = dir.path();
  plain.disk_min_free_mib = 1;
  const bool low = *real < kSvcTestMib;
  EXPECT_EQ(ServiceCheck(plain).Run(0).size(), low ? 1u : 0u);
}

TEST(ServiceCheckTest, CoordinatorSilence) {
  SvcFakeNode node;
  int64_t silent = 100;
  ServiceCheckOptions o = node.Options();
  o.coordinator_silent_ms = [&] { return silent; };
  ServiceCheck check(o);
  EXPECT_TRUE(check.Run(0).empty());
  silent = 5000;  // at the threshold: fine
  EXPECT_TRUE(check.Run(1).empty());
  silent = 6000;
  auto findings = check.Run(2);
  ASSERT_EQ(SvcTestKeys(findings), (std::vector<std::string>{"coordinator-unreachable@"}));
  EXPECT_EQ(findings[0].severity, HealthSeverity::kWarning);
  EXPECT_NE(findings[0].message.find("more than 5000 ms"), std::string::npos) << findings[0].message;
  silent = 16000;  // still silent: the same finding, nothing new to report
  EXPECT_EQ(check.Run(3)[0].message, findings[0].message);
  silent = -1;  // unknown
  EXPECT_TRUE(check.Run(4).empty());

  ServiceCheckOptions none = node.Options();
  EXPECT_TRUE(ServiceCheck(none).Run(0).empty());
}

TEST(ServiceCheckTest, EverythingWrongAtOnce) {
  SvcFakeNode node;
  node.NvSwitch();
  node.Process(1, "systemd");
  node.Modules("nvidia");
  node.Ib();
  ServiceCheckOptions o = node.Options();
  o.peermem = PeermemMode::kAuto;
  o.has_nvidia_gpus = true;
  o.data_dir = "/data";
  o.free_bytes = [](const std::string&) -> Result<uint64_t> { return uint64_t{0}; };
  o.coordinator_silent_ms = [] { return int64_t{60'000}; };
  EXPECT_EQ(SvcTestKeys(ServiceCheck(o).Run(0)),
            (std::vector<std::string>{"fabricmanager-down@", "peermem-missing@", "disk-low@disk",
                                      "coordinator-unreachable@"}));
}

}  // namespace
}  // namespace gpool::worker
