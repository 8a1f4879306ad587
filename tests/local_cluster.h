// LocalCluster: a real coordinator and real workers on 127.0.0.1 with
// ephemeral ports, in a temp dir, for end-to-end tests. Binaries come from
// the build tree (paths compiled in by CMake).
//
// With `coordinators` > 1 it runs a replicated coordinator: replicas 0..n-1
// get Raft ids 1..n, and every port (client, worker, peer) is reserved up
// front because each replica must be told all its peers' addresses before
// it starts. Workers and the CLI are given every replica's endpoint.
//
// Secured by default (issue 31): every replica, worker and the test user get
// a CurveZMQ key pair in the temp dir; the coordinators admit the test
// user's key as the bootstrap admin (--admin-key), and the CLI and the
// clients the tests build (SecureClient) use it. `secure = false` runs
// everything with --insecure instead.
#pragma once

#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "client/client.h"
#include "protocol/types.h"
#include "tests/process.h"

namespace gpool::testing {

// A free TCP port on 127.0.0.1, for processes that must know each other's
// ports before they start. The port stays bound (SO_REUSEADDR, not
// listening) as long as the object lives: ZeroMQ, which also sets
// SO_REUSEADDR, can still listen on it, but no other bind to port 0 in any
// process is handed it meanwhile, so tests running in parallel cannot take
// it between a replica's kill and its restart.
class ReservedPort {
 public:
  ReservedPort();
  ~ReservedPort();
  ReservedPort(ReservedPort&& other) noexcept : fd_(other.fd_), port_(other.port_) { other.fd_ = -1; }
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;
  int port() const { return port_; }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

struct LocalClusterOptions {
  int coordinators = 1;  // more than 1: replicated (--peers)
  int workers = 2;
  int gpus_per_worker = 4;
  std::string gpu_mig_mode;  // "", "dynamic": the workers' simulated GPUs' MIG mode
  // Extra environment of one worker process, by worker index (its tasks
  // inherit what --task-env-pass names): e.g. {3, {{"SLOW_LINK_MIB_S", "20"}}}.
  std::map<int, std::map<std::string, std::string>> worker_env;
  // Extra flags of one worker process, by worker index (e.g. a fake NVML
  // library for its health checks).
  std::map<int, std::vector<std::string>> worker_flags;
  // Workers probe the host (their GPUs through the --nvml-library in
  // worker_flags, e.g. the fake NVML) instead of reading a spec file; only
  // such a worker reports GPU utilisation.
  bool workers_probe_host = false;
  // YAML appended to every worker's spec file (e.g. a numa list with
  // cpulists, for exclusive cores).
  std::string worker_spec_extra;
  // The hostname in every worker's node spec; "": the machine's.
  std::string worker_hostname;
  bool secure = true;  // CurveZMQ on every channel; false: --insecure
  // With CurveZMQ the coordinators admit worker keys by admission (issue 48):
  // StartWorker enrols each worker's key under its node name first, as an
  // operator would (`gpool admin node enrol`), except for the workers listed
  // here, which connect as strangers (pending until approved, or admitted by
  // a join token in worker_env).
  std::set<int> unenrolled_workers;
  // The coordinators' HTTP port serves TLS with a self-signed certificate
  // (HttpCertFile(); issue 48); false: plain HTTP on 127.0.0.1 with
  // --http-insecure (workers always serve that way).
  bool http_tls = false;
  std::vector<std::string> coordinator_flags = {"--heartbeat-ms", "200", "--node-timeout-ms", "3000",
                                                "--preempt-grace-ms", "2000"};
};

// A job of one task group, "main": `replicas` tasks each running `script`
// under sh and wanting `gpus` GPUs, a tenth of a CPU and 64 MiB.
JobSpec ShellJob(const std::string& name, uint32_t gpus, std::string script, uint32_t replicas = 1);

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options = {});
  ~LocalCluster();

  // Starts the coordinator (every replica); the first start picks ephemeral
  // ports, later starts reuse them so workers and clients find it again.
  void StartCoordinator();
  void KillCoordinator();  // SIGKILL: no chance to clean up
  // One replica of a replicated coordinator. With `join`, it starts outside
  // the configuration (--join), to be added with `gpool admin replica add`.
  // With expect_up false it only launches the process (for replicas meant
  // to refuse to start).
  void StartReplica(int index, bool join = false, bool expect_up = true);
  // Starts one more replica with --join on fresh ports; returns its index
  // (its replica id is index + 1).
  int StartJoiningReplica();
  const std::string& peer_endpoint(int replica) const { return replicas_.at(replica).peer; }
  void KillReplica(int index);
  // Removes a stopped replica's data dir: it restarts with nothing.
  void WipeReplica(int index);
  std::string ReplicaDataDir(int index) const;
  // With CurveZMQ, enrols the worker's key first (once per index) unless
  // the index is in unenrolled_workers; the coordinator must be up then.
  void StartWorker(int index);
  void StartWorkers();

  Process* coordinator(int index = 0) { return coordinators_.at(index).get(); }
  Process* worker(int index) { return workers_.at(index).get(); }
  // Every replica's endpoint, comma-separated (one replica: just its own).
  std::string client_endpoint() const;
  std::string worker_endpoint() const;
  const std::string& client_endpoint(int replica) const { return replicas_.at(replica).client; }
  const std::string& worker_endpoint(int replica) const { return replicas_.at(replica).worker; }
  const std::string& http_address(int replica = 0) const { return replicas_.at(replica).http; }
  const std::string& dir() const { return dir_.path(); }
  std::string WorkerDataDir(int index) const;
  std::string NodeName(int index) const { return "node-" + std::to_string(index); }

  // Runs the gpool CLI against this cluster (as the test user).
  CommandResult Cli(std::vector<std::string> args);
  // What the CLI needs to reach the cluster besides --coordinator: the test
  // user's key and every replica's public key, or --insecure.
  std::vector<std::string> CliSecurityArgs() const;
  // Fills the test user's keys (and the replicas') into client options
  // whose endpoints are client_endpoint(); nothing when insecure.
  void SecureClient(ClientOptions& options) const;
  // Makes a raw socket a CURVE client of replica `replica` with the key pair
  // `key_name` (made on first use; "admin" is the test user, any other name
  // a key no one registered). Nothing when insecure. Before connect.
  void SecureSocket(zmq::socket_t& socket, const std::string& key_name, int replica = 0);
  bool secure() const { return options_.secure; }
  // The key pair replica `index` is started with from its next StartReplica
  // on (--key-file, and its entry in every replica's --peer-keys), e.g. a
  // rotated key; "replica-N" (N = index + 1) until set. CoordinatorKeyFiles,
  // what workers and the CLI pin, keeps "replica-N".
  void SetReplicaKeyName(int index, std::string name) { replica_key_names_[index] = std::move(name); }
  // The coordinator flags of the next StartCoordinator/StartReplica.
  void SetCoordinatorFlags(std::vector<std::string> flags) { options_.coordinator_flags = std::move(flags); }
  // The extra environment of worker `index` from its next StartWorker on.
  void SetWorkerEnv(int index, std::map<std::string, std::string> env) { options_.worker_env[index] = std::move(env); }
  // Key files in the cluster's temp dir: "replica-N" (N from 1), "node-I",
  // "admin"; made on first use. Empty when insecure.
  std::string SecretKeyFile(const std::string& name);
  std::string PublicKeyFile(const std::string& name);
  // The comma-separated public key files of every replica, in the order of
  // client_endpoint() and worker_endpoint().
  std::string CoordinatorKeyFiles() const;
  // The coordinators' self-signed HTTPS certificate (also the CA a client
  // trusts) and its key; made on first use. Used with http_tls.
  std::string HttpCertFile();
  std::string HttpKeyFile();
  // True once `gpool nodes` reports every worker Ready.
  bool AllNodesReady();

 private:
  struct Endpoints {
    std::string client = "tcp://127.0.0.1:0";
    std::string worker = "tcp://127.0.0.1:0";
    std::string peer;
    std::string http;  // host:port of its HTTP port
  };
  std::string JoinEndpoints(std::string Endpoints::*which) const;
  void MakeKeyPair(const std::string& name);

  LocalClusterOptions options_;
  TempDir dir_;
  std::vector<ReservedPort> ports_;  // replicated: every replica's three ports
  std::vector<Endpoints> replicas_;
  std::vector<std::unique_ptr<Process>> coordinators_;
  std::vector<std::unique_ptr<Process>> workers_;
  std::set<int> enrolled_;  // worker indexes whose keys StartWorker enrolled
  int coordinator_starts_ = 0;
  std::map<int, std::string> replica_key_names_;  // SetReplicaKeyName's
  std::string ReplicaKeyName(int index) const;
};


}  // namespace gpool::testing
