// The generic half of the `gpool` command line (cli.h): global flags, help,
// the public parsers, and the dispatcher that finds a command in the table and
// runs it. What any one command does, and what its arguments need before flag
// parsing, is in its family's file (cli_internal.h lists them); the dispatcher
// only calls a CommandDef's hooks and never tests a command's name.
#include "client/cli.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "client/cli_internal.h"
#include "client/format.h"
#include "protocol/envelope.h"
#include "protocol/security/keys.h"
#include "protocol/security/server_keys.h"
#include "protocol/types.h"
#include "protocol/validate.h"
#include "topology/quantity.h"

#ifndef GPOOL_VERSION
#define GPOOL_VERSION "0.0.0"
#endif

namespace gpool::cli {
namespace {

constexpr char kDefaultCoordinator[] = "tcp://127.0.0.1:7400";

// Every command, in the order `gpool --help` lists them.
constexpr const CommandDef* kCommands[] = {
    &kSubmitCommand, &kJobsCommand, &kJobCommand, &kCancelCommand, &kLogsCommand, &kWaitCommand, &kNodesCommand,
    &kNodeCommand, &kEventsCommand, &kQueueCommand, &kTopologyCommand, &kExplainCommand, &kStatusCommand,
    &kAdminCommand,
    &kProbeCommand, &kExecCommand, &kExecRshCommand, &kWhoAmICommand, &kTokenCommand, &kAuditCommand, &kSessionCommand,
    &kUsageCommand, &kInvoiceCommand, &kPricesCommand, &kCreditCommand,
};

const CommandDef* FindCommand(std::string_view name) {
  for (const CommandDef* c : kCommands) {
    if (c->name == name) return c;
  }
  return nullptr;
}

void GlobalOptions(cxxopts::Options& o) {
  o.add_options("global")
      ("c,coordinator",
       "coordinator endpoint(s), comma-separated (env GPOOL_COORDINATOR, default tcp://127.0.0.1:7400)",
       cxxopts::value<std::string>(), "ENDPOINTS")
      ("token", "cluster token (env GPOOL_TOKEN)", cxxopts::value<std::string>(), "TOKEN")
      ("key-file", "CurveZMQ: your secret key file (env GPOOL_KEY_FILE, default ~/.config/gpool/user.key)",
       cxxopts::value<std::string>(), "FILE")
      ("coordinator-key", "CurveZMQ: the coordinator's public key file(s), one or one per endpoint (env "
       "GPOOL_COORDINATOR_KEY, default ~/.config/gpool/coordinator.pub); an endpoint's entry may name several "
       "files joined by '+', tried in turn (a replica whose key is being rotated)",
       cxxopts::value<std::string>(), "FILE")
      ("insecure", "plaintext, for a coordinator started with --insecure",
       cxxopts::value<bool>()->default_value("false"))
      ("timeout-ms", "how long one request attempt waits (default 5000)", cxxopts::value<std::string>(), "MS")
      ("json", "print JSON instead of tables", cxxopts::value<bool>()->default_value("false"))
      ("h,help", "show help", cxxopts::value<bool>()->default_value("false"))
      ("version", "print the version", cxxopts::value<bool>()->default_value("false"));
}

Result<cxxopts::ParseResult> ParseFlags(cxxopts::Options& options, const std::string& program,
                                        const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  argv.push_back(program.c_str());
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    return options.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const cxxopts::exceptions::exception& e) {
    return Status::InvalidArgument(e.what());
  }
}

// CurveZMQ for the session: --insecure is plaintext; a key file named by
// flag or environment must work; otherwise the default files
// (~/.config/gpool/user.key and coordinator.pub) are used when both exist,
// and plaintext when they do not (a coordinator run with --insecure).
Status ApplySecurity(Session& s, const cxxopts::ParseResult& flags,
                     const std::function<std::optional<std::string>(const char*)>& from_env) {
  if (flags["insecure"].as<bool>()) return Status::Ok();
  std::string dir;
  if (auto config = from_env("XDG_CONFIG_HOME")) {
    dir = *config + "/gpool";
  } else if (auto home = from_env("HOME")) {
    dir = *home + "/.config/gpool";
  }
  std::optional<std::string> key_file =
      flags.count("key-file") ? std::optional(flags["key-file"].as<std::string>()) : from_env("GPOOL_KEY_FILE");
  std::optional<std::string> server_files = flags.count("coordinator-key")
                                                ? std::optional(flags["coordinator-key"].as<std::string>())
                                                : from_env("GPOOL_COORDINATOR_KEY");
  const bool explicit_key = key_file.has_value();
  // Inside a task of a secured cluster: the task's own exec key (the exec
  // token is a CURVE secret key derived for that task attempt, admitted
  // while it is bound or running) and the coordinator's public key, both
  // set by gpool in the task's environment; an explicit --key-file still wins.
  if (!explicit_key && !flags.count("coordinator-key")) {
    // One key per GPOOL_COORDINATOR endpoint, comma-separated, same order.
    auto token = from_env("GPOOL_EXEC_TOKEN");
    auto coordinators = from_env("GPOOL_COORDINATOR_PUBLIC_KEY");
    std::vector<std::string> keys;
    const std::string coordinator_keys = coordinators.value_or("");
    for (std::string_view rest = coordinator_keys; !rest.empty();) {
      const size_t comma = rest.find(',');
      keys.emplace_back(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    const bool all_keys = !keys.empty() && std::all_of(keys.begin(), keys.end(), [](const std::string& k) {
      return security::IsZ85Key(k);
    });
    if (token && all_keys && security::IsZ85Key(*token)) {
      auto job_keys = security::KeyPairOfSecret(*token);
      if (!job_keys.ok()) return job_keys.status().WithContext("GPOOL_EXEC_TOKEN");
      s.options.curve_keys = *job_keys;
      s.options.server_keys = std::move(keys);
      return Status::Ok();
    }
  }
  if (!key_file && !dir.empty()) key_file = dir + "/user.key";
  if (!server_files && !dir.empty()) server_files = dir + "/coordinator.pub";
  if (!explicit_key && (!key_file || access(key_file->c_str(), F_OK) != 0 || !server_files ||
                        access(server_files->c_str(), F_OK) != 0)) {
    return Status::Ok();  // no keys set up: plaintext
  }
  auto keys = security::ReadSecretKeyFile(*key_file);
  if (!keys.ok()) return keys.status().WithContext("--key-file");
  if (!server_files) return Status::InvalidArgument("--key-file needs --coordinator-key (or GPOOL_COORDINATOR_KEY)");
  std::vector<std::string> server_keys;
  std::vector<std::string> files;
  for (size_t start = 0; start <= server_files->size();) {
    const size_t comma = server_files->find(',', start);
    files.push_back(server_files->substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? server_files->size() + 1 : comma + 1;
  }
  for (const std::string& file : files) {
    // "new.pub+old.pub": a replica whose key is being rotated (either is tried).
    auto key = security::ReadServerKeyEntry(file);
    if (!key.ok()) return key.status().WithContext("--coordinator-key");
    server_keys.push_back(*key);
  }
  s.options.curve_keys = *keys;
  s.options.server_keys = std::move(server_keys);
  return Status::Ok();
}

// Applies the global flags and environment to the session.
Status ApplyGlobals(Session& s, const cxxopts::ParseResult& flags) {
  auto from_env = [&](const char* name) -> std::optional<std::string> {
    if (!s.env.getenv) return std::nullopt;
    auto v = s.env.getenv(name);
    if (v && v->empty()) return std::nullopt;
    return v;
  };
  if (flags.count("coordinator")) {
    s.options.endpoints = flags["coordinator"].as<std::string>();
  } else {
    s.options.endpoints = from_env("GPOOL_COORDINATOR").value_or(kDefaultCoordinator);
  }
  if (flags.count("token")) {
    s.options.token = flags["token"].as<std::string>();
  } else {
    s.options.token = from_env("GPOOL_TOKEN").value_or("");
  }
  GPOOL_RETURN_IF_ERROR(ApplySecurity(s, flags, from_env));
  if (flags.count("timeout-ms")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t ms, ParseUnsignedFlag("--timeout-ms", flags["timeout-ms"].as<std::string>(),
                                                          3'600'000));
    if (ms == 0) return Status::InvalidArgument("--timeout-ms: must be at least 1");
    s.options.timeout_ms = static_cast<int>(ms);
  }
  s.json = flags["json"].as<bool>();
  return Status::Ok();
}

std::string CommandHelp(const CommandDef& command) {
  cxxopts::Options options("gpool " + std::string(command.name), std::string(command.summary));
  if (command.forms.empty()) {
    options.custom_help(std::string(command.synopsis));
  } else {
    // One usage line per form: "gpool admin replica add ...\n  gpool admin replica remove ID".
    std::string usage;
    for (const auto& form : command.forms) {
      if (!usage.empty()) usage += "\n  gpool " + std::string(command.name) + " ";
      usage += std::string(form.usage);
    }
    options.custom_help(usage);
  }
  options.positional_help("");
  options.set_width(100);
  command.add_options(options);
  GlobalOptions(options);
  std::vector<std::string> groups;
  if (command.add_options != NoOptions) groups.push_back(std::string(command.name));
  groups.push_back("global");
  return options.help(groups);
}

// The command list of `gpool --help`: one row per command, or per form of one.
std::string CommandList() {
  Table commands({"", ""});
  for (const CommandDef* c : kCommands) {
    if (!c->forms.empty()) {
      for (const auto& form : c->forms) {
        commands.AddRow({std::string(c->name) + " " + std::string(form.synopsis), std::string(form.summary)});
      }
      continue;
    }
    std::string usage(c->name);
    if (!c->synopsis.empty()) {
      usage += ' ';
      usage += c->synopsis;
    }
    commands.AddRow({std::move(usage), std::string(c->summary)});
  }
  // Drop the empty header line.
  std::string table = commands.Render("  ");
  return table.substr(table.find('\n') + 1);
}

// `gpool help [COMMAND]`: the dispatcher's own, not a command of the table.
constexpr std::string_view kHelpTopic = "help";

// RunCli, once the session is made.
int Dispatch(Session& session, std::vector<std::string> args) {
  std::ostream& out = session.out;
  std::ostream& err = session.err;

  // The command is the first argument that is neither a global flag nor its value.
  size_t at = 0;
  for (; at < args.size(); ++at) {
    const std::string& a = args[at];
    if (a == "--") {
      at = args.size();
      break;
    }
    if (a.empty() || a[0] != '-' || a == "-") break;
    if (TakesValue(a)) ++at;
  }

  if (at >= args.size()) {
    cxxopts::Options options("gpool");
    GlobalOptions(options);
    auto flags = ParseFlags(options, "gpool", args);
    if (!flags.ok()) return session.Usage(flags.status().message());
    if (flags->count("help") && (*flags)["help"].as<bool>()) {
      out << UsageText();
      return kExitOk;
    }
    if (flags->count("version") && (*flags)["version"].as<bool>()) {
      out << "gpool " << GPOOL_VERSION << " (protocol " << kProtocolVersion << ")\n";
      return kExitOk;
    }
    err << UsageText();
    return session.Usage("missing COMMAND");
  }

  const std::string name = args[at];
  std::vector<std::string> before(args.begin(), args.begin() + static_cast<long>(at));
  std::vector<std::string> rest(args.begin() + static_cast<long>(at) + 1, args.end());

  if (name == kHelpTopic) {
    const CommandDef* topic = rest.empty() ? nullptr : FindCommand(rest[0]);
    out << (topic != nullptr ? CommandHelp(*topic) : UsageText());
    return kExitOk;
  }
  const CommandDef* command = FindCommand(name);
  if (command == nullptr) return session.Usage("unknown command '" + name + "'");

  Invocation inv;
  inv.command = name;
  // Everything after "--" is a command line for the command to run (submit's
  // job), untouched; only a command that takes one may be given one.
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--") {
      inv.trailing.assign(rest.begin() + static_cast<long>(i) + 1, rest.end());
      rest.resize(i);
      if (inv.trailing.empty()) return session.Usage(name + ": nothing after '--'");
      break;
    }
  }
  if (!inv.trailing.empty() && !command->takes_trailing_command) {
    return session.Usage(name + ": unexpected arguments after '--'");
  }
  // Arguments cxxopts would misread are for the command itself to sort out.
  if (command->prepare != nullptr) {
    if (std::optional<int> stop = command->prepare(session, inv, rest)) return *stop;
  }

  cxxopts::Options options("gpool " + name);
  command->add_options(options);
  GlobalOptions(options);
  std::vector<std::string> all = before;
  all.insert(all.end(), rest.begin(), rest.end());
  auto flags = ParseFlags(options, "gpool " + name, all);
  if (!flags.ok()) return session.Usage(name + ": " + flags.status().message());
  inv.flags = std::move(flags).value();
  if (inv.flags["help"].as<bool>()) {
    out << CommandHelp(*command);
    return kExitOk;
  }
  if (inv.flags["version"].as<bool>()) {
    out << "gpool " << GPOOL_VERSION << " (protocol " << kProtocolVersion << ")\n";
    return kExitOk;
  }
  inv.positionals = inv.flags.unmatched();
  if (inv.positionals.size() < command->min_args || inv.positionals.size() > command->max_args) {
    return session.Usage("usage: gpool " + name + " " + std::string(command->synopsis));
  }
  if (Status s = ApplyGlobals(session, inv.flags); !s.ok()) return session.Fail(s);
  return command->run(session, inv);
}

}  // namespace

bool TakesValue(std::string_view arg) {
  return arg == "-c" || arg == "--coordinator" || arg == "--token" || arg == "--timeout-ms" ||
         arg == "--key-file" || arg == "--coordinator-key";
}

bool IsLongFlagWithValue(std::string_view arg) {
  for (std::string_view flag : {"--coordinator=", "--token=", "--timeout-ms=", "--json=", "--help=", "--version=",
                                "--key-file=", "--coordinator-key=", "--insecure="}) {
    if (arg.rfind(flag, 0) == 0) return true;
  }
  return false;
}

}  // namespace gpool::cli

namespace gpool {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kNotFound: return kExitNotFound;
    case StatusCode::kUnavailable:
    case StatusCode::kNotLeader:
    case StatusCode::kDeadlineExceeded: return kExitUnavailable;
    default: return kExitError;
  }
}

CliEnv CliEnv::System() {
  CliEnv env;
  env.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  env.sleep_ms = [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  env.clock = &SystemClock::Get();
  env.in = &std::cin;
  env.watch_signals = cli::WatchExecSignals;
  env.take_signal = cli::TakeExecSignal;
  env.run_program = [](const std::vector<std::string>& argv) -> Result<int> {
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return Status::Unavailable(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "gpool: cannot run %s: %s\n", args[0], std::strerror(errno));
      ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return Status::Internal(std::string("waitpid: ") + std::strerror(errno));
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
  };
  return env;
}

std::string UsageText() {
  std::ostringstream out;
  out << "Usage: gpool [global flags] COMMAND [args]\n\n"
         "Commands:\n";
  out << cli::CommandList();
  out << "\n"
         "Global flags (before or after COMMAND):\n"
         "  -c, --coordinator ENDPOINTS  coordinator address(es), comma-separated; on a timeout the next is\n"
         "                               tried (env GPOOL_COORDINATOR, default "
      << cli::kDefaultCoordinator
      << ")\n"
         "      --token TOKEN            cluster token (env GPOOL_TOKEN)\n"
         "      --key-file FILE          CurveZMQ: your secret key (env GPOOL_KEY_FILE, default\n"
         "                               ~/.config/gpool/user.key)\n"
         "      --coordinator-key FILE   the coordinator's public key(s) (env GPOOL_COORDINATOR_KEY, default\n"
         "                               ~/.config/gpool/coordinator.pub); without both files: plaintext\n"
         "      --insecure               plaintext, for a coordinator run with --insecure\n"
         "      --timeout-ms MS          how long one request attempt waits (default 5000; 3 retries)\n"
         "      --json                   print JSON instead of tables\n"
         "  -h, --help                   this help; 'gpool COMMAND --help' shows a command's flags\n"
         "      --version                print the version\n"
         "\n"
         "Examples:\n"
         "  gpool submit job.yaml\n"
         "  gpool submit --gpus 1 --replicas 2 --env MODE=test -- python3 train.py --epochs 3\n"
         "  gpool jobs --all\n"
         "  gpool logs 17.1\n"
         "  gpool wait 17 --timeout 10m\n"
         "  gpool admin replica add 4 --peer-addr tcp://10.0.0.4:7402 --client-addr tcp://10.0.0.4:7400\n"
         "  gpool nodes --devices\n"
         "  gpool node show gpu-node-3\n"
         "  gpool node cordon gpu-node-3\n"
         "  gpool node label gpu-node-3 rack=r1 team=vision old-\n"
         "  gpool queue create research --capability gpu=16,cpu=64,memory=256Gi --deserved gpu=8\n"
         "  gpool explain 17\n"
         "\n"
         "Exit codes: 0 ok; 1 the job failed or was cancelled (wait); 2 usage error or invalid spec;\n"
         "            3 not found; 4 coordinator unavailable or timed out; 5 any other error.\n";
  return out.str();
}

Result<JobId> ParseJobId(std::string_view text) {
  auto v = cli::ParseUnsignedText(text, std::numeric_limits<uint64_t>::max());
  if (!v.ok() || *v == 0) {
    return Status::InvalidArgument("expected a job ID (a positive integer), got '" + std::string(text) + "'");
  }
  return JobId(*v);
}

Result<TaskRef> ParseTaskRef(std::string_view text) {
  const Status error = Status::InvalidArgument("expected a TASK as JOB.INDEX (e.g. 17.2) or JOB, got '" +
                                               std::string(text) + "'");
  size_t dot = text.find('.');
  auto job = cli::ParseUnsignedText(text.substr(0, dot), std::numeric_limits<uint64_t>::max());
  if (!job.ok() || *job == 0) return error;
  TaskRef ref{JobId(*job), 0};
  if (dot != std::string_view::npos) {
    auto index = cli::ParseUnsignedText(text.substr(dot + 1), UINT32_MAX);
    if (!index.ok()) return error;
    ref.index = static_cast<uint32_t>(*index);
  }
  return ref;
}

Result<int64_t> ParseWaitTimeout(std::string_view text) {
  auto ms = topology::ParseDurationMs(text);
  if (!ms.ok()) {
    return Status::InvalidArgument("expected a duration like 90, 90s, 5m or 2h, got '" + std::string(text) + "'");
  }
  return static_cast<int64_t>(*ms);
}

Result<Quota> ParseQuota(std::string_view flag, std::string_view text) {
  const std::string where = std::string(flag) + ": ";
  if (text == "none") return Quota{};
  if (text.empty()) {
    return Status::InvalidArgument(where + "expected RESOURCE=AMOUNT,... (e.g. gpu=16,cpu=64,memory=256Gi) or none");
  }
  Quota quota;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item(text.substr(start, comma - start));
    start = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument(where + "expected RESOURCE=AMOUNT, got '" + item + "'");
    }
    const std::string name = item.substr(0, eq);
    const std::string amount = item.substr(eq + 1);
    if (!IsQuotaResource(name)) {
      return Status::InvalidArgument(where + "unknown resource '" + name +
                                     "' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)");
    }
    Result<uint64_t> value = Status::Internal("unset");
    if (name == "cpu") {
      value = topology::ParseCpuMilli(amount);
    } else if (name == "memory") {
      value = topology::ParseMemoryMib(amount, topology::Rounding::kUp);
    } else {
      value = cli::ParseUnsignedText(amount, std::numeric_limits<uint64_t>::max());
      if (!value.ok()) value = Status::InvalidArgument("expected a whole number of GPUs, got '" + amount + "'");
    }
    if (!value.ok()) return Status::InvalidArgument(where + name + ": " + value.status().message());
    if (!quota.emplace(name, *value).second) return Status::InvalidArgument(where + name + " is given twice");
  }
  return quota;
}

int RunCli(std::vector<std::string> args, std::ostream& out, std::ostream& err, const ClientFactory& factory,
           const CliEnv& env) {
  cli::Session session(out, err, factory, env);
  return cli::Dispatch(session, std::move(args));
}

}  // namespace gpool
