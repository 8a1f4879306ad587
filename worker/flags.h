// Command-line flags of gpool-worker, parsed into a plain struct so the
// parsing is testable without running the binary.
//
//   --coordinator A[,B,...]  worker-channel endpoints (default tcp://127.0.0.1:7401);
//                            each reconnect tries the next one
//   --node-name NAME         default: the spec's name, else the hostname
//   --advertise-address IP   the address other nodes reach this one at, sent
//                            in gang tasks' hosts files so no worker looks the
//                            hostname up (default: the spec's, else none;
//                            fleet mode: 127.0.0.1)
//   --spec FILE              node spec (YAML or JSON) instead of probing
//   --data-dir DIR           default /var/lib/gpool/worker; task logs in DIR/tasks/
//   --token T | --token-file F   shared secret put in every message header
//   --key-file F             CurveZMQ: this node's secret key file (0600)
//   --coordinator-key F[,G]  the coordinator's public key file(s), one for
//                            all endpoints or one per --coordinator endpoint
//   --insecure               plaintext instead (one of --key-file, --insecure)
//   --join-token T           CurveZMQ: a join token (`gpool admin join-token
//                            create`) that admits this node on its first
//                            registration; also GPOOL_JOIN_TOKEN (read by main)
//   --nvml-library PATH      default libnvidia-ml.so.1
//   --cuda-interposer PATH|none  gpool's libgpool-cuda.so.1 for GPU-share
//                            tasks (default: next to gpool-worker, see
//                            share_enforcement.h; none: not interposed)
//   --cuda-real-driver PATH  the node's real libcuda.so.1 (default: found)
//   --cuda-ledger-dir DIR    the interposer's per-attempt ledgers (/dev/shm)
//   --share-memory-tolerance-mib N  the bypass catch's tolerance (64; or 5 %)
//   --cuda-object-costs COSTS  what the interposer charges a share per context,
//                            module and stream (default; none; or
//                            context=SIZE,module=SIZE,stream=SIZE:
//                            worker/cuda/object_costs.h)
//   --allow-unenforced-shares  run GPU-share tasks even when nothing here can
//                            hold their limits (the interposer or the
//                            intercept library missing); default: refuse them
//   --cuda-intercept-lib PATH  CUDA interception library (HAMi-core's
//                            libvgpu.so) preloaded into GPU-share tasks
//                            instead of gpool's interposer
//   --supervisor PATH        gpool-task-supervisor (default: next to gpool-worker)
//   --cli PATH               the gpool CLI that gang tasks' MPI uses as its
//                            remote agent (gpool exec-rsh; default: `gpool`
//                            next to gpool-worker, else none)
//   --health-gpu-reset on|off, --health-gpu-reset-command CMD,
//   --health-fabricmanager-restart on|off   self-repair (health/gpu_repair.h)
//   --log-level L            trace|debug|info|warn|error (default info)
//   --simulate N             fleet mode: N simulated nodes (1..10000) from
//                            --spec in this one process, each with its own
//                            connection; tasks are simulated (fleet.h)
//   --help, --version
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/base/token_file.h"

namespace gpool::worker {

struct WorkerFlags {
  std::vector<std::string> coordinators;
  std::string node_name;
  std::string advertise_address;  // NodeSpec.address; empty: the spec's
  std::string spec_path;
  std::string data_dir = "/var/lib/gpool/worker";
  // Tasks' within-boot records (TaskManagerOptions::state_dir). Empty: the
  // default, RunDirFor(data_dir): /run/gpool-worker/<id> where /run is a
  // tmpfs and the worker can create it, else <data_dir>/tasks.
  std::string run_dir;
  std::string token;
  std::string token_file;
  std::string key_file;                      // CurveZMQ secret key file
  std::string join_token;                    // admits a new node at once (admission enrolment)
  std::vector<std::string> coordinator_keys;  // public key files, see ServerKeys
  bool insecure = false;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string cuda_intercept_lib;  // HAMi-core; set: replaces gpool's interposer for shares
  // gpool's interposer (runner/share_enforcement.h): empty: the one next to
  // gpool-worker, if any; "none": shares are not interposed.
  std::string cuda_interposer;
  std::string cuda_real_driver;  // empty: the first of DefaultRealDriverPaths() that exists
  // The worker's own directories in shared memory (runner/cuda_shared_files.h).
  std::string cuda_ledger_dir = "/dev/shm/gpool-cuda";
  std::string cuda_activity_dir = "/dev/shm/gpool-cuda-activity.d";
  uint64_t share_memory_tolerance_mib = 64;
  // GPOOL_CUDA_OBJECT_COSTS for interposed shares (worker/cuda/object_costs.h).
  std::string cuda_object_costs = "default";
  // The operator's opt-out (issue 50): share tasks run, with their limits as
  // variables only, where no interposer or intercept library is there to
  // hold them. Off: such tasks fail to start with a typed reason.
  bool allow_unenforced_shares = false;
  // rGPU sessions (runner/rgpu_server.h): gpool-rgpu-server ("" the one next
  // to gpool-worker, "none": no sessions here) and the IPv4 address session
  // servers listen on, which clients must reach.
  std::string rgpu_server;
  std::string rgpu_address = "127.0.0.1";
  // /metrics and /healthz (metrics/worker_http.h): HOST:PORT, port 0 for an
  // ephemeral one (written to DATA_DIR/http); empty: off, the default, since
  // a port that is on must serve TLS or say --http-insecure (issue 48) and
  // a default can do neither. A bearer token from metrics_token_file, when
  // given, is required on /metrics.
  std::string http_address;
  // TLS for it, as the coordinator's (http::CheckHttpTlsFlags): plain HTTP
  // only with --http-insecure, on every address.
  std::string http_cert;
  std::string http_key;
  std::string http_client_ca;
  bool http_insecure = false;
  std::string metrics_token_file;
  // Where the cgroup hierarchies are mounted; "none": tasks are tracked by
  // process group only (their children may escape).
  std::string cgroup_root = "/sys/fs/cgroup";
  // Tasks with exclusive whole cores where no cpuset can be made: "refuse"
  // (they fail to start, saying why) or "affinity" (they run pinned by
  // sched_setaffinity alone, which they could undo).
  std::string exclusive_cores_fallback = "refuse";
  // Issue 31 isolation (runner/task_isolation.h), when the worker is root:
  // who tasks without a run_as mapping run as (NAME or UID[:GID]; "root"
  // or 0 also allows binds to map to uid 0), where GPU i's device node is
  // (%u: the index; empty: no device rules), and the switch itself.
  std::string task_user = "nobody";
  // Worker environment variables tasks inherit beyond PATH and the locale
  // (InheritedTaskEnv): names, or prefixes ending in '*'.
  std::vector<std::string> task_env_pass;
  std::string gpu_device_nodes = "/dev/nvidia%u";
  // Where other accelerator families' device nodes live (davinciN, kfd,
  // dri/renderD...); empty: no device rules for them.
  std::string vendor_device_root = "/dev";
  bool task_isolation = true;
  // gpool-task-supervisor, which every task runs under; empty: the one in
  // gpool-worker's own directory.
  std::string supervisor;
  // The gpool CLI for MPI's remote agent (job_hosts.h); empty: the one in
  // gpool-worker's own directory, if there is one.
  std::string cli;
  uint64_t task_log_max_mib = 256;  // each task's log on disk; older output moves to <log>.1
  // Logs of tasks no longer live that the worker keeps (task_log_janitor.h);
  // 0 in any: no limit of that kind.
  uint64_t task_log_retention_hours = 168;
  uint64_t task_logs_max = 10'000;
  uint64_t task_logs_max_gib = 0;
  // Free space in --data-dir at or below which new tasks are refused (a full
  // disk, docs/operations.md 6.4); running ones keep running.
  uint64_t disk_reserve_mib = 64;
  bool mig_dynamic = false;        // --mig-dynamic: empty MIG-enabled GPUs become dynamic MIG
  std::string log_level = "info";
  uint32_t simulate = 0;           // --simulate N: fleet of N simulated nodes; 0: one real node
  // --nvml-library was given: a simulated node (--spec) then watches that
  // library's GPUs for health (how tests inject faults into a fake NVML).
  bool nvml_library_given = false;
  // The health monitor (worker/health/): --health off turns it off.
  struct Health {
    bool enabled = true;
    int64_t xid_hold_ms = 300'000;      // an XID condition lasts this long after the GPU's last XID
    uint32_t gpu_max_temp_c = 0;        // 0: no thermal check
    std::string sysfs_root = "/sys";    // NIC state (InfiniBand, Ethernet)
    uint64_t disk_min_free_mib = 1024;  // free space in --data-dir below this: disk-low
    std::string peermem = "auto";       // nvidia_peermem: auto, required or off
    bool peermem_reload = false;        // modprobe it when missing (at most every 10 minutes)
    // Self-repair (issue 50, health/gpu_repair.h, health/service_check.h):
    // reset a GPU with uncorrectable ECC errors or a pending row remap once
    // its tasks end, and restart a stopped fabric manager. Each is also off
    // on a node whose spec labels it repair.gpool.io/<action>=off.
    bool gpu_reset = true;
    // The reset command ("{index}": the GPU's index); empty: nvidia-smi
    // --gpu-reset -i {index}. A --spec node's GPUs are not the host's: they
    // are reset only with a command given here (tests: a fake).
    std::string gpu_reset_command;
    bool fabricmanager_restart = true;
    // How often each check runs (--health-<check>-interval-ms). XID events
    // are polled often so a fault is reported well within 2 s.
    int64_t xid_interval_ms = 100;
    int64_t gpu_interval_ms = 2000;       // ECC, retired pages, row remap, NVLink, lost, thermal
    int64_t nic_interval_ms = 2000;       // InfiniBand and Ethernet ports
    int64_t service_interval_ms = 10000;  // fabric manager, peermem, disk, coordinator
  } health;
};

// The most nodes --simulate accepts: each costs two file descriptors and a
// socket of one ZeroMQ context, and a fleet beyond this is better split
// over several processes.
inline constexpr uint32_t kMaxSimulatedNodes = 10'000;

struct ParsedFlags {
  enum class Action { kRun, kHelp, kVersion };
  Action action = Action::kRun;
  WorkerFlags flags;
  std::string text;  // the help or version text to print
};

// InvalidArgument (with a message for the user) on an unknown flag, a bad
// value or a stray argument; main exits 2 then.
Result<ParsedFlags> ParseWorkerFlags(int argc, const char* const* argv);

// A worker runs secured (--key-file and --coordinator-key) or, said out
// loud, plaintext (--insecure): never by default. Checked apart from the
// parse so that flag tests need not name keys.
Status CheckSecurityFlags(const WorkerFlags& flags);

// Splits "tcp://a:7401, tcp://b:7401" and checks each endpoint's scheme.
Result<std::vector<std::string>> ParseEndpoints(const std::string& list);

}  // namespace gpool::worker
