#include "worker/flags.h"

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

Result<ParsedFlags> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "gpool-worker");
  return ParseWorkerFlags(static_cast<int>(args.size()), args.data());
}

TEST(FlagsTest, Defaults) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->action, ParsedFlags::Action::kRun);
  EXPECT_EQ(parsed->flags.coordinators, std::vector<std::string>{"tcp://127.0.0.1:7401"});
  EXPECT_EQ(parsed->flags.data_dir, "/var/lib/gpool/worker");
  EXPECT_EQ(parsed->flags.log_level, "info");
  EXPECT_TRUE(parsed->flags.node_name.empty());
  EXPECT_TRUE(parsed->flags.spec_path.empty());
  EXPECT_TRUE(parsed->flags.cuda_intercept_lib.empty()) << "no HAMi-core unless asked";
  EXPECT_TRUE(parsed->flags.cuda_interposer.empty()) << "gpool's interposer, found next to the worker";
  EXPECT_TRUE(parsed->flags.cuda_real_driver.empty()) << "found on the node";
  EXPECT_EQ(parsed->flags.cuda_ledger_dir, "/dev/shm/gpool-cuda");
  EXPECT_EQ(parsed->flags.cuda_activity_dir, "/dev/shm/gpool-cuda-activity.d");
  EXPECT_EQ(parsed->flags.share_memory_tolerance_mib, 64u);
  EXPECT_EQ(parsed->flags.cuda_object_costs, "default") << "objects are charged unless the operator says otherwise";
  EXPECT_FALSE(parsed->flags.allow_unenforced_shares) << "a share nothing can hold is refused";
}

TEST(FlagsTest, CudaInterposer) {
  auto parsed = Parse({"--cuda-interposer", "/opt/gpool/lib/libgpool-cuda.so.1", "--cuda-real-driver",
                       "/usr/lib64/libcuda.so.1", "--cuda-ledger-dir", "/run/gpool", "--share-memory-tolerance-mib",
                       "256"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.cuda_interposer, "/opt/gpool/lib/libgpool-cuda.so.1");
  EXPECT_EQ(parsed->flags.cuda_real_driver, "/usr/lib64/libcuda.so.1");
  EXPECT_EQ(parsed->flags.cuda_ledger_dir, "/run/gpool");
  EXPECT_EQ(parsed->flags.share_memory_tolerance_mib, 256u);
  parsed = Parse({"--cuda-interposer", "none"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.cuda_interposer, "none");
  parsed = Parse({"--cuda-object-costs", "context=300M,stream=1M", "--allow-unenforced-shares"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.cuda_object_costs, "context=300M,stream=1M");
  EXPECT_TRUE(parsed->flags.allow_unenforced_shares);
  for (std::vector<const char*> bad : {std::vector<const char*>{"--cuda-interposer", ""},
                                       std::vector<const char*>{"--cuda-interposer", "/a:/b"},
                                       std::vector<const char*>{"--cuda-ledger-dir", ""},
                                       std::vector<const char*>{"--share-memory-tolerance-mib", "lots"},
                                       std::vector<const char*>{"--cuda-object-costs", ""},
                                       std::vector<const char*>{"--cuda-object-costs", "contexts=1M"}}) {
    auto result = Parse(bad);
    ASSERT_FALSE(result.ok()) << bad[0] << " " << bad[1];
    EXPECT_NE(result.status().message().find(bad[0]), std::string::npos) << result.status().message();
  }
  auto help = Parse({"--help"});
  ASSERT_TRUE(help.ok());
  for (const char* flag : {"--cuda-interposer", "--cuda-real-driver", "--cuda-ledger-dir",
                           "--share-memory-tolerance-mib", "--cuda-intercept-lib", "--cuda-object-costs",
                           "--allow-unenforced-shares"}) {
    EXPECT_NE(help->text.find(flag), std::string::npos) << flag;
  }
}

// Issue 50: exclusive cores where no cpuset can be made are refused unless
// the operator says affinity will do.
TEST(FlagsTest, ExclusiveCoresFallback) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.exclusive_cores_fallback, "refuse");
  parsed = Parse({"--exclusive-cores-fallback", "affinity"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.exclusive_cores_fallback, "affinity");
  auto bad = Parse({"--exclusive-cores-fallback", "maybe"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--exclusive-cores-fallback must be refuse or affinity, not 'maybe'");
}

// Issue 48: the HTTP port's TLS flags, and plain HTTP only with
// --http-insecure, on every address (loopback included); off by default.
TEST(FlagsTest, HttpTls) {
  auto off = Parse({});
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_TRUE(off->flags.http_address.empty()) << "HTTP is off unless asked for";
  EXPECT_FALSE(off->flags.http_insecure);
  for (const char* address : {"127.0.0.1:0", "0.0.0.0:7481"}) {
    auto plain = Parse({"--http-address", address});
    ASSERT_FALSE(plain.ok()) << address;
    EXPECT_EQ(plain.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plain.status().message().find("--http-insecure"), std::string::npos) << plain.status().message();
    EXPECT_NE(plain.status().message().find("--http-cert"), std::string::npos) << plain.status().message();
    auto insecure = Parse({"--http-address", address, "--http-insecure"});
    ASSERT_TRUE(insecure.ok()) << insecure.status().ToString();
    EXPECT_EQ(insecure->flags.http_address, address);
    EXPECT_TRUE(insecure->flags.http_insecure);
  }
  auto tls = Parse({"--http-address", "0.0.0.0:7481", "--http-cert", "/etc/gpool/http.pem", "--http-key",
                    "/etc/gpool/http.key", "--http-client-ca", "/etc/gpool/ca.pem"});
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_EQ(tls->flags.http_cert, "/etc/gpool/http.pem");
  EXPECT_EQ(tls->flags.http_key, "/etc/gpool/http.key");
  EXPECT_EQ(tls->flags.http_client_ca, "/etc/gpool/ca.pem");
  EXPECT_FALSE(tls->flags.http_insecure);
  EXPECT_FALSE(Parse({"--http-address", "127.0.0.1:0", "--http-cert", "/etc/gpool/http.pem"}).ok());  // no key
  // Port flags while HTTP is off would change nothing: refused, naming --http-address.
  auto stray = Parse({"--http-insecure"});
  ASSERT_FALSE(stray.ok());
  EXPECT_NE(stray.status().message().find("--http-address"), std::string::npos) << stray.status().message();
  EXPECT_TRUE(Parse({"--http-address", "none"}).ok());
}

// Issue 31: tasks run as nobody unless told otherwise; a bad --task-user is
// refused at start rather than at the first task.
TEST(FlagsTest, TaskIsolation) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.task_user, "nobody");
  EXPECT_EQ(parsed->flags.gpu_device_nodes, "/dev/nvidia%u");
  EXPECT_TRUE(parsed->flags.task_isolation);
  parsed = Parse({"--task-user", "1234:100", "--gpu-device-nodes", "/tmp/gpus/n%u", "--task-isolation", "off"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.task_user, "1234:100");
  EXPECT_EQ(parsed->flags.gpu_device_nodes, "/tmp/gpus/n%u");
  EXPECT_FALSE(parsed->flags.task_isolation);
  for (std::vector<const char*> bad : {std::vector<const char*>{"--task-user", "12:x"},
                                       std::vector<const char*>{"--task-user", "no-such-user-gpool"},
                                       std::vector<const char*>{"--task-isolation", "maybe"}}) {
    auto result = Parse(bad);
    EXPECT_FALSE(result.ok()) << bad[1];
  }
}

TEST(FlagsTest, TaskLogRetention) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.task_log_retention_hours, 168u) << "a week, as the coordinator keeps finished jobs";
  EXPECT_EQ(parsed->flags.task_logs_max, 10'000u);
  EXPECT_EQ(parsed->flags.task_logs_max_gib, 0u);
  parsed = Parse({"--task-log-retention-hours", "0", "--task-logs-max", "0", "--task-logs-max-gib", "50"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.task_log_retention_hours, 0u);
  EXPECT_EQ(parsed->flags.task_logs_max, 0u);
  EXPECT_EQ(parsed->flags.task_logs_max_gib, 50u);
  for (std::vector<const char*> bad : {std::vector<const char*>{"--task-log-retention-hours", "-1"},
                                       std::vector<const char*>{"--task-log-retention-hours", "87601"},
                                       std::vector<const char*>{"--task-logs-max", "1e4"},
                                       std::vector<const char*>{"--task-logs-max-gib", "00"},
                                       std::vector<const char*>{"--task-logs-max-gib", ""}}) {
    auto result = Parse(bad);
    ASSERT_FALSE(result.ok()) << bad[0] << " " << bad[1];
    EXPECT_NE(result.status().message().find(std::string(bad[0]) + ":"), std::string::npos)
        << result.status().ToString();
    EXPECT_NE(result.status().message().find("or 0 for no limit"), std::string::npos) << result.status().ToString();
  }
}

TEST(FlagsTest, CudaInterceptLib) {
  auto parsed = Parse({"--cuda-intercept-lib", "/usr/local/vgpu/libvgpu.so"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.cuda_intercept_lib, "/usr/local/vgpu/libvgpu.so");
  auto bad = Parse({"--cuda-intercept-lib", "/a.so:/b.so"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--cuda-intercept-lib"), std::string::npos) << bad.status().message();
}

TEST(FlagsTest, AdvertiseAddressIsAnIpAddress) {
  auto v4 = Parse({"--advertise-address", "10.1.2.3"});
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  EXPECT_EQ(v4->flags.advertise_address, "10.1.2.3");
  auto v6 = Parse({"--advertise-address", "fd00::7"});
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(v6->flags.advertise_address, "fd00::7");
  EXPECT_TRUE(Parse({}).value().flags.advertise_address.empty());
  for (const char* bad : {"gpu-a01.example.com", "", "10.1.2", "10.1.2.3:7401"}) {
    auto parsed = Parse({"--advertise-address", bad});
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("--advertise-address: '"), std::string::npos)
        << parsed.status().message();
  }
}

TEST(FlagsTest, RunDirIsOptionalAndNeverEmpty) {
  EXPECT_TRUE(Parse({}).value().flags.run_dir.empty()) << "empty: chosen at start (run_dir.h)";
  auto given = Parse({"--run-dir", "/dev/shm/gpool"});
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(given->flags.run_dir, "/dev/shm/gpool");
  auto empty = Parse({"--run-dir", ""});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("--run-dir"), std::string::npos) << empty.status().message();
}

TEST(FlagsTest, AllFlags) {
  auto parsed = Parse({"--coordinator", "tcp://a:7401, tcp://b:7401", "--node-name", "n1", "--spec", "s.yaml",
                       "--data-dir", "/tmp/w", "--token", "secret", "--log-level", "debug"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.coordinators, (std::vector<std::string>{"tcp://a:7401", "tcp://b:7401"}));
  EXPECT_EQ(parsed->flags.node_name, "n1");
  EXPECT_EQ(parsed->flags.spec_path, "s.yaml");
  EXPECT_EQ(parsed->flags.data_dir, "/tmp/w");
  EXPECT_EQ(parsed->flags.token, "secret");
  EXPECT_EQ(parsed->flags.log_level, "debug");
}

// Secured or explicitly plaintext, never by default (issue 31).
TEST(FlagsTest, SecurityFlags) {
  auto none = Parse({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(CheckSecurityFlags(none->flags).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(CheckSecurityFlags(none->flags).message().find("--insecure"), std::string::npos);

  auto insecure = Parse({"--insecure"});
  ASSERT_TRUE(insecure.ok());
  EXPECT_TRUE(CheckSecurityFlags(insecure->flags).ok());

  auto keyed = Parse({"--coordinator", "tcp://a:7401,tcp://b:7401", "--key-file", "/etc/gpool/node.key",
                      "--coordinator-key", "/etc/gpool/a.pub,/etc/gpool/b.pub"});
  ASSERT_TRUE(keyed.ok()) << keyed.status().ToString();
  EXPECT_EQ(keyed->flags.key_file, "/etc/gpool/node.key");
  EXPECT_EQ(keyed->flags.coordinator_keys, (std::vector<std::string>{"/etc/gpool/a.pub", "/etc/gpool/b.pub"}));
  EXPECT_TRUE(CheckSecurityFlags(keyed->flags).ok());

  auto no_server_key = Parse({"--key-file", "/etc/gpool/node.key"});
  EXPECT_EQ(CheckSecurityFlags(no_server_key->flags).code(), StatusCode::kInvalidArgument);
  auto both = Parse({"--insecure", "--key-file", "/etc/gpool/node.key"});
  EXPECT_EQ(CheckSecurityFlags(both->flags).code(), StatusCode::kInvalidArgument);
  // A simulated fleet makes its nodes' keys itself.
  auto fleet = Parse({"--simulate", "3", "--spec", "s.yaml", "--coordinator-key", "/etc/gpool/c.pub"});
  ASSERT_TRUE(fleet.ok());
  EXPECT_TRUE(CheckSecurityFlags(fleet->flags).ok());
  EXPECT_EQ(Parse({"--coordinator-key", "a.pub,,b.pub"}).status().code(), StatusCode::kInvalidArgument);
  // A join token rides on a key: refused with --insecure and for a fleet.
  auto token = Parse({"--key-file", "n.key", "--coordinator-key", "c.pub", "--join-token", "gpool-join-1"});
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->flags.join_token, "gpool-join-1");
  EXPECT_TRUE(CheckSecurityFlags(token->flags).ok());
  auto plain_token = Parse({"--insecure", "--join-token", "gpool-join-1"});
  EXPECT_EQ(CheckSecurityFlags(plain_token->flags).code(), StatusCode::kInvalidArgument);
  auto fleet_token = Parse({"--simulate", "3", "--spec", "s.yaml", "--coordinator-key", "c.pub", "--join-token", "t"});
  EXPECT_EQ(CheckSecurityFlags(fleet_token->flags).code(), StatusCode::kInvalidArgument);
}

TEST(FlagsTest, HelpAndVersion) {
  auto help = Parse({"--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->action, ParsedFlags::Action::kHelp);
  EXPECT_NE(help->text.find("--coordinator"), std::string::npos);
  auto version = Parse({"--version"});
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(version->action, ParsedFlags::Action::kVersion);
  EXPECT_EQ(version->text.rfind("gpool-worker ", 0), 0u);
}

TEST(FlagsTest, BadInputIsInvalidArgument) {
  for (const auto& args : std::vector<std::vector<const char*>>{
           {"--no-such-flag"},
           {"--log-level", "loud"},
           {"--coordinator", "http://x:1"},
           {"--coordinator", ","},
           {"--token", "a", "--token-file", "b"},
           {"stray"},
           {"--data-dir", ""},
           {"--spec"},
       }) {
    auto parsed = Parse(args);
    EXPECT_FALSE(parsed.ok()) << args[0];
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << parsed.status().ToString();
    }
  }
}

TEST(FlagsTest, Simulate) {
  auto plain = Parse({});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->flags.simulate, 0u) << "one real node unless asked";
  auto fleet = Parse({"--simulate", "1000", "--spec", "node.yaml"});
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  EXPECT_EQ(fleet->flags.simulate, 1000u);
  auto most = Parse({"--simulate", "10000", "--spec", "node.yaml"});
  ASSERT_TRUE(most.ok()) << most.status().ToString();
  EXPECT_EQ(most->flags.simulate, kMaxSimulatedNodes);
}

TEST(FlagsTest, BadSimulateSaysWhy) {
  struct Case {
    std::vector<const char*> args;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{
           {{"--simulate", "0", "--spec", "s.yaml"}, "out of range"},
           {{"--simulate", "10001", "--spec", "s.yaml"}, "out of range"},
           {{"--simulate", "99999999999", "--spec", "s.yaml"}, "is not a number of nodes"},
           {{"--simulate", "-3", "--spec", "s.yaml"}, "is not a number of nodes"},
           {{"--simulate", "ten", "--spec", "s.yaml"}, "is not a number of nodes"},
           {{"--simulate", "", "--spec", "s.yaml"}, "is not a number of nodes"},
           {{"--simulate", "20"}, "needs --spec"},
       }) {
    auto parsed = Parse(c.args);
    ASSERT_FALSE(parsed.ok()) << c.args[1];
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << parsed.status().ToString();
    EXPECT_NE(parsed.status().message().find(c.says), std::string::npos) << parsed.status().message();
    EXPECT_NE(parsed.status().message().find("--simulate"), std::string::npos) << parsed.status().message();
  }
}

TEST(FlagsTest, TokenFileIsTrimmed) {
  testing::TempDir dir;
  EXPECT_EQ(*ReadTokenFile(dir.Write("token", "  s3cret\n")), "s3cret");
  EXPECT_FALSE(ReadTokenFile(dir.Write("empty", "\n")).ok());
  EXPECT_EQ(ReadTokenFile(dir.path() + "/missing").status().code(), StatusCode::kNotFound);
}

TEST(FlagsTest, HealthDefaults) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const WorkerFlags::Health& h = parsed->flags.health;
  EXPECT_TRUE(h.enabled) << "on unless turned off";
  EXPECT_EQ(h.xid_hold_ms, 300'000);
  EXPECT_EQ(h.gpu_max_temp_c, 0u) << "no thermal check unless asked";
  EXPECT_EQ(h.sysfs_root, "/sys");
  EXPECT_EQ(h.disk_min_free_mib, 1024u);
  EXPECT_EQ(h.peermem, "auto");
  EXPECT_FALSE(h.peermem_reload);
  EXPECT_EQ(h.xid_interval_ms, 100);
  EXPECT_EQ(h.gpu_interval_ms, 2000);
  EXPECT_EQ(h.nic_interval_ms, 2000);
  EXPECT_EQ(h.service_interval_ms, 10000);
  EXPECT_FALSE(parsed->flags.nvml_library_given);
}

TEST(FlagsTest, HealthFlags) {
  auto parsed = Parse({"--health", "off", "--health-xid-hold-ms", "60000", "--health-gpu-max-temp-c", "90",
                       "--health-sysfs-root", "/tmp/sys", "--health-disk-min-free-mib", "512", "--health-peermem",
                       "required", "--health-peermem-reload", "--health-xid-interval-ms", "50",
                       "--health-gpu-interval-ms", "1000", "--health-nic-interval-ms", "3000",
                       "--health-service-interval-ms", "30000", "--nvml-library", "/opt/fake/libnvidia-ml.so"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const WorkerFlags::Health& h = parsed->flags.health;
  EXPECT_FALSE(h.enabled);
  EXPECT_EQ(h.xid_hold_ms, 60000);
  EXPECT_EQ(h.gpu_max_temp_c, 90u);
  EXPECT_EQ(h.sysfs_root, "/tmp/sys");
  EXPECT_EQ(h.disk_min_free_mib, 512u);
  EXPECT_EQ(h.peermem, "required");
  EXPECT_TRUE(h.peermem_reload);
  EXPECT_EQ(h.xid_interval_ms, 50);
  EXPECT_EQ(h.gpu_interval_ms, 1000);
  EXPECT_EQ(h.nic_interval_ms, 3000);
  EXPECT_EQ(h.service_interval_ms, 30000);
  EXPECT_TRUE(parsed->flags.nvml_library_given) << "a --spec node then watches this library's GPUs";
}

TEST(FlagsTest, BadHealthFlagsSayWhich) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"--health", "maybe"}, "--health: 'maybe' is not on or off"},
      {{"--health-xid-hold-ms", "0"}, "--health-xid-hold-ms: 0 is out of range"},
      {{"--health-xid-hold-ms", "5s"}, "--health-xid-hold-ms: '5s' is not a time in ms"},
      {{"--health-gpu-max-temp-c", "400"}, "--health-gpu-max-temp-c: 400 is out of range"},
      {{"--health-sysfs-root", ""}, "--health-sysfs-root: must not be empty"},
      {{"--health-disk-min-free-mib", "-1"}, "--health-disk-min-free-mib: '-1' is not a size in MiB"},
      {{"--health-peermem", "sometimes"}, "--health-peermem: 'sometimes' is not auto, required or off"},
      {{"--health-xid-interval-ms", "0"}, "--health-xid-interval-ms: 0 is out of range"},
      {{"--health-gpu-interval-ms", "fast"}, "--health-gpu-interval-ms: 'fast' is not a time in ms"},
      {{"--health-nic-interval-ms", "3600001"}, "--health-nic-interval-ms: 3600001 is out of range"},
      {{"--health-service-interval-ms", ""}, "--health-service-interval-ms: '' is not a time in ms"},
  };
  for (const auto& [args, expected] : cases) {
    auto parsed = Parse(args);
    ASSERT_FALSE(parsed.ok()) << expected;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(expected), std::string::npos) << parsed.status().message();
  }
}

}  // namespace
}  // namespace gpool::worker
