// gpool-worker: the per-node agent. Composition root: parses flags,
// discovers the node, builds the launcher, TaskManager, GPU usage sampler,
// Link and Agent, and runs until SIGTERM/SIGINT (then stops the tasks and
// exits 0).
//
// With --simulate N it is instead the composition root of a fleet of N
// simulated nodes in this one process (fleet.h).
//
// Exit codes: 0 normal stop, 1 startup failure (bad spec, unwritable data
// dir, too few file descriptors for the fleet), 2 bad command line.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "protocol/base/clock.h"
#include "protocol/base/disk_guard.h"
#include "protocol/base/loop_inbox.h"
#include "protocol/messages_enrolment.h"
#include "protocol/security/keys.h"
#include "protocol/security/server_keys.h"
#include "topology/fleet_nodes.h"
#include "worker/agent.h"
#include "worker/discovery/discover.h"
#include "worker/discovery/nvml_gpu_sampler.h"
#include "worker/discovery/nvml_mig_manager.h"
#include "worker/discovery/nvml_usage_sampler.h"
#include "worker/flags.h"
#include "worker/fleet.h"
#include "worker/health/build_monitor.h"
#include "worker/link.h"
#include "worker/log.h"
#include "worker/metrics/worker_http.h"
#include "worker/metrics/worker_metrics.h"
#include "worker/node_host.h"
#include "worker/runner/cuda_shared_files.h"
#include "worker/runner/exec_manager.h"
#include "worker/runner/lease_file.h"
#include "worker/runner/posix_process_launcher.h"
#include "worker/runner/run_dir.h"
#include "worker/runner/share_enforcement.h"
#include "worker/runner/simulated_mig_manager.h"
#include "worker/runner/supervisor_state.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"
#include "worker/version.h"

namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

void OnSignal(int) { g_stop.store(true); }

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

// gpool-task-supervisor: --supervisor, else the one next to this binary
// (/proc/self/exe, else argv[0]). NotFound, saying where it looked, when it
// is not there: every task runs under it.
gpool::Result<std::string> FindSupervisor(const gpool::worker::WorkerFlags& flags, const char* argv0) {
  namespace fs = std::filesystem;
  std::string path = flags.supervisor;
  if (path.empty()) {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) self = fs::absolute(argv0, ec);
    path = (self.parent_path() / "gpool-task-supervisor").string();
  }
  if (access(path.c_str(), X_OK) != 0) {
    return gpool::Status::NotFound("gpool-task-supervisor not found at " + path + " (" + std::strerror(errno) +
                                   "): install it next to gpool-worker or pass --supervisor PATH");
  }
  return path;
}

// Task isolation (runner/task_isolation.h) from the flags. On only as root:
// dropping to another uid and making namespaces need it; a worker run as a
// user runs tasks as that user, and says so. The data dir becomes 0711 so
// that tasks reach their own entries in it by path, and list nothing.
gpool::Status ConfigureIsolation(const gpool::worker::WorkerFlags& flags,
                                 gpool::worker::TaskIsolationOptions& isolation, spdlog::logger& log) {
  using gpool::worker::Q;
  if (!flags.task_isolation) {
    log.warn("task isolation off: tasks run as the worker's user and see its processes (--task-isolation off)");
    return gpool::Status::Ok();
  }
  if (geteuid() != 0) {
    log.warn("task isolation needs root: tasks run as the worker's user uid={}", geteuid());
    return gpool::Status::Ok();
  }
  bool allow_root = false;
  auto user = gpool::worker::ParseTaskUser(flags.task_user, &allow_root);
  if (!user.ok()) return user.status();
  isolation.enabled = true;
  isolation.default_identity = *user;
  isolation.allow_root = allow_root;
  isolation.gpu_device_nodes = flags.gpu_device_nodes;
  isolation.vendor_device_root = flags.vendor_device_root;
  std::error_code ec;
  std::filesystem::create_directories(flags.data_dir, ec);
  if (chmod(flags.data_dir.c_str(), 0711) != 0) {
    return gpool::Status::IoError("cannot make the data dir " + flags.data_dir + " 0711: " + std::strerror(errno));
  }
  // Tasks run as other uids: a secret others may read is a secret tasks may read.
  struct stat token {};
  if (!flags.token_file.empty() && stat(flags.token_file.c_str(), &token) == 0 && (token.st_mode & 0077) != 0) {
    log.warn("the token file is readable by other users, tasks included: make it 0600 path={} mode={:o}",
             Q(flags.token_file), token.st_mode & 07777);
  }
  log.info("task isolation on default_user={} uid={} gid={} root_allowed={} gpu_device_nodes={} vendor_device_root={}",
           Q(user->user), user->uid, user->gid, allow_root, Q(flags.gpu_device_nodes), Q(flags.vendor_device_root));
  return gpool::Status::Ok();
}

// Which ended tasks' logs a node keeps (task_log_janitor.h), for a worker and
// for each node of a simulated fleet alike.
gpool::worker::TaskLogRetention LogRetention(const gpool::worker::WorkerFlags& flags) {
  gpool::worker::TaskLogRetention retention;
  retention.max_age_ms = static_cast<int64_t>(flags.task_log_retention_hours) * 3'600'000;
  retention.max_logs = flags.task_logs_max;
  retention.max_bytes = flags.task_logs_max_gib << 30;
  // Where the health monitor says disk-low, old logs give way first (unless
  // every limit is 0: then the worker removes no log at all).
  if (retention.Enabled()) retention.min_free_bytes = flags.health.disk_min_free_mib << 20;
  return retention;
}

// gpool-rsh for gang tasks' MPI (job_hosts.h): a link in the tasks dir to
// the gpool CLI (--cli, else the one next to this binary), which runs as
// `gpool exec-rsh` under that name. Empty, with a warning, when there is none.
std::string PrepareRshAgent(const gpool::worker::WorkerFlags& flags, const std::string& tasks_dir,
                            spdlog::logger& log) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string cli = flags.cli;
  if (cli.empty()) cli = (fs::read_symlink("/proc/self/exe", ec).parent_path() / "gpool").string();
  cli = fs::absolute(cli, ec).string();
  if (access(cli.c_str(), X_OK) != 0) {
    log.warn("no gpool CLI for MPI's remote agent; mpirun in gang tasks needs its own (--cli PATH) cli={}", gpool::worker::Q(cli));
    return {};
  }
  const std::string agent = tasks_dir + "/gpool-rsh";
  fs::create_directories(tasks_dir, ec);
  fs::remove(agent, ec);
  fs::create_symlink(cli, agent, ec);
  if (ec) {
    log.warn("cannot link gpool-rsh; mpirun in gang tasks needs its own remote agent path={} error={}", gpool::worker::Q(agent),
             gpool::worker::Q(ec.message()));
    return {};
  }
  log.info("gang tasks' MPI remote agent agent={} cli={} private_hosts={}", gpool::worker::Q(agent), gpool::worker::Q(cli), geteuid() == 0);
  return agent;
}

// The cgroups tasks run in, or nullptr (tasks tracked by process group only,
// said once at start). The scope is the node name and a hash of the data
// dir, so two workers on one host never share a subtree and a restarted
// worker finds its own. What a worker process that died left running there
// with no live supervisor holding it is killed now: its tasks are reported
// lost when this one registers. Tasks whose supervisor lives are adopted.
std::unique_ptr<gpool::worker::CgroupTree> OpenCgroups(const gpool::worker::WorkerFlags& flags,
                                                       const std::string& node, spdlog::logger& log) {
  using gpool::worker::Q;
  if (flags.cgroup_root == "none") {
    log.warn("task cgroups off (--cgroup-root none): a task's children that leave its process group are not "
             "tracked or killed");
    return nullptr;
  }
  std::error_code ec;
  const std::string data_dir = std::filesystem::absolute(flags.data_dir, ec).lexically_normal().string();
  std::string scope;
  for (char c : node) scope += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  scope += "." + std::to_string(std::hash<std::string>{}(data_dir) % 1'000'000'007ull);
  auto tree = gpool::worker::CgroupTree::Open(flags.cgroup_root, scope);
  if (!tree.ok()) {
    log.warn("task cgroups unavailable, tasks tracked by process group only error={}", Q(tree.status().ToString()));
    return nullptr;
  }
  // Supervisors record their tasks under the run dir, or under DATA_DIR/tasks
  // when a worker without one started them.
  std::set<std::string> supervised = gpool::worker::LiveSupervisedCgroups(flags.data_dir + "/tasks");
  if (!flags.run_dir.empty()) supervised.merge(gpool::worker::LiveSupervisedCgroups(flags.run_dir));
  auto keep = [&supervised](const std::string& name) { return supervised.count(name) > 0; };
  for (const auto& [name, processes] : (*tree)->KillLeftovers(keep)) {
    log.warn("killed what a previous worker process left running cgroup={} processes={}", name, processes);
  }
  log.info("task cgroups layout={} exclusive_cores={} exclusive_cores_fallback={}", Q((*tree)->Describe()),
           (*tree)->cpuset_available() ? "cpuset" : Q("unavailable: " + (*tree)->cpuset_why_not()),
           flags.exclusive_cores_fallback);
  return std::move(tree).value();
}

// Says once how GPU shares will be enforced, so an operator sees it at start
// rather than when a share overruns its memory; the interposer's settings
// (share_enforcement.h).
gpool::Result<gpool::worker::ShareEnforcementOptions> ConfigureShares(const gpool::worker::WorkerFlags& flags,
                                                                     const char* argv0, spdlog::logger& log) {
  namespace fs = std::filesystem;
  using gpool::worker::Q;
  gpool::worker::ShareEnforcementOptions share;
  share.ledger_dir = flags.cuda_ledger_dir;
  share.activity_dir = flags.cuda_activity_dir;
  if (geteuid() != 0) {
    // A worker that is not root cannot take over root's default directories
    // (nor another user's): its own, by uid.
    const gpool::worker::WorkerFlags defaults;
    const std::string uid = "." + std::to_string(geteuid());
    if (share.ledger_dir == defaults.cuda_ledger_dir) share.ledger_dir += uid;
    if (share.activity_dir == defaults.cuda_activity_dir) share.activity_dir += uid;
  }
  share.memory_tolerance_mib = flags.share_memory_tolerance_mib;
  share.object_costs = flags.cuda_object_costs;
  share.allow_unenforced = flags.allow_unenforced_shares;
  share.real_driver = flags.cuda_real_driver.empty() ? gpool::worker::FirstExisting(gpool::worker::DefaultRealDriverPaths())
                                                     : flags.cuda_real_driver;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0, ec);
  const auto choice = gpool::worker::ChooseInterposer(flags.cuda_interposer, flags.cuda_intercept_lib, self.string());
  share.interposer = choice.path;
  if (!share.interposer.empty()) {
    // Made by the worker before any task can (cuda_shared_files.h): a node
    // that cannot keep its ledgers out of tasks' reach does not start.
    GPOOL_RETURN_IF_ERROR(gpool::worker::EnsureWorkerDir(share.ledger_dir, 0711));
    GPOOL_RETURN_IF_ERROR(gpool::worker::EnsureWorkerDir(share.activity_dir, 01777));
  }
  share.interposer_missing = choice.missing;
  if (choice.warn) {
    log.warn("{} enforced=false share_tasks={}", choice.message,
             flags.allow_unenforced_shares ? "run_unenforced" : "refused");
  } else {
    log.info("{} enforced={} interposer={} real_driver={} ledger_dir={} tolerance_mib={}", choice.message,
             !choice.path.empty() || !flags.cuda_intercept_lib.empty(), Q(choice.path),
             Q(share.real_driver.empty() ? "unset (the interposer's defaults)" : share.real_driver),
             Q(share.ledger_dir), share.memory_tolerance_mib);
  }
  const std::string& lib = flags.cuda_intercept_lib;
  if (lib.empty()) return share;
  const bool missing = lib.find('/') != std::string::npos && !fs::exists(lib, ec);
  if (missing) {
    log.warn("cuda intercept library not found lib={} share_tasks={}", Q(lib),
             flags.allow_unenforced_shares ? "run_unenforced" : "refused_until_it_exists");
  }
  // HAMi-core takes its cross-process locks in /tmp/vgpulock and expects the
  // directory to exist; every task on the node shares it.
  const fs::path lock_dir = "/tmp/vgpulock";
  fs::create_directories(lock_dir, ec);
  if (!ec) fs::permissions(lock_dir, fs::perms::all | fs::perms::sticky_bit, ec);
  if (ec) log.warn("cannot prepare HAMi-core's lock directory dir={} error={}", lock_dir.string(), Q(ec.message()));
  if (!missing) log.info("gpu shares enforced by preloading lib={}", Q(lib));
  return share;
}

// GPU memory per process, only where the GPUs are real and NVML's: a
// Per-GPU utilisation and memory for /metrics, under the same rule as the
// usage sampler below: only GPUs NVML discovered are NVML's to measure.
std::unique_ptr<gpool::worker::NvmlGpuSampler> OpenGpuSampler(const gpool::worker::WorkerFlags& flags,
                                                               const gpool::NodeSpec& node, spdlog::logger& log) {
  if (!flags.spec_path.empty() || node.gpus.empty()) return nullptr;
  auto sampler = gpool::worker::NvmlGpuSampler::Open(flags.nvml_library);
  if (!sampler.ok()) {
    log.info("gpu utilisation not reported error={}", gpool::worker::Q(sampler.status().ToString()));
    return nullptr;
  }
  return std::move(sampler).value();
}

// The HTTP port (/metrics, /healthz, /readyz); null when --http-address is none.
gpool::Result<std::unique_ptr<gpool::worker::WorkerHttp>> StartHttp(const gpool::worker::WorkerFlags& flags,
                                                                     gpool::LoopInbox& inbox,
                                                                     std::function<std::string()> render,
                                                                     std::function<gpool::Status()> ready,
                                                                     spdlog::logger& log) {
  if (flags.http_address.empty()) return std::unique_ptr<gpool::worker::WorkerHttp>();
  gpool::worker::WorkerHttpOptions options;
  options.address = flags.http_address;
  options.tls = {flags.http_cert, flags.http_key, flags.http_client_ca};
  if (!flags.metrics_token_file.empty()) {
    auto token = gpool::ReadTokenFile(flags.metrics_token_file);
    if (!token.ok()) return token.status();
    options.token = *token;
  }
  auto http = gpool::worker::WorkerHttp::Start(options, inbox, std::move(render), std::move(ready));
  if (!http.ok()) return http.status();
  // Scripts and tests that asked for an ephemeral port read it here.
  std::ofstream(flags.data_dir + "/http") << (*http)->address() << "\n";
  log.info("http listening address={} tls={} scrape_token={}", (*http)->address(), options.tls.enabled(),
           options.token.empty() ? "none" : "required");
  if (!options.tls.enabled() && flags.http_insecure) {
    log.warn("http serves plain HTTP address={} insecure_flag=true: the scrape token crosses the network in the clear",
             (*http)->address());
  }
  return http;
}

// --spec node's GPUs may be simulated (no driver, or not the GPUs NVML
// sees), and without a --spec every GPU came from NVML (discover.h).
std::unique_ptr<gpool::worker::NvmlUsageSampler> OpenUsageSampler(const gpool::worker::WorkerFlags& flags,
                                                                   const gpool::NodeSpec& node,
                                                                   std::shared_ptr<spdlog::logger> logger) {
  if (!flags.spec_path.empty() || node.gpus.empty()) return nullptr;
  gpool::worker::NvmlUsageSamplerOptions options;
  options.library = flags.nvml_library;
  options.logger = logger;
  auto sampler = gpool::worker::NvmlUsageSampler::Open(std::move(options));
  if (!sampler.ok()) {
    logger->warn("gpu usage will not be reported error={}", gpool::worker::Q(sampler.status().ToString()));
    return nullptr;
  }
  return std::move(sampler.value());
}

// Dynamic MIG instances are made through NVML only where the GPUs came from
// NVML; a --spec node's are simulated, whatever the host has.
std::unique_ptr<gpool::worker::MigManager> OpenMigManager(const gpool::worker::WorkerFlags& flags,
                                                          const gpool::NodeSpec& node,
                                                          std::shared_ptr<spdlog::logger> logger) {
  if (!flags.spec_path.empty()) return std::make_unique<gpool::worker::SimulatedMigManager>(node);
  if (node.gpus.empty()) return nullptr;
  auto manager = gpool::worker::NvmlMigManager::Open(flags.nvml_library);
  if (!manager.ok()) {
    logger->warn("dynamic MIG instances cannot be created error={}", gpool::worker::Q(manager.status().ToString()));
    return nullptr;
  }
  return std::move(manager.value());
}

int Fail(const std::string& what, const gpool::Status& status) {
  spdlog::error("{} error={}", what, gpool::worker::Q(status.ToString(), 1024));
  return 1;
}

// Fleet mode: the spec is read once and copied into N distinct nodes. Each
// node logs through its own logger, named by the node, over one shared sink,
// so every line says which node it is about.
int RunFleet(const gpool::worker::WorkerFlags& flags, std::shared_ptr<spdlog::logger> logger,
             const gpool::security::ServerKeys& server_keys) {
  using namespace gpool;
  using namespace gpool::worker;
  DiscoveryOptions discovery;
  discovery.spec_path = flags.spec_path;
  discovery.node_name = flags.node_name;
  discovery.logger = logger;
  auto spec = DiscoverNode(discovery);
  if (!spec.ok()) return Fail("node discovery failed", spec.status());
  auto nodes = topology::MakeFleetNodes(*spec, flags.node_name, flags.simulate);
  if (!nodes.ok()) return Fail("cannot derive the simulated nodes", nodes.status());
  // Simulated nodes all live on this machine: peers reach them at loopback,
  // and no bind waits on a lookup of a name that exists nowhere.
  for (NodeSpec& node : *nodes) {
    if (!flags.advertise_address.empty()) node.address = flags.advertise_address;
    if (node.address.empty()) node.address = "127.0.0.1";
  }

  auto node_sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  node_sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ node=%n %v");
  const spdlog::level::level_enum level = logger->level();
  FleetOptions options;
  options.nodes = std::move(nodes).value();
  options.endpoints = flags.coordinators;
  options.token = flags.token;
  options.secure = !flags.insecure;
  options.server_keys = server_keys;
  options.worker_version = kWorkerVersion;
  options.data_dir = flags.data_dir;
  options.base_env = InheritedTaskEnv(ParseEnvList(environ), flags.task_env_pass);
  options.log_retention = LogRetention(flags);
  options.clock = &SystemClock::Get();
  options.logger = logger;
  options.node_logger = [node_sink, level](const std::string& node) {
    auto node_logger = std::make_shared<spdlog::logger>(node, node_sink);
    node_logger->set_level(level);
    node_logger->flush_on(spdlog::level::warn);
    return node_logger;
  };
  auto fleet = Fleet::Open(std::move(options));
  if (!fleet.ok()) return Fail("cannot start the simulated fleet", fleet.status());
  Status run = (*fleet)->Run(g_stop);
  if (!run.ok()) logger->warn("shutdown incomplete error={}", Q(run.ToString()));
  logger->info("gpool-worker exiting");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpool;
  using namespace gpool::worker;

  auto parsed = ParseWorkerFlags(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "gpool-worker: " << parsed.status().message() << "\nRun 'gpool-worker --help' for usage.\n";
    return 2;
  }
  if (parsed->action != ParsedFlags::Action::kRun) {
    std::cout << parsed->text;
    return 0;
  }
  WorkerFlags flags = parsed->flags;

  auto logger = spdlog::stderr_color_mt("worker");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(flags.log_level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);

  if (!flags.token_file.empty()) {
    auto token = ReadTokenFile(flags.token_file);
    if (!token.ok()) return Fail("cannot read token", token.status());
    flags.token = *token;
  }
  // The join token from the environment (a secret is safer there than in
  // argv, which every local user can read); dropped from it so no task
  // inherits it.
  if (const char* join = std::getenv("GPOOL_JOIN_TOKEN"); join != nullptr) {
    if (flags.join_token.empty()) flags.join_token = join;
    unsetenv("GPOOL_JOIN_TOKEN");
  }
  if (Status secure = CheckSecurityFlags(flags); !secure.ok()) {
    std::cerr << "gpool-worker: " << secure.message() << "\nRun 'gpool-worker --help' for usage.\n";
    return 2;
  }
  gpool::security::KeyPair curve_keys;
  gpool::security::ServerKeys server_keys;
  if (flags.insecure) {
    logger->warn("INSECURE: --insecure: the coordinator link is plaintext and unauthenticated; anyone on the "
                 "network can read it, and any process can register as this node");
  } else {
    if (!gpool::security::CurveAvailable()) {
      return Fail("cannot secure the link", Status::FailedPrecondition("libzmq was built without CURVE"));
    }
    if (!flags.key_file.empty()) {
      auto keys = gpool::security::ReadSecretKeyFile(flags.key_file);
      if (!keys.ok()) return Fail("cannot read --key-file", keys.status());
      curve_keys = *keys;
      // What `gpool node pending` shows for this node: the admin compares it before approving.
      logger->info("node key public_key={} fingerprint={} join_token={}", curve_keys.public_key,
                   gpool::KeyFingerprint(curve_keys.public_key), flags.join_token.empty() ? "none" : "given");
    }
    auto servers = gpool::security::ServerKeys::Load(flags.coordinators, flags.coordinator_keys);
    if (!servers.ok()) return Fail("cannot read --coordinator-key", servers.status());
    server_keys = *servers;
  }
  InstallSignalHandlers();

  std::string endpoints;
  for (const auto& e : flags.coordinators) endpoints += (endpoints.empty() ? "" : ",") + e;
  logger->info("gpool-worker starting version={} pid={} coordinators={} data_dir={} simulate={}", kWorkerVersion,
               getpid(), endpoints, Q(flags.data_dir), flags.simulate);

  if (flags.simulate > 0) return RunFleet(flags, logger, server_keys);

  DiscoveryOptions discovery;
  discovery.spec_path = flags.spec_path;
  discovery.node_name = flags.node_name;
  discovery.nvml.library = flags.nvml_library;
  discovery.mig_dynamic = flags.mig_dynamic;
  auto node = DiscoverNode(discovery);
  if (!node.ok()) return Fail("node discovery failed", node.status());
  if (!flags.advertise_address.empty()) node->address = flags.advertise_address;

  auto shares = ConfigureShares(flags, argv[0], *logger);
  if (!shares.ok()) return Fail("cannot prepare the CUDA interposer's directories", shares.status());
  gpool::worker::ShareEnforcementOptions share = std::move(shares).value();
  SystemClock& clock = SystemClock::Get();
  auto supervisor = FindSupervisor(flags, argv[0]);
  if (!supervisor.ok()) return Fail("cannot run tasks", supervisor.status());
  const gpool::worker::RunDirChoice run_dir = gpool::worker::ChooseRunDir(flags.run_dir, flags.data_dir);
  flags.run_dir = run_dir.dir;
  logger->info("task records dir={} why={}", Q(run_dir.dir), Q(run_dir.why));
  std::unique_ptr<CgroupTree> cgroups = OpenCgroups(flags, node->name, *logger);
  PosixProcessLauncherOptions launcher_options;
  launcher_options.logger = logger;
  launcher_options.cgroups = cgroups.get();
  launcher_options.supervisor = *supervisor;
  // The node lease (lease_file.h): renewed below on every acknowledged
  // heartbeat, enforced by each task's supervisor.
  const std::string lease_path = LeasePath(flags.data_dir);
  launcher_options.lease_path = lease_path;
  PosixProcessLauncher launcher(std::move(launcher_options));
  std::unique_ptr<MigManager> mig = OpenMigManager(flags, *node, logger);
  TaskManagerOptions task_options;
  task_options.node = *node;
  task_options.log_dir = flags.data_dir + "/tasks";
  task_options.state_dir = flags.run_dir;
  task_options.base_env = InheritedTaskEnv(ParseEnvList(environ), flags.task_env_pass);
  task_options.cuda_intercept_lib = flags.cuda_intercept_lib;
  task_options.share = std::move(share);
  task_options.log_max_bytes = flags.task_log_max_mib << 20;
  task_options.log_retention = LogRetention(flags);
  task_options.launcher = &launcher;
  task_options.adopt_tasks = true;  // tasks outlive this process; adopt what a previous one left
  task_options.rsh_agent = PrepareRshAgent(flags, task_options.log_dir, *logger);
  task_options.private_hosts = geteuid() == 0;  // a mount namespace of their own needs root
  task_options.exclusive_cores_affinity_fallback = flags.exclusive_cores_fallback == "affinity";
  {
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    task_options.rgpu.server = gpool::worker::ChooseRgpuServer(flags.rgpu_server, self);
    task_options.rgpu.address = flags.rgpu_address;
    logger->info("rgpu sessions server={} address={}",
                 task_options.rgpu.server.empty() ? "none" : task_options.rgpu.server, flags.rgpu_address);
  }
  if (Status isolation = ConfigureIsolation(flags, task_options.isolation, *logger); !isolation.ok()) {
    return Fail("cannot configure task isolation", isolation);
  }
  gpool::DiskGuardOptions disk_options;
  disk_options.path = flags.data_dir;
  disk_options.reserve_bytes = flags.disk_reserve_mib << 20;
  auto disk = std::make_unique<gpool::DiskGuard>(disk_options);
  task_options.disk = disk.get();
  task_options.mig = mig.get();
  task_options.clock = &clock;
  auto tasks = TaskManager::Open(std::move(task_options));
  if (!tasks.ok()) return Fail("cannot open the task manager", tasks.status());

  ExecManagerOptions exec_options;
  exec_options.task_pid = [tasks = tasks->get()](const gpool::TaskId& id) { return tasks->RunningPid(id); };
  exec_options.clock = &clock;
  exec_options.logger = logger;
  if (flags.cgroup_root != "none") exec_options.cgroup_root = flags.cgroup_root;
  auto exec = ExecManager::Open(std::move(exec_options));
  if (!exec.ok()) return Fail("cannot open the exec manager", exec.status());

  auto gpu_usage = OpenUsageSampler(flags, *node, logger);
  auto gpu_sampler = OpenGpuSampler(flags, *node, *logger);
  // Health: the link reports it; its silence is one of the checks.
  Link* link_for_health = nullptr;
  // The spec's labels and the operator's, which the coordinator pushes:
  // the self-repair switches are read from it at each action.
  LabelOverlay labels(node->labels);
  std::unique_ptr<HealthMonitor> health = BuildHealthMonitor(
      flags, *node, &clock, [&link_for_health] { return link_for_health ? link_for_health->silent_ms() : -1; },
      logger, [manager = tasks->get()](uint32_t gpu) { return manager->GpuHeld(gpu); },
      [&labels](std::string_view label) { return labels.Off(label); });
  NodeHostOptions host_options;
  host_options.tasks = tasks->get();
  host_options.exec = exec->get();
  host_options.gpu_usage = gpu_usage.get();
  host_options.gpu_sampler = gpu_sampler.get();
  host_options.health = health.get();
  host_options.labels = &labels;
  host_options.renew_lease = [&clock, lease_path, logger](int64_t sent_ms, int64_t lease_ms) {
    // The link's clock is steady_clock; the lease counts in CLOCK_MONOTONIC
    // (the same clock on Linux; the offset keeps it right if not).
    const int64_t sent_mono = sent_ms + (MonotonicNowMs() - clock.MonoMs());
    auto renewed = RenewLease(lease_path, sent_mono, lease_ms);
    if (!renewed.ok()) {
      logger->warn("node lease not renewed path={} error={}", lease_path, renewed.status().ToString());
    }
  };
  NodeHost host(std::move(host_options));
  LinkOptions link_options;
  link_options.endpoints = flags.coordinators;
  link_options.token = flags.token;
  link_options.join_token = flags.join_token;
  link_options.worker_version = kWorkerVersion;
  link_options.host = &host;
  link_options.clock = &clock;
  auto link = Link::Open(std::move(link_options));
  if (!link.ok()) return Fail("cannot open the coordinator link", link.status());
  link_for_health = link->get();

  AgentOptions agent_options;
  agent_options.tasks = tasks->get();
  agent_options.link = link->get();
  agent_options.clock = &clock;
  agent_options.health = health.get();
  agent_options.exec = exec->get();
  agent_options.curve_keys = curve_keys;
  agent_options.server_keys = server_keys;
  auto inbox = LoopInbox::Open();
  if (!inbox.ok()) return Fail("cannot start the HTTP port", inbox.status());
  agent_options.inbox = inbox->get();
  auto agent = Agent::Open(std::move(agent_options));
  if (!agent.ok()) return Fail("cannot start the agent", agent.status());
  auto render_metrics = [&] {
    WorkerMetricsInput in;
    in.node = node->name;
    in.version = kWorkerVersion;
    in.link = &(*link)->stats();
    in.registered = (*link)->registered();
    in.coordinator_silent_ms = (*link)->silent_ms();
    in.tasks_running = (*tasks)->Running().size();
    in.task_logs = (*tasks)->log_retention_totals();
    in.gpus = &node->gpus;
    in.health = health ? &health->conditions() : nullptr;
    const std::vector<GpuSample> samples = gpu_sampler ? gpu_sampler->Sample() : std::vector<GpuSample>{};
    in.samples = &samples;
    return RenderWorkerMetrics(in);
  };
  // Ready: registered with a coordinator (the leader), so it can be given work.
  auto readiness = [&]() -> Status {
    if ((*link)->registered()) return Status::Ok();
    return Status::Unavailable("not registered with a coordinator (trying " + (*link)->endpoint() + ")");
  };
  auto http = StartHttp(flags, **inbox, render_metrics, readiness, *logger);
  if (!http.ok()) return Fail("cannot start the HTTP port", http.status());

  Status run = (*agent)->Run(g_stop);
  (*inbox)->Close();  // scrapes waiting on the loop, which has stopped, return now
  http->reset();
  if (!run.ok()) logger->warn("shutdown incomplete error={}", Q(run.ToString()));
  logger->info("gpool-worker exiting");
  return 0;
}
