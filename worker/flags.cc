#include "protocol/base/endpoint.h"
#include "protocol/http/http_server.h"
#include "protocol/validate.h"
#include "worker/flags.h"

#include "worker/cuda/object_costs.h"

#include "worker/runner/task_isolation.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <cxxopts.hpp>

#include "worker/version.h"

namespace gpool::worker {
namespace {

// --simulate N, parsed here rather than by cxxopts so a bad value gets a
// message that says what is allowed.
// A whole number from 1 to `max` for `flag`; `what` names it in messages
// ("a number of nodes").
Result<uint64_t> ParseCount(const std::string& flag, const std::string& text, uint64_t max, const std::string& what) {
  const std::string range = what + " from 1 to " + std::to_string(max);
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument(flag + ": '" + text + "' is not " + range);
  }
  const unsigned long n = std::stoul(text);
  if (n == 0 || n > max) return Status::InvalidArgument(flag + ": " + text + " is out of range: expected " + range);
  return static_cast<uint64_t>(n);
}

// ParseCount, or 0 ("no limit").
Result<uint64_t> ParseLimit(const std::string& flag, const std::string& text, uint64_t max, const std::string& what) {
  if (text == "0") return uint64_t{0};
  auto count = ParseCount(flag, text, max, what);
  if (!count.ok()) return Status::InvalidArgument(count.status().message() + ", or 0 for no limit");
  return count;
}

}  // namespace

Result<std::vector<std::string>> ParseEndpoints(const std::string& list) {
  // A worker connects: no ':*' port, and a scheme is required (tcp://, ipc://, inproc://).
  return ParseEndpointList(list, "--coordinator", /*default_tcp=*/false);
}

Result<ParsedFlags> ParseWorkerFlags(int argc, const char* const* argv) {
  cxxopts::Options options("gpool-worker",
                           "gpool node agent: registers this node with the coordinator and runs its tasks");
  WorkerFlags defaults;
  // clang-format off
  options.add_options()
    ("coordinator", "Coordinator worker-channel endpoints, comma-separated; each reconnect tries the next",
     cxxopts::value<std::string>()->default_value("tcp://127.0.0.1:7401"), "A[,B...]")
    ("node-name", "Node name (default: the spec's name, else the hostname)", cxxopts::value<std::string>(), "NAME")
    ("advertise-address", "IP address other nodes reach this one at, for gang tasks' hosts files (default: the spec's; fleet mode: 127.0.0.1)",
     cxxopts::value<std::string>(), "IP")
    ("spec", "Node spec file (YAML or JSON) instead of probing the host", cxxopts::value<std::string>(), "FILE")
    ("data-dir", "Worker data directory; task logs go to DIR/tasks/",
     cxxopts::value<std::string>()->default_value(defaults.data_dir), "DIR")
    ("run-dir", "Where tasks' within-boot records go (supervisor state, hosts files): a tmpfs keeps ~10 small "
                "files per task off the data disk (default: /run/gpool-worker/ID when /run is a tmpfs, else "
                "DATA_DIR/tasks)", cxxopts::value<std::string>(), "DIR")
    ("token", "Shared secret put in every message header", cxxopts::value<std::string>(), "TOKEN")
    ("token-file", "Read the shared secret from FILE", cxxopts::value<std::string>(), "FILE")
    ("key-file", "CurveZMQ: this node's secret key file (gpool admin keygen; mode 0600); the coordinator binds "
     "the node's name to its public key once the node is admitted (gpool node approve, or --join-token)", cxxopts::value<std::string>(), "FILE")
    ("join-token", "CurveZMQ: a single-use join token (gpool admin join-token create) that admits this node "
     "on its first registration, instead of waiting for an admin's approval; or set GPOOL_JOIN_TOKEN",
     cxxopts::value<std::string>(), "TOKEN")
    ("coordinator-key", "CurveZMQ: the coordinator's public key file, or one per --coordinator endpoint "
     "(comma-separated, same order); an endpoint's entry may name several files joined by '+', tried in turn "
     "(a replica whose key is being rotated)", cxxopts::value<std::string>(), "FILE[,FILE...]")
    ("insecure", "Plaintext and unauthenticated instead of CurveZMQ: a trusted single-user machine only")
    ("nvml-library", "NVML shared library to probe GPUs with",
     cxxopts::value<std::string>()->default_value(defaults.nvml_library), "PATH")
    ("cuda-interposer", "gpool's CUDA interposer (libgpool-cuda.so.1) that holds GPU-share tasks to their memory "
     "and compute share, put first on their LD_LIBRARY_PATH as libcuda.so.1 (default: ../lib/gpool/ or cuda/ "
     "next to gpool-worker); 'none': shares are not interposed", cxxopts::value<std::string>(), "PATH|none")
    ("cuda-real-driver", "The node's real libcuda.so.1, which the interposer forwards to (default: the first of "
     "/usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib/aarch64-linux-gnu, /usr/local/nvidia/lib64 that has it)",
     cxxopts::value<std::string>(), "PATH")
    ("cuda-ledger-dir", "Where each interposed attempt's allocation ledger lives (gpool-cuda-<job>-<task>-<attempt>, "
     "removed when the attempt ends); the worker's own, made 0711 at start", 
     cxxopts::value<std::string>()->default_value(defaults.cuda_ledger_dir), "DIR")
    ("cuda-activity-dir", "Where interposed processes publish which GPU they launch on, for burst-share "
     "(GPOOL_CUDA_ACTIVITY); the worker's own, made 01777 at start and swept of stale files",
     cxxopts::value<std::string>()->default_value(defaults.cuda_activity_dir), "DIR")
    ("share-memory-tolerance-mib", "A GPU-share task whose sampled GPU memory (NVML) exceeds its share by more than "
     "this or 5 % of the share, whichever is larger, on two samples in a row is killed and fails (the interposer was "
     "bypassed)", cxxopts::value<std::string>()->default_value(std::to_string(defaults.share_memory_tolerance_mib)),
     "MIB")
    ("cuda-object-costs", "What gpool's interposer charges a GPU share for each context, loaded module and stream "
     "the task creates, as the driver holds device memory for them: default (the documented estimates), none, "
     "or context=SIZE,module=SIZE,stream=SIZE (K/M/G suffixes)",
     cxxopts::value<std::string>()->default_value(defaults.cuda_object_costs), "COSTS")
    ("allow-unenforced-shares", "Run GPU-share tasks even where neither the CUDA interposer nor the intercept "
     "library is present to hold their limits (default: such tasks fail to start, with the reason on the job)")
    ("cuda-intercept-lib", "CUDA interception library (HAMi-core libvgpu.so) preloaded into GPU-share tasks "
     "instead of gpool's interposer", cxxopts::value<std::string>(), "PATH")
    ("rgpu-server", "gpool-rgpu-server, run for each remote-GPU session placed here (default: next to "
     "gpool-worker or in rgpu/ beside it); 'none': this node opens no sessions", cxxopts::value<std::string>(),
     "PATH|none")
    ("http-address", "HOST:PORT for /metrics and /healthz (Prometheus); port 0: ephemeral, written to "
     "DATA_DIR/http; 'none': off (the default). Needs --http-cert and --http-key, or --http-insecure. "
     "Production: a fixed port, e.g. 0.0.0.0:7481", cxxopts::value<std::string>()->default_value("none"),
     "HOST:PORT")
    ("http-cert", "PEM certificate (chain) of the HTTP port: it serves HTTPS. Required, with --http-key, on "
     "every --http-address unless --http-insecure", cxxopts::value<std::string>()->default_value(""), "FILE")
    ("http-key", "PEM private key of --http-cert", cxxopts::value<std::string>()->default_value(""), "FILE")
    ("http-client-ca", "PEM CA certificates: HTTPS clients must present a certificate one of them signed",
     cxxopts::value<std::string>()->default_value(""), "FILE")
    ("http-insecure", "Serve plain HTTP on --http-address, loopback included (the scrape token travels in the "
     "clear; warned at start)")
    ("metrics-token-file", "File holding the bearer token a scrape of /metrics must send (the scrape "
     "credential); without it /metrics is open to whoever reaches the address",
     cxxopts::value<std::string>()->default_value(""), "FILE")
    ("rgpu-address", "IPv4 address session servers listen on; clients connect to it, so on a cluster give the "
     "node's data-plane address", cxxopts::value<std::string>()->default_value(defaults.rgpu_address), "IP")
    ("cgroup-root", "Where the cgroup hierarchies are mounted (v2, or v1 with a freezer): each task runs in a "
     "cgroup of its own that holds its whole process tree and its CPU and memory limits; 'none' tracks tasks by "
     "process group only", cxxopts::value<std::string>()->default_value(defaults.cgroup_root), "DIR")
    ("exclusive-cores-fallback", "Tasks with exclusive whole cores where no cpuset cgroup can be made: 'refuse' "
     "(they fail to start, saying why) or 'affinity' (pinned by sched_setaffinity alone, which a task can undo)",
     cxxopts::value<std::string>()->default_value(defaults.exclusive_cores_fallback), "MODE")
    ("task-user", "Who tasks run as when the coordinator maps no identity for their owner: NAME or UID[:GID] "
     "(never root unless this says root)", cxxopts::value<std::string>()->default_value(defaults.task_user),
     "USER")
    ("task-env-pass", "Worker environment variables tasks inherit besides PATH, LANG, LC_* and TZ "
     "(comma-separated names, or prefixes ending in '*', e.g. NCCL_*,HTTPS_PROXY); a GPOOL_* name only exactly",
     cxxopts::value<std::string>()->default_value(""), "NAMES")
    ("gpu-device-nodes", "Device node of GPU i ('%u' is i): a task may open only its granted GPUs' nodes "
     "(devices cgroup); '' turns the device rules off",
     cxxopts::value<std::string>()->default_value(defaults.gpu_device_nodes), "PATTERN")
    ("vendor-device-root", "Directory of the other accelerator families' device nodes (davinciN, xpuN, neuronN, "
     "gcuN, kfd, dri/renderD...): a task may open only its own devices' nodes; '' turns these rules off",
     cxxopts::value<std::string>()->default_value(defaults.vendor_device_root), "DIR")
    ("task-isolation", "on: tasks run as --task-user or their owner, in their own PID and mount namespaces, "
     "limited to their GPUs' device nodes (needs root); off: as the worker, as before",
     cxxopts::value<std::string>()->default_value("on"), "on|off")
    ("supervisor", "The gpool-task-supervisor executable each task runs under (default: the one next to "
     "gpool-worker)", cxxopts::value<std::string>(), "PATH")
    ("cli", "The gpool CLI gang tasks' mpirun reaches sibling tasks through (as gpool-rsh, `gpool exec-rsh`; "
     "default: the one next to gpool-worker)", cxxopts::value<std::string>(), "PATH")
    ("task-log-max-mib", "Cap on each task's log on disk (MiB, 1 to 1048576): past it the last half moves to "
     "<log>.1 and the log starts again with a line saying so",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.task_log_max_mib)), "MIB")
    ("task-log-retention-hours", "Logs of ended tasks (exit acknowledged) not written for this long are removed "
     "(0: kept whatever their age; up to 87600)",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.task_log_retention_hours)), "HOURS")
    ("task-logs-max", "At most this many logs of ended tasks are kept, the newest (0: no limit; up to 100000000)",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.task_logs_max)), "N")
    ("task-logs-max-gib", "The logs of ended tasks kept hold at most this many GiB, the newest (0: no limit; up "
     "to 1048576)",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.task_logs_max_gib)), "GIB")
    ("disk-reserve-mib", "Free space in --data-dir at or below which binds are refused (Unavailable: disk full); "
     "running tasks keep running and binds are accepted again once space returns (MiB, 1 to 1048576)",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.disk_reserve_mib)), "MIB")
    ("mig-dynamic", "Offer MIG-enabled GPUs without instances for dynamic MIG: the scheduler picks instances and "
     "the worker creates and destroys them (needs root or CAP_SYS_ADMIN)")
    ("health", "Health monitor: on or off (GPU XID/ECC/remap/NVLink/lost, NIC, fabric manager, peermem, disk, "
     "coordinator reachability)", cxxopts::value<std::string>()->default_value("on"), "on|off")
    ("health-xid-hold-ms", "How long an XID condition stays raised after the GPU's last XID event",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.health.xid_hold_ms)), "MS")
    ("health-gpu-max-temp-c", "GPU temperature that raises a thermal condition (0: off)",
     cxxopts::value<std::string>()->default_value("0"), "C")
    ("health-sysfs-root", "Where sysfs is mounted, for the NIC checks",
     cxxopts::value<std::string>()->default_value(defaults.health.sysfs_root), "DIR")
    ("health-disk-min-free-mib", "Free space in --data-dir below which the node reports disk-low",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.health.disk_min_free_mib)), "MIB")
    ("health-peermem", "Require the nvidia_peermem module: auto (when the node has NVIDIA GPUs and InfiniBand), "
     "required or off", cxxopts::value<std::string>()->default_value(defaults.health.peermem), "MODE")
    ("health-peermem-reload", "Run 'modprobe nvidia_peermem' when it is missing (at most every 10 minutes)")
    ("health-gpu-reset", "Self-repair: reset a GPU with uncorrectable ECC errors or a pending row remap once no "
     "task holds it (drained first), check it and return it: on or off (also off on a node labelled "
     "repair.gpool.io/gpu-reset=off)", cxxopts::value<std::string>()->default_value("on"), "on|off")
    ("health-gpu-reset-command", "The GPU reset command, {index} for the GPU (default: nvidia-smi --gpu-reset -i "
     "{index}); on a --spec node GPUs are reset only when this is given", cxxopts::value<std::string>(), "CMD")
    ("health-fabricmanager-restart", "Self-repair: restart a stopped NVIDIA fabric manager on an NVSwitch system "
     "(systemctl restart nvidia-fabricmanager, at most every 10 minutes) and alert: on or off (also off on a node "
     "labelled repair.gpool.io/fabricmanager-restart=off)", cxxopts::value<std::string>()->default_value("on"),
     "on|off")
    ("health-xid-interval-ms", "How often XID events are read",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.health.xid_interval_ms)), "MS")
    ("health-gpu-interval-ms", "How often GPU state is checked (ECC, retired pages, row remap, NVLink, lost, thermal)",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.health.gpu_interval_ms)), "MS")
    ("health-nic-interval-ms", "How often InfiniBand and Ethernet ports are checked",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.health.nic_interval_ms)), "MS")
    ("health-service-interval-ms", "How often the fabric manager, nvidia_peermem, free disk and the coordinator's "
     "reachability are checked",
     cxxopts::value<std::string>()->default_value(std::to_string(defaults.health.service_interval_ms)), "MS")
    ("log-level", "trace, debug, info, warn or error", cxxopts::value<std::string>()->default_value("info"), "LEVEL")
    ("simulate", "Fleet mode: run N simulated nodes (1 to 10000) from --spec in this process, each with its own "
     "connection, named <name>-0001...; tasks are simulated, no program runs", cxxopts::value<std::string>(), "N")
    ("h,help", "Print this help")
    ("version", "Print the version");
  // clang-format on

  ParsedFlags parsed;
  try {
    auto result = options.parse(argc, argv);
    if (!result.unmatched().empty()) {
      return Status::InvalidArgument("unexpected argument '" + result.unmatched().front() + "'");
    }
    if (result.count("help")) {
      parsed.action = ParsedFlags::Action::kHelp;
      parsed.text = options.help();
      return parsed;
    }
    if (result.count("version")) {
      parsed.action = ParsedFlags::Action::kVersion;
      parsed.text = std::string("gpool-worker ") + kWorkerVersion + "\n";
      return parsed;
    }
    WorkerFlags& f = parsed.flags;
    GPOOL_ASSIGN_OR_RETURN(f.coordinators, ParseEndpoints(result["coordinator"].as<std::string>()));
    if (result.count("node-name")) {
      f.node_name = result["node-name"].as<std::string>();
      if (f.node_name.empty()) return Status::InvalidArgument("--node-name: must not be empty");
    }
    if (result.count("advertise-address")) {
      f.advertise_address = result["advertise-address"].as<std::string>();
      if (!IsIpAddress(f.advertise_address)) {
        return Status::InvalidArgument("--advertise-address: '" + f.advertise_address.substr(0, 64) +
                                       "' is not an IPv4 or IPv6 address");
      }
    }
    if (result.count("spec")) {
      f.spec_path = result["spec"].as<std::string>();
      if (f.spec_path.empty()) return Status::InvalidArgument("--spec: must not be empty");
    }
    f.data_dir = result["data-dir"].as<std::string>();
    if (result.count("run-dir")) {
      f.run_dir = result["run-dir"].as<std::string>();
      if (f.run_dir.empty()) return Status::InvalidArgument("--run-dir: must not be empty");
    }
    if (result.count("token")) f.token = result["token"].as<std::string>();
    if (result.count("token-file")) f.token_file = result["token-file"].as<std::string>();
    if (result.count("key-file")) f.key_file = result["key-file"].as<std::string>();
    if (result.count("join-token")) f.join_token = result["join-token"].as<std::string>();
    if (result.count("coordinator-key")) {
      const std::string list = result["coordinator-key"].as<std::string>();
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = list.find(',', start);
        std::string file = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (file.empty()) return Status::InvalidArgument("--coordinator-key: an empty file name");
        f.coordinator_keys.push_back(std::move(file));
        start = comma == std::string::npos ? list.size() + 1 : comma + 1;
      }
    }
    f.insecure = result.count("insecure") > 0;
    f.nvml_library = result["nvml-library"].as<std::string>();
    f.nvml_library_given = result.count("nvml-library") > 0;
    const std::string health = result["health"].as<std::string>();
    if (health != "on" && health != "off") return Status::InvalidArgument("--health: '" + health + "' is not on or off");
    f.health.enabled = health == "on";
    GPOOL_ASSIGN_OR_RETURN(const uint64_t hold, ParseCount("--health-xid-hold-ms",
                                                           result["health-xid-hold-ms"].as<std::string>(),
                                                           7ULL * 24 * 3600 * 1000, "a time in ms"));
    f.health.xid_hold_ms = static_cast<int64_t>(hold);
    if (result["health-gpu-max-temp-c"].as<std::string>() != "0") {
      GPOOL_ASSIGN_OR_RETURN(const uint64_t temp, ParseCount("--health-gpu-max-temp-c",
                                                             result["health-gpu-max-temp-c"].as<std::string>(), 200,
                                                             "degrees Celsius"));
      f.health.gpu_max_temp_c = static_cast<uint32_t>(temp);
    }
    f.health.sysfs_root = result["health-sysfs-root"].as<std::string>();
    if (f.health.sysfs_root.empty()) return Status::InvalidArgument("--health-sysfs-root: must not be empty");
    GPOOL_ASSIGN_OR_RETURN(f.health.disk_min_free_mib,
                           ParseCount("--health-disk-min-free-mib", result["health-disk-min-free-mib"].as<std::string>(),
                                      1ULL << 30, "a size in MiB"));
    f.health.peermem = result["health-peermem"].as<std::string>();
    if (f.health.peermem != "auto" && f.health.peermem != "required" && f.health.peermem != "off") {
      return Status::InvalidArgument("--health-peermem: '" + f.health.peermem + "' is not auto, required or off");
    }
    f.health.peermem_reload = result.count("health-peermem-reload") > 0;
    for (auto [flag, field] : {std::pair{"health-gpu-reset", &f.health.gpu_reset},
                               std::pair{"health-fabricmanager-restart", &f.health.fabricmanager_restart}}) {
      const std::string value = result[flag].as<std::string>();
      if (value != "on" && value != "off") {
        return Status::InvalidArgument(std::string("--") + flag + ": '" + value + "' is not on or off");
      }
      *field = value == "on";
    }
    if (result.count("health-gpu-reset-command")) {
      f.health.gpu_reset_command = result["health-gpu-reset-command"].as<std::string>();
      if (f.health.gpu_reset_command.find_first_not_of(' ') == std::string::npos) {
        return Status::InvalidArgument("--health-gpu-reset-command: give a command");
      }
    }
    for (auto [flag, field] : {std::pair{"health-xid-interval-ms", &f.health.xid_interval_ms},
                               std::pair{"health-gpu-interval-ms", &f.health.gpu_interval_ms},
                               std::pair{"health-nic-interval-ms", &f.health.nic_interval_ms},
                               std::pair{"health-service-interval-ms", &f.health.service_interval_ms}}) {
      GPOOL_ASSIGN_OR_RETURN(const uint64_t ms, ParseCount(std::string("--") + flag, result[flag].as<std::string>(),
                                                           3'600'000, "a time in ms"));
      *field = static_cast<int64_t>(ms);
    }
    if (result.count("cuda-intercept-lib")) f.cuda_intercept_lib = result["cuda-intercept-lib"].as<std::string>();
    if (result.count("cuda-interposer")) {
      f.cuda_interposer = result["cuda-interposer"].as<std::string>();
      if (f.cuda_interposer.empty()) return Status::InvalidArgument("--cuda-interposer: give a PATH or none");
    }
    if (result.count("cuda-real-driver")) f.cuda_real_driver = result["cuda-real-driver"].as<std::string>();
    f.cuda_object_costs = result["cuda-object-costs"].as<std::string>();
    if (cuda::ObjectCosts costs; f.cuda_object_costs.empty() || !cuda::ParseObjectCosts(f.cuda_object_costs.c_str(), &costs)) {
      return Status::InvalidArgument("--cuda-object-costs: '" + f.cuda_object_costs +
                                     "' is not default, none or context=SIZE,module=SIZE,stream=SIZE");
    }
    f.allow_unenforced_shares = result.count("allow-unenforced-shares") > 0;
    if (result.count("rgpu-server")) f.rgpu_server = result["rgpu-server"].as<std::string>();
    f.rgpu_address = result["rgpu-address"].as<std::string>();
    f.http_address = result["http-address"].as<std::string>();
    if (f.http_address == "none") f.http_address.clear();
    f.http_cert = result["http-cert"].as<std::string>();
    f.http_key = result["http-key"].as<std::string>();
    f.http_client_ca = result["http-client-ca"].as<std::string>();
    f.http_insecure = result.count("http-insecure") > 0;
    if (Status tls = http::CheckHttpTlsFlags(f.http_address, {f.http_cert, f.http_key, f.http_client_ca},
                                             f.http_insecure);
        !tls.ok()) {
      return tls;
    }
    f.metrics_token_file = result["metrics-token-file"].as<std::string>();
    f.cuda_ledger_dir = result["cuda-ledger-dir"].as<std::string>();
    f.cuda_activity_dir = result["cuda-activity-dir"].as<std::string>();
    GPOOL_ASSIGN_OR_RETURN(f.share_memory_tolerance_mib,
                           ParseCount("--share-memory-tolerance-mib",
                                      result["share-memory-tolerance-mib"].as<std::string>(), 1u << 20,
                                      "a size in MiB"));
    f.log_level = result["log-level"].as<std::string>();
    f.mig_dynamic = result.count("mig-dynamic") > 0;
    f.cgroup_root = result["cgroup-root"].as<std::string>();
    f.exclusive_cores_fallback = result["exclusive-cores-fallback"].as<std::string>();
    if (f.exclusive_cores_fallback != "refuse" && f.exclusive_cores_fallback != "affinity") {
      return Status::InvalidArgument("--exclusive-cores-fallback must be refuse or affinity, not '" +
                                     f.exclusive_cores_fallback + "'");
    }
    f.task_user = result["task-user"].as<std::string>();
    const std::string env_pass = result["task-env-pass"].as<std::string>();
    for (std::string_view rest = env_pass; !rest.empty();) {
      const size_t comma = rest.find(',');
      std::string name(rest.substr(0, comma));
      if (!name.empty()) f.task_env_pass.push_back(std::move(name));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    bool root_allowed = false;
    if (auto user = ParseTaskUser(f.task_user, &root_allowed); !user.ok()) return user.status();
    f.gpu_device_nodes = result["gpu-device-nodes"].as<std::string>();
    f.vendor_device_root = result["vendor-device-root"].as<std::string>();
    const std::string isolation = result["task-isolation"].as<std::string>();
    if (isolation != "on" && isolation != "off") {
      return Status::InvalidArgument("--task-isolation: '" + isolation + "' is neither on nor off");
    }
    f.task_isolation = isolation == "on";
    if (result.count("supervisor")) {
      f.supervisor = result["supervisor"].as<std::string>();
      if (f.supervisor.empty()) return Status::InvalidArgument("--supervisor: must not be empty");
    }
    if (result.count("cli")) {
      f.cli = result["cli"].as<std::string>();
      if (f.cli.empty()) return Status::InvalidArgument("--cli: must not be empty");
    }
    GPOOL_ASSIGN_OR_RETURN(f.task_log_max_mib, ParseCount("--task-log-max-mib",
                                                           result["task-log-max-mib"].as<std::string>(), 1u << 20,
                                                           "a size in MiB"));
    GPOOL_ASSIGN_OR_RETURN(f.task_log_retention_hours,
                           ParseLimit("--task-log-retention-hours", result["task-log-retention-hours"].as<std::string>(),
                                      87'600, "a time in hours"));
    GPOOL_ASSIGN_OR_RETURN(f.task_logs_max, ParseLimit("--task-logs-max", result["task-logs-max"].as<std::string>(),
                                                        100'000'000, "a number of logs"));
    GPOOL_ASSIGN_OR_RETURN(f.task_logs_max_gib, ParseLimit("--task-logs-max-gib",
                                                            result["task-logs-max-gib"].as<std::string>(), 1u << 20,
                                                            "a size in GiB"));
    GPOOL_ASSIGN_OR_RETURN(f.disk_reserve_mib, ParseCount("--disk-reserve-mib",
                                                           result["disk-reserve-mib"].as<std::string>(), 1u << 20,
                                                           "a size in MiB"));
    if (result.count("simulate")) {
      GPOOL_ASSIGN_OR_RETURN(const uint64_t nodes, ParseCount("--simulate", result["simulate"].as<std::string>(),
                                                              kMaxSimulatedNodes, "a number of nodes"));
      f.simulate = static_cast<uint32_t>(nodes);
    }
  } catch (const cxxopts::exceptions::exception& e) {
    return Status::InvalidArgument(e.what());
  }
  const WorkerFlags& f = parsed.flags;
  if (f.data_dir.empty()) return Status::InvalidArgument("--data-dir: must not be empty");
  if (!f.token.empty() && !f.token_file.empty()) {
    return Status::InvalidArgument("--token and --token-file cannot both be given");
  }
  // LD_PRELOAD splits its list at ':' and blanks; such a path would preload
  // something else.
  if (f.cuda_intercept_lib.find_first_of(": \t\n") != std::string::npos) {
    return Status::InvalidArgument("--cuda-intercept-lib: '" + f.cuda_intercept_lib +
                                   "' holds ':' or a blank, which LD_PRELOAD cannot carry");
  }
  // LD_LIBRARY_PATH splits at ':'; the ledger path is built under the dir.
  for (const auto& [flag, path] : {std::pair{"--cuda-interposer", &f.cuda_interposer},
                                   std::pair{"--cuda-real-driver", &f.cuda_real_driver},
                                   std::pair{"--cuda-ledger-dir", &f.cuda_ledger_dir},
                                   std::pair{"--cuda-activity-dir", &f.cuda_activity_dir}}) {
    if (path->find_first_of(":\n") != std::string::npos) {
      return Status::InvalidArgument(std::string(flag) + ": '" + *path + "' holds ':' or a newline");
    }
  }
  if (f.cuda_ledger_dir.empty()) return Status::InvalidArgument("--cuda-ledger-dir: must not be empty");
  if (f.cuda_activity_dir.empty()) return Status::InvalidArgument("--cuda-activity-dir: must not be empty");
  if (f.simulate > 0 && f.spec_path.empty()) {
    return Status::InvalidArgument("--simulate needs --spec FILE: the simulated nodes' devices come from it");
  }
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
  bool level_ok = false;
  for (const char* level : kLevels) level_ok = level_ok || f.log_level == level;
  if (!level_ok) {
    return Status::InvalidArgument("--log-level: '" + f.log_level + "' is not one of trace, debug, info, warn, error");
  }
  return parsed;
}

Status CheckSecurityFlags(const WorkerFlags& flags) {
  if (flags.insecure) {
    if (!flags.key_file.empty() || !flags.coordinator_keys.empty()) {
      return Status::InvalidArgument("--insecure excludes --key-file and --coordinator-key");
    }
    // A join token binds a key to a name: without CurveZMQ there is no key.
    if (!flags.join_token.empty()) return Status::InvalidArgument("--join-token (GPOOL_JOIN_TOKEN) needs --key-file");
    return Status::Ok();
  }
  // A simulated fleet makes a key pair per node at start (fleet.h).
  if (flags.key_file.empty() && flags.simulate == 0) {
    return Status::InvalidArgument("no --key-file: generate this node's key pair with 'gpool admin keygen --out "
                                   "/etc/gpool/node' and pass --key-file /etc/gpool/node.key --coordinator-key "
                                   "/etc/gpool/coordinator.pub, or run plaintext with --insecure");
  }
  if (flags.coordinator_keys.empty()) {
    return Status::InvalidArgument("--key-file needs --coordinator-key: the coordinator's public key file");
  }
  // One token admits one node: a fleet of simulated nodes cannot share it.
  if (!flags.join_token.empty() && flags.simulate > 0) {
    return Status::InvalidArgument("--join-token admits one node; a --simulate fleet cannot share it");
  }
  return Status::Ok();
}

}  // namespace gpool::worker
