#include "tests/local_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signal.h>

#include <filesystem>
#include <stdexcept>

#include "protocol/http/testing/self_signed_cert.h"
#include "protocol/security/curve_socket.h"
#include "protocol/security/keys.h"
#include "worker/runner/supervisor_state.h"

namespace gpool::testing {
namespace {

// Kills, by the pids their supervisors recorded, the tasks still running
// under `data_dir`: each task's process group first (its supervisor then
// empties its cgroup and exits), then any supervisor that does not.
void KillSupervisedTasks(const std::string& data_dir) {
  std::vector<std::pair<std::string, int64_t>> live;  // state dir, supervisor pid
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir + "/tasks", ec)) {
    const std::string dir = entry.path().string();
    if (entry.path().extension() != ".state" || !worker::SupervisorAlive(dir)) continue;
    auto started = worker::ReadStartRecord(dir);
    if (!started.ok()) continue;
    kill(-static_cast<pid_t>(started->pid), SIGKILL);
    live.emplace_back(dir, started->supervisor_pid);
  }
  for (const auto& [dir, supervisor] : live) {
    if (!WaitFor([&dir = dir] { return !worker::SupervisorAlive(dir); }, std::chrono::seconds(10))) {
      kill(static_cast<pid_t>(supervisor), SIGKILL);
    }
  }
}

}  // namespace

ReservedPort::ReservedPort() {
  // CLOEXEC: the processes the tests start need not hold it too.
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("socket() failed");
  const int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd_);
    throw std::runtime_error("cannot reserve a loopback port");
  }
  port_ = ntohs(addr.sin_port);
}

ReservedPort::~ReservedPort() {
  if (fd_ >= 0) close(fd_);
}

LocalCluster::LocalCluster(LocalClusterOptions options) : options_(std::move(options)) {
  if (options_.secure) MakeKeyPair("admin");  // before any replica admits it
  workers_.resize(options_.workers);
  const int n = std::max(1, options_.coordinators);
  replicas_.resize(n);
  coordinators_.resize(n);
  if (n > 1) {
    auto endpoint = [this] { return ports_.emplace_back().endpoint(); };
    for (auto& r : replicas_) {
      r.client = endpoint();
      r.worker = endpoint();
      r.peer = endpoint();
    }
  }
}

JobSpec ShellJob(const std::string& name, uint32_t gpus, std::string script, uint32_t replicas) {
  JobSpec spec;
  spec.name = name;
  TaskGroupSpec group;
  group.name = "main";
  group.replicas = replicas;
  group.command = {"sh", "-c", std::move(script)};
  group.resources = Resources{gpus, 100, 64};
  spec.tasks.push_back(group);
  return spec;
}

LocalCluster::~LocalCluster() {
  // Workers first, gracefully, so they stop their tasks.
  for (auto& worker : workers_) {
    if (worker) worker->Stop(15, std::chrono::seconds(10));
  }
  // Tasks outlive a worker killed with SIGKILL (each runs under its own
  // supervisor); those no restarted worker stopped are killed here.
  for (size_t i = 0; i < workers_.size(); ++i) KillSupervisedTasks(WorkerDataDir(static_cast<int>(i)));
  for (auto& coordinator : coordinators_) {
    if (coordinator) coordinator->Stop(15, std::chrono::seconds(5));
  }
}

std::string LocalCluster::JoinEndpoints(std::string Endpoints::*which) const {
  std::string out;
  for (const auto& r : replicas_) out += (out.empty() ? "" : ",") + r.*which;
  return out;
}

std::string LocalCluster::client_endpoint() const { return JoinEndpoints(&Endpoints::client); }
std::string LocalCluster::worker_endpoint() const { return JoinEndpoints(&Endpoints::worker); }

std::string LocalCluster::ReplicaDataDir(int index) const {
  return replicas_.size() == 1 ? dir_.Join("coordinator") : dir_.Join("coordinator-r" + std::to_string(index + 1));
}

void LocalCluster::StartCoordinator() {
  for (size_t i = 0; i < replicas_.size(); ++i) StartReplica(static_cast<int>(i));
}

int LocalCluster::StartJoiningReplica() {
  Endpoints& added = replicas_.emplace_back();
  added.client = ports_.emplace_back().endpoint();
  added.worker = ports_.emplace_back().endpoint();
  added.peer = ports_.emplace_back().endpoint();
  coordinators_.emplace_back();
  const int index = static_cast<int>(replicas_.size()) - 1;
  StartReplica(index, /*join=*/true);
  return index;
}

std::string LocalCluster::ReplicaKeyName(int index) const {
  auto it = replica_key_names_.find(index);
  return it != replica_key_names_.end() ? it->second : "replica-" + std::to_string(index + 1);
}

void LocalCluster::StartReplica(int index, bool join, bool expect_up) {
  const bool replicated = replicas_.size() > 1;
  Endpoints& self = replicas_.at(index);
  const std::string data_dir = ReplicaDataDir(index);
  std::filesystem::remove(data_dir + "/endpoints");
  std::vector<std::string> argv = {GPOOL_COORDINATOR_BIN, "--data-dir",  data_dir,   "--client-addr",
                                   self.client,           "--worker-addr", self.worker};
  if (replicated) {
    std::string peers, clients, workers;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      const std::string id = std::to_string(i + 1);
      peers += (i ? "," : "") + id + "=" + replicas_[i].peer;
      clients += (i ? "," : "") + id + "=" + replicas_[i].client;
      workers += (i ? "," : "") + id + "=" + replicas_[i].worker;
    }
    argv.insert(argv.end(), {"--id", std::to_string(index + 1), "--peers", peers, "--peer-clients", clients,
                             "--peer-workers", workers});
    if (join) argv.push_back("--join");
  }
  if (options_.secure) {
    argv.insert(argv.end(), {"--key-file", SecretKeyFile(ReplicaKeyName(index)), "--admin-key",
                             PublicKeyFile("admin")});
    if (replicated) {
      std::string keys;
      for (size_t i = 0; i < replicas_.size(); ++i) {
        keys += (i ? "," : "") + std::to_string(i + 1) + "=" + PublicKeyFile(ReplicaKeyName(static_cast<int>(i)));
      }
      argv.insert(argv.end(), {"--peer-keys", keys});
    }
  } else {
    argv.push_back("--insecure");
  }
  // HTTP is off by default and plain HTTP needs --http-insecure even on
  // loopback (issue 48): the tests ask for both, or for TLS.
  argv.insert(argv.end(), {"--http-address", "127.0.0.1:0"});
  if (options_.http_tls) {
    argv.insert(argv.end(), {"--http-cert", HttpCertFile(), "--http-key", HttpKeyFile()});
  } else {
    argv.push_back("--http-insecure");
  }
  argv.insert(argv.end(), options_.coordinator_flags.begin(), options_.coordinator_flags.end());
  const std::string name = replicated ? "coordinator-r" + std::to_string(index + 1) : "coordinator";
  coordinators_.at(index) = std::make_unique<Process>(
      name, argv, dir_.Join(name + "-" + std::to_string(coordinator_starts_++) + ".log"));
  Process& process = *coordinators_[index];
  if (!expect_up) return;
  // The file is written once, atomically, when every port is bound (http
  // too, unless it is off).
  const size_t lines = replicated ? 3 : 2;
  bool up = WaitFor([&] { return ReadEndpoints(data_dir).size() >= lines || !process.Running(); },
                    std::chrono::seconds(20));
  auto endpoints = ReadEndpoints(data_dir);
  if (!up || endpoints.size() < lines) {
    throw std::runtime_error(name + " did not start: " + process.Log());
  }
  self.client = endpoints["client"];
  self.worker = endpoints["worker"];
  if (replicated) self.peer = endpoints["peer"];
  self.http = endpoints["http"];
}

std::string LocalCluster::HttpCertFile() {
  if (!std::filesystem::exists(dir_.Join("http.cert.pem"))) {
    auto made = http::testing::MakeSelfSignedCert(dir_.path(), "http");
    if (!made.ok()) throw std::runtime_error(made.status().ToString());
  }
  return dir_.Join("http.cert.pem");
}

std::string LocalCluster::HttpKeyFile() {
  HttpCertFile();
  return dir_.Join("http.key.pem");
}

void LocalCluster::KillCoordinator() {
  for (size_t i = 0; i < coordinators_.size(); ++i) KillReplica(static_cast<int>(i));
}

void LocalCluster::KillReplica(int index) {
  if (coordinators_.at(index)) coordinators_[index]->Kill();
}

void LocalCluster::WipeReplica(int index) {
  std::error_code ec;
  std::filesystem::remove_all(ReplicaDataDir(index), ec);
}

std::string LocalCluster::WorkerDataDir(int index) const { return dir_.Join("worker-" + std::to_string(index)); }

void LocalCluster::StartWorker(int index) {
  const std::string name = NodeName(index);
  const std::string spec_path = dir_.Join(name + ".yaml");
  WriteFile(spec_path, "name: " + name + "\ncpus: 32\nmemory: 256Gi\ngpus:\n  count: " +
                           std::to_string(options_.gpus_per_worker) + "\n  model: A100-SXM4-80GB\n  memory: 80Gi\n" +
                           (options_.gpu_mig_mode.empty() ? "" : "  mig_mode: " + options_.gpu_mig_mode + "\n") +
                           (options_.worker_hostname.empty() ? "" : "hostname: " + options_.worker_hostname + "\n") +
                           options_.worker_spec_extra);
  // Task records under the data dir, where the tests look for them, whether
  // or not this host's /run is a tmpfs (the worker's default then: run_dir.h).
  // Its /metrics on an ephemeral loopback port (DATA_DIR/http), plain HTTP
  // by --http-insecure: HTTP is off by default (issue 48).
  std::vector<std::string> argv = {GPOOL_WORKER_BIN,      "--coordinator", worker_endpoint(), "--data-dir",
                                   WorkerDataDir(index),  "--run-dir",     WorkerDataDir(index) + "/tasks",
                                   "--http-address",      "127.0.0.1:0",   "--http-insecure"};
  if (options_.workers_probe_host) {
    argv.insert(argv.end(), {"--node-name", name});
  } else {
    argv.insert(argv.end(), {"--spec", spec_path});
  }
  if (options_.secure) {
    argv.insert(argv.end(), {"--key-file", SecretKeyFile(name), "--coordinator-key", CoordinatorKeyFiles()});
    if (!options_.unenrolled_workers.count(index) && !enrolled_.count(index)) {
      // Admission enrolment admits no stranger: bind the key to the name first,
      // as an operator would. Retried through an election of a new cluster.
      CommandResult enrolled;
      const bool ok = WaitFor(
          [&] {
            enrolled = Cli({"admin", "node", "enrol", name, "--node-key", PublicKeyFile(name)});
            return enrolled.exit_code == 0;
          },
          std::chrono::seconds(30));
      if (!ok) throw std::runtime_error("cannot enrol " + name + ": " + enrolled.err);
      enrolled_.insert(index);
    }
  } else {
    argv.push_back("--insecure");
  }
  if (auto flags = options_.worker_flags.find(index); flags != options_.worker_flags.end()) {
    argv.insert(argv.end(), flags->second.begin(), flags->second.end());
  }
  // env(1) sets the extra variables and execs the worker: same pid.
  if (auto env = options_.worker_env.find(index); env != options_.worker_env.end() && !env->second.empty()) {
    std::vector<std::string> prefix = {"env"};
    for (const auto& [key, value] : env->second) prefix.push_back(key + "=" + value);
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
  }
  workers_.at(index) = std::make_unique<Process>(name, argv, dir_.Join(name + ".log"));
}

void LocalCluster::StartWorkers() {
  for (int i = 0; i < options_.workers; ++i) StartWorker(i);
}

CommandResult LocalCluster::Cli(std::vector<std::string> args) {
  std::vector<std::string> argv = {GPOOL_CLI_BIN, "--coordinator", client_endpoint()};
  const std::vector<std::string> security = CliSecurityArgs();
  argv.insert(argv.end(), security.begin(), security.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

void LocalCluster::MakeKeyPair(const std::string& name) {
  const std::string secret = dir_.Join(name + ".key");
  if (std::filesystem::exists(secret)) return;
  auto pair = security::GenerateKeyPair();
  if (!pair.ok()) throw std::runtime_error("keygen: " + pair.status().ToString());
  Status written = security::WriteSecretKeyFile(secret, *pair);
  if (written.ok()) written = security::WritePublicKeyFile(dir_.Join(name + ".pub"), pair->public_key);
  if (!written.ok()) throw std::runtime_error("keygen: " + written.ToString());
}

std::string LocalCluster::SecretKeyFile(const std::string& name) {
  if (!options_.secure) return "";
  MakeKeyPair(name);
  return dir_.Join(name + ".key");
}

std::string LocalCluster::PublicKeyFile(const std::string& name) {
  if (!options_.secure) return "";
  MakeKeyPair(name);
  return dir_.Join(name + ".pub");
}

std::string LocalCluster::CoordinatorKeyFiles() const {
  std::string files;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    files += (i ? "," : "") + dir_.Join("replica-" + std::to_string(i + 1) + ".pub");
  }
  return files;
}

std::vector<std::string> LocalCluster::CliSecurityArgs() const {
  if (!options_.secure) return {"--insecure"};
  return {"--key-file", dir_.Join("admin.key"), "--coordinator-key", CoordinatorKeyFiles()};
}

void LocalCluster::SecureSocket(zmq::socket_t& socket, const std::string& key_name, int replica) {
  if (!options_.secure) return;
  auto keys = security::ReadSecretKeyFile(SecretKeyFile(key_name));
  auto server = security::ReadPublicKeyFile(PublicKeyFile("replica-" + std::to_string(replica + 1)));
  if (!keys.ok() || !server.ok()) throw std::runtime_error("SecureSocket: cannot read keys");
  Status made = security::MakeCurveClient(socket, *keys, *server);
  if (!made.ok()) throw std::runtime_error("SecureSocket: " + made.ToString());
}

void LocalCluster::SecureClient(ClientOptions& options) const {
  if (!options_.secure) return;
  auto keys = security::ReadSecretKeyFile(dir_.Join("admin.key"));
  if (!keys.ok()) throw std::runtime_error("the test user's key: " + keys.status().ToString());
  options.curve_keys = *keys;
  options.server_keys.clear();
  // One key per endpoint the options name, each the key of the replica
  // with that client endpoint (a test may name a few replicas only).
  std::string endpoints = options.endpoints;
  for (size_t start = 0; start <= endpoints.size();) {
    const size_t comma = endpoints.find(',', start);
    const std::string endpoint = endpoints.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? endpoints.size() + 1 : comma + 1;
    size_t index = 0;
    while (index < replicas_.size() && replicas_[index].client != endpoint) ++index;
    if (index == replicas_.size()) throw std::runtime_error("SecureClient: " + endpoint + " is no replica's");
    auto key = security::ReadPublicKeyFile(dir_.Join("replica-" + std::to_string(index + 1) + ".pub"));
    if (!key.ok()) throw std::runtime_error("replica key: " + key.status().ToString());
    options.server_keys.push_back(*key);
  }
}

bool LocalCluster::AllNodesReady() {
  CommandResult nodes = Cli({"nodes"});
  if (nodes.exit_code != 0) return false;
  for (int i = 0; i < options_.workers; ++i) {
    const std::string name = NodeName(i);
    auto pos = nodes.out.find(name);
    if (pos == std::string::npos) return false;
    auto line_end = nodes.out.find('\n', pos);
    std::string line = nodes.out.substr(pos, line_end - pos);
    if (line.find("Ready") == std::string::npos || line.find("NotReady") != std::string::npos) return false;
  }
  return true;
}

}  // namespace gpool::testing
