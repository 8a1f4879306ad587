// `gpool session open|list|show|close|renew|run`: remote GPU sessions (issue
// 33; protocol/session_types.h). A session is a job the coordinator admits,
// places and preempts like any other; `run` is what makes it remote: CMD
// runs here with gpool's CUDA interposer as its libcuda.so.1, in remote mode
// (GPOOL_RGPU_*), so its driver calls go to the session's server over
// CurveZMQ, while this process renews the session's lease.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "client/cli_internal.h"
#include "client/format.h"
#include "protocol/messages_client.h"
#include "protocol/security/keys.h"

extern char** environ;

namespace gpool::cli {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSessionPollMs = 200;
// The label of a node's leaf switch (docs/topology.md): --near-switch
// prefers nodes under the client's.
constexpr const char* kLeafSwitchLabel = "topology.gpool.io/tier1";

// <config>/gpool/sessions: the key pairs drawn for sessions on an --insecure
// cluster (a secured one uses the user's own key).
std::string SessionKeyDir(const Session& s) {
  if (auto config = s.env.getenv("XDG_CONFIG_HOME"); config && !config->empty()) return *config + "/gpool/sessions";
  if (auto home = s.env.getenv("HOME"); home && !home->empty()) return *home + "/.config/gpool/sessions";
  return "";
}

std::string SessionKeyPath(const Session& s, uint64_t job) {
  const std::string dir = SessionKeyDir(s);
  return dir.empty() ? "" : dir + "/" + std::to_string(job) + ".key";
}

// The key pair the session's server admits: the caller's own on a secured
// cluster, else the one drawn when it was opened.
Result<security::KeyPair> SessionClientKeys(const Session& s, uint64_t job) {
  if (!s.options.curve_keys.secret_key.empty()) return s.options.curve_keys;
  const std::string path = SessionKeyPath(s, job);
  auto keys = security::ReadSecretKeyFile(path);
  if (!keys.ok()) {
    return Status::FailedPrecondition("no key for session " + std::to_string(job) + " here (" +
                                      keys.status().message() + "): run it where it was opened, as who opened it");
  }
  return keys;
}

Result<JobSpec> SessionSpecFromFlags(const Invocation& inv) {
  const auto& f = inv.flags;
  TaskGroupSpec group;
  group.name = "server";
  // Replaced by the worker with its gpool-rgpu-server; named for listings.
  group.command = {"gpool-rgpu-server"};
  if (f.count("gpus")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t gpus, ParseUnsignedFlag("--gpus", f["gpus"].as<std::string>(), 64));
    group.resources.gpus = static_cast<uint32_t>(gpus);
  }
  GPOOL_RETURN_IF_ERROR(ReadShareFlags(f, group.resources));
  if (group.resources.gpus == 0) group.resources.gpus = 1;
  JobSpec spec;
  spec.name = f.count("name") ? f["name"].as<std::string>() : "session";
  if (f.count("queue")) spec.queue = f["queue"].as<std::string>();
  if (f.count("class")) spec.priority_class = f["class"].as<std::string>();
  spec.restart.policy = "never";
  spec.session.enabled = true;
  if (f.count("ttl")) {
    auto ms = ParseWaitTimeout(f["ttl"].as<std::string>());
    if (!ms.ok()) return ms.status().WithContext("--ttl");
    spec.max_runtime_ms = static_cast<uint64_t>(*ms);
  }
  auto idle = ParseWaitTimeout(f["idle-timeout"].as<std::string>());
  if (!idle.ok()) return idle.status().WithContext("--idle-timeout");
  spec.session.idle_timeout_ms = static_cast<uint64_t>(*idle);
  if (f.count("lease")) {
    auto lease = ParseWaitTimeout(f["lease"].as<std::string>());
    if (!lease.ok()) return lease.status().WithContext("--lease");
    spec.session.lease_ms = static_cast<uint64_t>(*lease);
  }
  if (f.count("near-switch")) {
    const std::string leaf = f["near-switch"].as<std::string>();
    GPOOL_RETURN_IF_ERROR(CheckLabelValue("--near-switch", kLeafSwitchLabel, leaf));
    spec.prefer_labels[kLeafSwitchLabel] = leaf;
  }
  spec.tasks.push_back(std::move(group));
  return spec;
}

bool Ended(const std::string& state) {
  return state == "Closed" || state == "Expired" || state == "Preempted" || state == "Failed";
}

// Renews the lease when a third of it has passed since `last_renew_ms`
// (monotonic). A failed renewal is reported once the session has ended.
Status RenewIfDue(Session& s, Client& client, uint64_t job, uint64_t lease_ms, int64_t& last_renew_ms) {
  const int64_t now = s.env.clock->MonoMs();
  if (now - last_renew_ms < static_cast<int64_t>(lease_ms / 3)) return Status::Ok();
  last_renew_ms = now;
  auto renewed = client.RenewSession(JobId(job));
  if (!renewed.ok() && renewed.status().code() != StatusCode::kUnavailable) return renewed.status();
  return Status::Ok();
}

// Waits (renewing) until the session is Open; what it is then.
Result<SessionInfo> WaitOpen(Session& s, Client& client, uint64_t job, int64_t timeout_ms) {
  const int64_t start = s.env.clock->MonoMs();
  int64_t last_renew = start;
  std::string told;
  while (true) {
    GPOOL_ASSIGN_OR_RETURN(GetJobReply reply, client.GetJob(JobId(job)));
    const SessionInfo& info = reply.summary.session;
    if (info.state.empty()) return Status::NotFound("job " + std::to_string(job) + " is not a session");
    if (info.state == "Open") return info;
    if (Ended(info.state)) {
      return Status::FailedPrecondition("session " + std::to_string(job) + " is " + info.state +
                                        (info.reason.empty() ? "" : ": " + info.reason));
    }
    const std::string now_told = info.state + (info.reason.empty() ? "" : ": " + info.reason);
    if (now_told != told) {
      s.err << "session " << job << " " << now_told << "\n";
      told = now_told;
    }
    const int64_t waited = s.env.clock->MonoMs() - start;
    if (timeout_ms > 0 && waited >= timeout_ms) {
      return Status::DeadlineExceeded("session " + std::to_string(job) + " is still " + info.state + " after " +
                                      FormatDuration(waited));
    }
    GPOOL_RETURN_IF_ERROR(RenewIfDue(s, client, job, info.lease_ms, last_renew));
    s.env.sleep_ms(kSessionPollMs);
  }
}

// The first of `candidates` that exists, or "".
std::string FirstFile(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates) {
    std::error_code ec;
    if (!c.empty() && fs::exists(c, ec)) return fs::absolute(c, ec).lexically_normal().string();
  }
  return "";
}

// libgpool-cuda.so.1 and libgpool-rgpu.so.1: --cuda-interposer or
// GPOOL_CUDA_INTERPOSER, else next to this binary (installed: ../lib/gpool;
// the build tree: ../worker/cuda and ../worker/rgpu).
struct RemoteLibs {
  std::string interposer;
  std::string client;  // empty: the interposer finds it itself
};

Result<RemoteLibs> FindRemoteLibs(const Session& s, const Invocation& inv) {
  std::error_code ec;
  const fs::path bin = fs::read_symlink("/proc/self/exe", ec).parent_path();
  RemoteLibs libs;
  std::string flag = inv.flags.count("cuda-interposer") ? inv.flags["cuda-interposer"].as<std::string>() : "";
  if (flag.empty()) flag = s.env.getenv("GPOOL_CUDA_INTERPOSER").value_or("");
  const std::vector<std::string> interposers =
      !flag.empty() ? std::vector<std::string>{flag}
                    : std::vector<std::string>{(bin / "../lib/gpool/libgpool-cuda.so.1").string(),
                                               (bin / "../worker/cuda/libgpool-cuda.so.1").string()};
  libs.interposer = FirstFile(interposers);
  if (libs.interposer.empty()) {
    return Status::NotFound("gpool's CUDA interposer libgpool-cuda.so.1 was not found (looked at " + interposers[0] +
                            (interposers.size() > 1 ? " and " + interposers[1] : "") +
                            "); give --cuda-interposer PATH");
  }
  libs.client = FirstFile({s.env.getenv("GPOOL_RGPU_CLIENT_LIB").value_or(""),
                           (fs::path(libs.interposer).parent_path() / "libgpool-rgpu.so.1").string(),
                           (bin / "../lib/gpool/libgpool-rgpu.so.1").string(),
                           (bin / "../worker/rgpu/libgpool-rgpu.so.1").string()});
  return libs;
}

volatile sig_atomic_t g_signal_for_program = 0;
extern "C" void RecordSignalForProgram(int signal) { g_signal_for_program = signal; }

// While `gpool session run`'s program runs, the CLI must outlive it: its
// private directory holds the session's client key, and a signal that ended
// the CLI first would leave the key behind in /tmp. So SIGTERM and SIGHUP
// sent to the CLI are passed on to the program, and SIGINT and SIGQUIT are
// ignored here, as system(3) does: a terminal sends them to the whole
// foreground group, the program included, which decides for itself. Made
// after the fork: an ignored signal stays ignored across exec.
class SignalsToProgram {
 public:
  SignalsToProgram() {
    g_signal_for_program = 0;
    struct sigaction record {};
    record.sa_handler = RecordSignalForProgram;
    sigemptyset(&record.sa_mask);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGTERM, &record, &previous_[0]);
    sigaction(SIGHUP, &record, &previous_[1]);
    sigaction(SIGINT, &ignore, &previous_[2]);
    sigaction(SIGQUIT, &ignore, &previous_[3]);
  }
  ~SignalsToProgram() {
    sigaction(SIGTERM, &previous_[0], nullptr);
    sigaction(SIGHUP, &previous_[1], nullptr);
    sigaction(SIGINT, &previous_[2], nullptr);
    sigaction(SIGQUIT, &previous_[3], nullptr);
  }
  SignalsToProgram(const SignalsToProgram&) = delete;
  SignalsToProgram& operator=(const SignalsToProgram&) = delete;
  // The signal to pass on that arrived since the last call; 0 if none.
  int Take() {
    const int signal = g_signal_for_program;
    g_signal_for_program = 0;
    return signal;
  }

 private:
  struct sigaction previous_[4] {};
};

// Runs `command` here against the session (its driver calls go to the
// session's server), renewing the lease until it exits; its exit code.
int RunAgainst(Session& s, Client& client, const Invocation& inv, uint64_t job, const SessionInfo& info,
               const std::vector<std::string>& command) {
  auto libs = FindRemoteLibs(s, inv);
  if (!libs.ok()) return s.Fail(libs.status());
  auto keys = SessionClientKeys(s, job);
  if (!keys.ok()) return s.Fail(keys.status());
  // A private directory: the key file, and libcuda.so.1 -> the interposer.
  std::string dir_template = (fs::temp_directory_path() / "gpool-session-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) {
    return s.Fail(Status::IoError("cannot make a directory for the session: " + std::string(std::strerror(errno))));
  }
  const std::string dir = dir_template;
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } remove_dir{dir};
  const std::string key_file = dir + "/client.key";
  if (Status written = security::WriteSecretKeyFile(key_file, *keys); !written.ok()) return s.Fail(written);
  std::error_code ec;
  fs::create_symlink(libs->interposer, dir + "/libcuda.so.1", ec);
  if (ec) return s.Fail(Status::IoError("cannot link the interposer into " + dir + ": " + ec.message()));

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    if (kv.rfind("LD_LIBRARY_PATH=", 0) == 0 || kv.rfind("GPOOL_RGPU_", 0) == 0 ||
        kv.rfind("GPOOL_GPU_", 0) == 0 || kv.rfind("GPOOL_CUDA_LEDGER=", 0) == 0) {
      continue;
    }
    env.push_back(kv);
  }
  const std::string library_path = s.env.getenv("LD_LIBRARY_PATH").value_or("");
  env.push_back("LD_LIBRARY_PATH=" + dir + (library_path.empty() ? "" : ":" + library_path));
  env.push_back("GPOOL_RGPU_ENDPOINT=" + info.endpoint);
  env.push_back("GPOOL_RGPU_SERVER_KEY=" + info.server_key);
  env.push_back("GPOOL_RGPU_KEY_FILE=" + key_file);
  env.push_back("GPOOL_RGPU_SESSION=" + std::to_string(job));
  if (!libs->client.empty()) env.push_back("GPOOL_RGPU_CLIENT_LIB=" + libs->client);
  if (auto timeout = s.env.getenv("GPOOL_RGPU_CALL_TIMEOUT_MS")) env.push_back("GPOOL_RGPU_CALL_TIMEOUT_MS=" + *timeout);

  std::vector<char*> argv, envp;
  std::vector<std::string> args = command;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return s.Fail(Status::IoError("fork: " + std::string(std::strerror(errno))));
  if (pid == 0) {
    execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "gpool: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  SignalsToProgram signals;
  int64_t last_renew = s.env.clock->MonoMs();
  while (true) {
    if (const int signal = signals.Take(); signal != 0) kill(pid, signal);
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (done < 0 && errno != EINTR) return s.Fail(Status::IoError("waitpid: " + std::string(std::strerror(errno))));
    if (Status renewed = RenewIfDue(s, client, job, info.lease_ms, last_renew); !renewed.ok()) {
      // The session ended under it: its next driver call fails on its own.
      s.err << "gpool: session " << job << ": " << renewed.message() << "\n";
      last_renew = std::numeric_limits<int64_t>::max() / 2;
    }
    s.env.sleep_ms(kSessionPollMs);
  }
}

Result<uint64_t> SessionId(const std::string& text) {
  auto id = ParseUnsignedText(text, UINT64_MAX);
  if (!id.ok() || *id == 0) return Status::InvalidArgument("SESSION: expected a session id, got '" + text + "'");
  return *id;
}

std::string Units(const JobSummary& job) {
  return job.gpus == 1 ? "1 GPU" : std::to_string(job.gpus) + " GPUs";
}

std::string GpuSeconds(uint64_t gpu_ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(gpu_ms) / 1000.0);
  return text;
}

int RunOpen(Session& s, const Invocation& inv) {
  auto spec = SessionSpecFromFlags(inv);
  if (!spec.ok()) return s.Usage(spec.status().message());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  // Secured: the gateway puts the caller's key in; insecure: a key pair
  // drawn for this session, kept where `run` finds it.
  std::optional<security::KeyPair> drawn;
  if (s.options.curve_keys.secret_key.empty()) {
    auto pair = security::GenerateKeyPair();
    if (!pair.ok()) return s.Fail(pair.status());
    drawn = *pair;
    spec->session.owner_key = pair->public_key;
  } else {
    spec->session.owner_key = s.options.curve_keys.public_key;
  }
  auto submitted = (*client)->Submit(*spec, "");
  if (!submitted.ok()) return s.Fail(submitted.status());
  const uint64_t job = submitted->job_id;
  if (drawn) {
    std::error_code ec;
    fs::create_directories(SessionKeyDir(s), ec);
    chmod(SessionKeyDir(s).c_str(), 0700);
    if (Status kept = security::WriteSecretKeyFile(SessionKeyPath(s, job), *drawn); !kept.ok()) {
      (void)(*client)->CancelJob(JobId(job), 0);
      return s.Fail(kept.WithContext("session key"));
    }
  }
  auto wait = ParseWaitTimeout(inv.flags["wait"].as<std::string>());
  if (!wait.ok()) return s.Usage(wait.status().WithContext("--wait").message());
  auto open = WaitOpen(s, **client, job, *wait);
  if (!open.ok()) {
    // Not open in time: a one-shot session is given back, a plain one stays.
    if (!inv.trailing.empty()) (void)(*client)->CancelJob(JobId(job), 0);
    return s.Fail(open.status());
  }
  if (inv.trailing.empty()) {
    if (s.json) {
      s.out << ToJson(*open) << "\n";
    } else {
      s.out << "session " << job << " Open on node " << open->node << " at " << open->endpoint << "\n"
            << "run against it: gpool session run " << job << " -- CMD   close it: gpool session close " << job
            << "\n";
    }
    return kExitOk;
  }
  const int code = RunAgainst(s, **client, inv, job, *open, inv.trailing);
  if (auto closed = (*client)->CancelJob(JobId(job), 0); !closed.ok()) {
    s.err << "gpool: closing session " << job << ": " << closed.status().ToString() << "\n";
  }
  if (drawn) {
    std::error_code ec;
    fs::remove(SessionKeyPath(s, job), ec);
  }
  return code;
}

int RunList(Session& s, const Invocation& inv) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto listed = (*client)->ListSessions(inv.flags["all"].as<bool>(), 1000);
  if (!listed.ok()) return s.Fail(listed.status());
  const ListJobsReply& sessions = *listed;
  if (s.json) {
    s.out << ToJson(sessions) << "\n";
    return kExitOk;
  }
  Table table({"SESSION", "NAME", "QUEUE", "STATE", "NODE", "GPUS", "AGE", "GPU-S", "ENDPOINT/REASON"});
  for (const auto& job : sessions.jobs) {
    const SessionInfo& info = job.session;
    table.AddRow({std::to_string(job.job_id), job.name, job.queue, info.state, Dash(info.node), Units(job),
                  FormatAgo(job.submit_ms, s.WallMs()), GpuSeconds(info.gpu_ms),
                  info.state == "Open" ? info.endpoint : info.reason});
  }
  s.out << table.Render();
  return kExitOk;
}

int RunShow(Session& s, uint64_t job) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->GetJob(JobId(job));
  if (!reply.ok()) return s.Fail(reply.status());
  const SessionInfo& info = reply->summary.session;
  if (info.state.empty()) return s.Fail(Status::NotFound("job " + std::to_string(job) + " is not a session"));
  if (s.json) {
    s.out << ToJson(reply->summary) << "\n";
    return kExitOk;
  }
  const auto& res = reply->spec.tasks.front().resources;
  s.out << "session " << job << " " << info.state << (info.reason.empty() ? "" : ": " + info.reason) << "\n"
        << "  owner:        " << Dash(reply->spec.user) << " (queue " << reply->summary.queue << ", class "
        << reply->summary.priority_class << ")\n"
        << "  asks:         " << Units(reply->summary)
        << (res.gpu_memory_mib > 0 ? ", " + FormatMemory(res.gpu_memory_mib) + " of GPU memory" : "")
        << (res.gpu_compute_pct > 0 ? ", " + std::to_string(res.gpu_compute_pct) + "% compute" : "") << "\n"
        << "  node:         " << Dash(info.node) << "\n"
        << "  endpoint:     " << Dash(info.endpoint) << "\n"
        << "  server key:   " << Dash(info.server_key) << "\n"
        << "  ttl:          " << (info.ttl_ms == 0 ? "none" : FormatDuration(static_cast<int64_t>(info.ttl_ms)))
        << "\n"
        << "  idle timeout: " << FormatDuration(static_cast<int64_t>(info.idle_timeout_ms)) << "\n"
        << "  lease:        " << FormatDuration(static_cast<int64_t>(info.lease_ms)) << ", renewed "
        << FormatAgo(info.renew_ms, s.WallMs()) << "\n"
        << "  gpu-seconds:  " << GpuSeconds(info.gpu_ms) << "\n";
  return kExitOk;
}

int RunSession(Session& s, const Invocation& inv) {
  const auto& args = inv.positionals;
  if (args.empty()) return s.Usage("session: open, list, show, close, renew or run");
  const std::string& verb = args[0];
  if (verb != "open" && verb != "run" && !inv.trailing.empty()) {
    return s.Usage("session " + verb + ": unexpected arguments after '--'");
  }
  if (verb == "open") {
    if (args.size() != 1) return s.Usage("session open takes flags only");
    return RunOpen(s, inv);
  }
  if (verb == "list") {
    if (args.size() != 1) return s.Usage("session list takes no arguments");
    return RunList(s, inv);
  }
  if (args.size() != 2) return s.Usage("session " + verb + ": expected one SESSION");
  auto job = SessionId(args[1]);
  if (!job.ok()) return s.Usage(job.status().message());
  if (verb == "show") return RunShow(s, *job);
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  if (verb == "close") {
    auto grace = ParseWaitTimeout(inv.flags["grace"].as<std::string>());
    if (!grace.ok()) return s.Usage(grace.status().WithContext("--grace").message());
    auto reply = (*client)->CancelJob(JobId(*job), static_cast<uint32_t>(*grace));
    if (!reply.ok()) return s.Fail(reply.status());
    s.out << "session " << *job << " " << (reply->state == "Cancelled" ? "Closed" : "Closing") << "\n";
    return kExitOk;
  }
  if (verb == "renew") {
    auto reply = (*client)->RenewSession(JobId(*job));
    if (!reply.ok()) return s.Fail(reply.status());
    s.out << "session " << *job << " " << reply->session.state << ", lease renewed\n";
    return kExitOk;
  }
  if (verb == "run") {
    if (inv.trailing.empty()) return s.Usage("session run SESSION -- CMD [ARGS...]");
    auto reply = (*client)->GetJob(JobId(*job));
    if (!reply.ok()) return s.Fail(reply.status());
    const SessionInfo& info = reply->summary.session;
    if (info.state != "Open") {
      return s.Fail(Status::FailedPrecondition("session " + std::to_string(*job) + " is " +
                                               (info.state.empty() ? "no session" : info.state) +
                                               (info.reason.empty() ? "" : ": " + info.reason)));
    }
    return RunAgainst(s, **client, inv, *job, info, inv.trailing);
  }
  return s.Usage("session: unknown '" + verb + "' (open, list, show, close, renew or run)");
}

void SessionOptions(cxxopts::Options& o) {
  o.add_options("session")
      ("gpus", "open: whole GPUs (default 1)", cxxopts::value<std::string>(), "N")
      ("gpu-memory", "open: a share of one GPU: its memory, e.g. 20Gi, or N%", cxxopts::value<std::string>(), "SIZE")
      ("gpu-compute", "open: a share of one GPU: its compute, 1-100 %", cxxopts::value<std::string>(), "PCT")
      ("sharing-qos", "open: best-effort, fixed-share or burst-share", cxxopts::value<std::string>(), "QOS")
      ("queue", "open: the queue it is admitted to (default: default)", cxxopts::value<std::string>(), "Q")
      ("class", "open: priority class, low (preemptible), medium or high", cxxopts::value<std::string>(), "C")
      ("name", "open: its name (default session)", cxxopts::value<std::string>(), "NAME")
      ("ttl", "open: how long it may stay open at most, e.g. 2h (default: no limit)", cxxopts::value<std::string>(),
       "DURATION")
      ("idle-timeout", "open: closed after this long without a driver call",
       cxxopts::value<std::string>()->default_value("15m"), "DURATION")
      ("lease", "open: closed when not renewed for this long (run renews it; default: the idle timeout)",
       cxxopts::value<std::string>(), "DURATION")
      ("near-switch", "open: prefer GPU nodes under this leaf switch (yours)", cxxopts::value<std::string>(), "LEAF")
      ("wait", "open: how long to wait for it to open (0: forever)",
       cxxopts::value<std::string>()->default_value("10m"), "DURATION")
      ("all", "list: ended sessions too (the newest 1000)")
      ("grace", "close: SIGTERM to SIGKILL for its server", cxxopts::value<std::string>()->default_value("10s"), "D")
      ("cuda-interposer", "run: gpool's libgpool-cuda.so.1 (default: next to gpool, or $GPOOL_CUDA_INTERPOSER)",
       cxxopts::value<std::string>(), "PATH");
}

constexpr CommandForm kSessionForms[] = {
    {"open [--gpus N | --gpu-memory 20Gi --gpu-compute 30] [--ttl 2h] [--idle-timeout 15m] [--lease D] [--queue Q] "
     "[--class C] [--near-switch LEAF] [--wait D] [-- CMD [ARGS...]]",
     "open [--gpus N | --gpu-memory SIZE ...] [-- CMD]",
     "open a remote GPU session; with CMD: run it against the session, close it, exit with CMD's code"},
    {"list [--all]", "list [--all]", "sessions: state, node, GPUs, GPU-seconds, endpoint or reason"},
    {"show SESSION", "show SESSION", "one session in full"},
    {"run SESSION -- CMD [ARGS...]", "run SESSION -- CMD", "run CMD here against the session's GPUs"},
    {"renew SESSION", "renew SESSION", "renew its lease (run does this while CMD runs)"},
    {"close SESSION [--grace D]", "close SESSION", "close it: its server frees every allocation and stops"},
};

}  // namespace

const CommandDef kSessionCommand = {
    .name = "session",
    .synopsis = "open|list|show|run|renew|close ...",
    .summary = "remote GPU sessions",
    .min_args = 1,
    .max_args = 2,
    .add_options = SessionOptions,
    .run = RunSession,
    .forms = kSessionForms,
    .takes_trailing_command = true,
};

}  // namespace gpool::cli
