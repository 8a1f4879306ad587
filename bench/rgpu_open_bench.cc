// gpool-bench-rgpu's control-plane half: how long a session takes to open,
// from the request to the first driver call that succeeds through it, on a
// real coordinator and worker on loopback (session servers on the fake
// driver). Beside it in the same run, the same cluster's submit to a plain
// one-GPU job's process started: the part of the wait that is scheduling,
// binding and starting a process, not the session server.
//   rgpu_session_open_p50/p99      request -> first successful remote call (ms)
//   rgpu_session_placed_p50        request -> Open (server listening, ms)
//   job_submit_to_started_p50      a plain job: request -> its task Running (ms)
#include "bench/rgpu_open_bench.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_process.h"
#include "client/client.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/security/keys.h"

namespace gpool::bench {
namespace {

namespace fs = std::filesystem;

void PrintMs(const char* metric, double value, const std::string& params) {
  std::printf("{\"metric\": \"%s\", \"value\": %.2f, \"unit\": \"ms\", \"params\": {%s}}\n", metric, value,
              params.c_str());
  std::fflush(stdout);
}

// Runs gpool-rgpu-check `sync` against the session; true when the call
// succeeded.
bool FirstCall(const std::string& dir, const SessionInfo& info, const std::string& key_file) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("LD_LIBRARY_PATH", dir.c_str(), 1);
    setenv("GPOOL_RGPU_ENDPOINT", info.endpoint.c_str(), 1);
    setenv("GPOOL_RGPU_SERVER_KEY", info.server_key.c_str(), 1);
    setenv("GPOOL_RGPU_KEY_FILE", key_file.c_str(), 1);
    const std::string out = dir + "/check.out";
    std::FILE* log = std::freopen(out.c_str(), "w", stdout);
    (void)log;
    // A context first: what any program does before its first real call.
    execl(GPOOL_RGPU_CHECK_BIN, GPOOL_RGPU_CHECK_BIN, "alloc", "1", "sync", nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(dir + "/check.out");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && text.find("sync result=0") != std::string::npos;
}

}  // namespace

int RunSessionOpenBench(int sessions) {
  char pattern[] = "/tmp/gpool-bench-rgpu-open-XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = pattern;
  // Tasks run as another uid when the worker is root (task isolation): the
  // session server must reach its key file under the worker's data dir.
  chmod(dir.c_str(), 0711);
  const std::string client_ep = "tcp://127.0.0.1:" + std::to_string(ReservePort());
  const std::string worker_ep = "tcp://127.0.0.1:" + std::to_string(ReservePort());
  std::vector<pid_t> pids;
  pids.push_back(Spawn({GPOOL_COORDINATOR_BIN, "--insecure", "--data-dir", dir + "/coordinator", "--client-addr",
                        client_ep, "--worker-addr", worker_ep, "--heartbeat-ms", "200", "--log-level", "warn"},
                       dir + "/coordinator.log"));
  std::ofstream(dir + "/node.yaml") << "name: node-0\ncpus: 32\nmemory: 256Gi\ngpus:\n  count: 8\n"
                                       "  model: A100-SXM4-80GB\n  memory: 80Gi\n";
  const std::string fake_dir = fs::path(GPOOL_FAKE_CUDA_LIB).parent_path().string();
  pids.push_back(Spawn({"/usr/bin/env", "LD_LIBRARY_PATH=" + fake_dir, GPOOL_WORKER_BIN, "--insecure", "--spec",
                        dir + "/node.yaml", "--coordinator", worker_ep, "--data-dir", dir + "/worker", "--rgpu-server",
                        GPOOL_RGPU_SERVER_BIN, "--rgpu-address", "127.0.0.1", "--task-env-pass", "LD_LIBRARY_PATH",
                        "--cuda-interposer", GPOOL_CUDA_INTERPOSER_LIB, "--cuda-real-driver", GPOOL_FAKE_CUDA_LIB,
                        // The fake driver holds no memory for contexts: neither may a share.
                        "--cuda-object-costs", "none", "--log-level", "warn"},
                       dir + "/worker.log"));
  auto cleanup = [&](int code) {
    for (pid_t pid : pids) Kill(pid, SIGKILL);
    std::error_code ec;
    if (code == 0) fs::remove_all(dir, ec);
    if (code != 0) std::fprintf(stderr, "logs kept in %s\n", dir.c_str());
    return code;
  };
  ClientOptions options;
  options.endpoints = client_ep;
  options.timeout_ms = 5000;
  options.retries = 10;
  auto connected = Client::Connect(options);
  if (!connected.ok()) return cleanup(1);
  Client& client = **connected;
  const auto ready_by = SteadyClock::now() + std::chrono::seconds(30);
  while (true) {
    auto nodes = client.ListNodes();
    if (nodes.ok() && nodes->nodes.size() == 1 && nodes->nodes[0].state == "Ready") break;
    if (SteadyClock::now() > ready_by) return cleanup(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto keys = security::GenerateKeyPair();
  const std::string key_file = dir + "/client.key";
  if (!keys.ok() || !security::WriteSecretKeyFile(key_file, *keys).ok()) return cleanup(1);
  std::error_code ec;
  fs::create_symlink(GPOOL_CUDA_INTERPOSER_LIB, dir + "/libcuda.so.1", ec);

  std::vector<double> open_ms, placed_ms, job_ms;
  for (int i = 0; i < sessions; ++i) {
    JobSpec spec;
    spec.name = "bench-session";
    spec.restart.policy = "never";
    spec.session.enabled = true;
    spec.session.owner_key = keys->public_key;
    spec.session.idle_timeout_ms = 60'000;
    TaskGroupSpec group;
    group.command = {"gpool-rgpu-server"};
    group.resources = Resources{1, 100, 64};
    spec.tasks.push_back(group);
    const auto start = SteadyClock::now();
    auto submitted = client.Submit(spec, "");
    if (!submitted.ok()) return cleanup(1);
    SessionInfo info;
    while (info.state != "Open") {
      auto job = client.GetJob(JobId(submitted->job_id));
      if (!job.ok() || job->summary.session.state == "Failed") return cleanup(1);
      info = job->summary.session;
      if (info.state != "Open") std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    placed_ms.push_back(Ms(SteadyClock::now() - start));
    if (!FirstCall(dir, info, key_file)) return cleanup(1);
    open_ms.push_back(Ms(SteadyClock::now() - start));
    (void)client.CancelJob(JobId(submitted->job_id), 0);

    // The baseline: a plain one-GPU job on the same cluster, to Running.
    JobSpec plain;
    plain.name = "bench-job";
    TaskGroupSpec sleeper;
    sleeper.command = {"sleep", "60"};
    sleeper.resources = Resources{1, 100, 64};
    plain.tasks.push_back(sleeper);
    const auto job_start = SteadyClock::now();
    auto job = client.Submit(plain, "");
    if (!job.ok()) return cleanup(1);
    while (true) {
      auto got = client.GetJob(JobId(job->job_id));
      if (!got.ok()) return cleanup(1);
      // Its process started (the job is Running once it is bound).
      if (!got->tasks.empty() && got->tasks[0].state == "Running") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    job_ms.push_back(Ms(SteadyClock::now() - job_start));
    (void)client.CancelJob(JobId(job->job_id), 0);
  }
  const std::string params = "\"sessions\": " + std::to_string(sessions) + ", \"driver\": \"fake\"";
  PrintMs("rgpu_session_open_p50", Percentile(open_ms, 0.5), params + ", \"to\": \"first successful call\"");
  PrintMs("rgpu_session_open_p99", Percentile(open_ms, 0.99), params + ", \"to\": \"first successful call\"");
  PrintMs("rgpu_session_placed_p50", Percentile(placed_ms, 0.5), params + ", \"to\": \"Open\"");
  PrintMs("job_submit_to_started_p50", Percentile(job_ms, 0.5), params + ", \"baseline\": \"plain one-GPU job\"");
  return cleanup(0);
}

}  // namespace gpool::bench
