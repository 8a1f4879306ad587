// `gpool exec TASK -- CMD...`: runs a command inside a running task (its
// devices, environment, working directory, cgroup) through the task's
// worker, streams its stdout and stderr here, and exits with its exit code.
// `gpool exec-rsh HOST CMD...` (also run as `gpool-rsh`) is the same for
// MPI's remote agent: HOST is a task's stable name from the job's hostfile
// and CMD is joined into one shell command, as ssh does (messages_exec.h).
//
// Credentials: --token, else the task's GPOOL_EXEC_TOKEN when this runs in
// a task (its own, issue 48: it opens only that task's job, whose id then
// scopes stable names, and only while that task runs), else GPOOL_TOKEN. Ctrl-C, SIGTERM and SIGHUP are forwarded to the command; a
// second Ctrl-C sends SIGKILL.
#include <signal.h>

#include <atomic>
#include <optional>
#include <random>

#include "client/cli_internal.h"
#include "protocol/base/text.h"
#include "protocol/messages_exec.h"

namespace gpool::cli {
namespace {

constexpr int64_t kExecIdlePollMs = 50;  // between polls that found nothing new
constexpr uint32_t kExecLeaseMs = 15'000;

std::atomic<int> g_exec_signal{0};

// A random key per start, so the client's own retry of it cannot start the
// command twice (messages_exec.h).
std::string ExecStartKey() {
  std::random_device random;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  for (int i = 0; i < 4; ++i) {
    uint32_t word = random();
    for (int nibble = 0; nibble < 8; ++nibble, word >>= 4) key += kHex[word & 0xf];
  }
  return key;
}

void OnExecSignal(int signal) { g_exec_signal.store(signal); }

struct ExecTarget {
  std::string task;
  uint64_t job_id = 0;
};

// The exec token from the task's env replaces the session's token unless
// --token was given; with it, names are looked up in the task's own job.
ExecTarget ScopeExec(Session& s, const Invocation& inv, const std::string& task, bool always_exec_token) {
  ExecTarget target{task, 0};
  if (!s.env.getenv) return target;
  const auto exec_token = s.env.getenv("GPOOL_EXEC_TOKEN");
  if (!exec_token || exec_token->empty()) return target;
  if (inv.flags.count("token") && !always_exec_token) return target;
  s.options.token = *exec_token;
  if (auto job = s.env.getenv("GPOOL_JOB_ID")) {
    auto id = ParseUnsignedText(*job, UINT64_MAX);
    if (id.ok()) target.job_id = *id;
  }
  return target;
}

int RunExecLoop(Session& s, const ExecTarget& target, std::vector<std::string> command) {
  auto connected = s.client();
  if (!connected.ok()) return s.Fail(connected.status());
  Client* client = *connected;
  gpool::ExecStart start;
  start.task = target.task;
  start.job_id = target.job_id;
  start.command = std::move(command);
  start.lease_ms = kExecLeaseMs;
  start.key = ExecStartKey();
  if (Status valid = ValidateExecCommand(start.command, start.lease_ms); !valid.ok()) return s.Fail(valid);
  auto started = client->ExecStart(start);
  if (!started.ok()) return s.Fail(started.status());
  if (s.env.watch_signals) s.env.watch_signals();
  gpool::ExecPoll poll;
  poll.task = target.task;
  poll.job_id = target.job_id;
  poll.exec_id = started->exec_id;
  int interrupts = 0;
  for (;;) {
    if (const int signal = s.env.take_signal ? s.env.take_signal() : 0; signal != 0) {
      gpool::ExecSignal forward{target.task, target.job_id, started->exec_id, signal};
      if (signal == SIGINT && ++interrupts > 1) forward.signal = SIGKILL;
      if (Status sent = client->ExecSignal(forward); !sent.ok()) return s.Fail(sent);
    }
    auto reply = client->ExecPoll(poll);
    if (!reply.ok()) return s.Fail(reply.status());
    s.out << reply->stdout_data << std::flush;
    s.err << reply->stderr_data << std::flush;
    poll.stdout_offset += reply->stdout_data.size();
    poll.stderr_offset += reply->stderr_data.size();
    if (reply->exited) {
      if (!reply->message.empty()) s.err << "gpool: the command was ended: " << reply->message << "\n";
      return reply->signal != 0 ? 128 + reply->signal : reply->exit_code;
    }
    if (reply->stdout_data.empty() && reply->stderr_data.empty()) s.env.sleep_ms(kExecIdlePollMs);
  }
}

int RunExec(Session& s, const Invocation& inv) {
  if (inv.trailing.empty()) return s.Usage("exec: give the command after '--': gpool exec TASK -- CMD [ARGS...]");
  return RunExecLoop(s, ScopeExec(s, inv, inv.positionals[0], false), inv.trailing);
}

// ssh's options that take a value; the others are single letters.
bool SshOptionTakesValue(const std::string& arg) {
  static const std::string kWithValue = "bcDEeFIiJLlmOopQRSWw";
  return arg.size() == 2 && arg[0] == '-' && kWithValue.find(arg[1]) != std::string::npos;
}

// exec-rsh is called the way ssh is (`AGENT [ssh options] HOST CMD...`):
// cxxopts must not see CMD's own flags, so everything after HOST goes into
// the trailing command here, and ssh's options before HOST are skipped.
std::optional<int> PrepareExecRsh(Session& s, Invocation& inv, std::vector<std::string>& rest) {
  std::vector<std::string> after_dashes = std::move(inv.trailing);
  size_t i = 0;
  while (i < rest.size() && rest[i].size() > 1 && rest[i][0] == '-') i += SshOptionTakesValue(rest[i]) ? 2 : 1;
  if (i >= rest.size()) return s.Usage("usage: gpool exec-rsh HOST CMD [ARGS...]");
  std::vector<std::string> command(rest.begin() + static_cast<long>(i) + 1, rest.end());
  if (!after_dashes.empty()) {
    if (!command.empty()) command.push_back("--");
    command.insert(command.end(), after_dashes.begin(), after_dashes.end());
  }
  if (command.empty()) return s.Usage("exec-rsh: no command for " + rest[i]);
  inv.trailing = std::move(command);
  rest = {rest[i]};
  return std::nullopt;
}

// The remote shell line: `words` as ssh would run them, in a session
// directory of its own for Open MPI's daemon. Several tasks (and mpirun
// itself) may share a machine and its /tmp, and Open MPI's daemons of one job
// on one machine race to create the same session directory. A per-task
// setting in the tasks' env would not do: mpirun copies the MCA settings of
// its own env onto every daemon's command line, which wins over the env.
std::string RshShellLine(const std::vector<std::string>& words) {
  return "gpool_rsh_dir=\"${TMPDIR:-/tmp}/gpool-rsh.$$\"; "
         "mkdir -p \"$gpool_rsh_dir\" && export OMPI_MCA_orte_tmpdir_base=\"$gpool_rsh_dir\"; " +
         JoinWords(words) + "; gpool_rsh_rc=$?; rm -rf \"$gpool_rsh_dir\"; exit $gpool_rsh_rc";
}

int RunExecRsh(Session& s, const Invocation& inv) {
  return RunExecLoop(s, ScopeExec(s, inv, inv.positionals[0], true), {"/bin/sh", "-c", RshShellLine(inv.trailing)});
}

}  // namespace

void WatchExecSignals() {
  struct sigaction action {};
  action.sa_handler = OnExecSignal;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
}

int TakeExecSignal() { return g_exec_signal.exchange(0); }

const CommandDef kExecCommand = {
    .name = "exec",
    .synopsis = "TASK -- CMD [ARGS...]",
    .summary = "run a command in a running task (TASK: its stable name or JOB.INDEX); exits with its code",
    .min_args = 1,
    .max_args = 1,
    .add_options = NoOptions,
    .run = RunExec,
    .takes_trailing_command = true,
};

const CommandDef kExecRshCommand = {
    .name = "exec-rsh",
    .synopsis = "HOST CMD [ARGS...]",
    .summary = "MPI's remote agent (also run as gpool-rsh): exec CMD as a shell line in the task named HOST",
    .min_args = 1,
    .max_args = 1,
    .add_options = NoOptions,
    .run = RunExecRsh,
    .prepare = PrepareExecRsh,
    .takes_trailing_command = true,
};

}  // namespace gpool::cli
