// What the `gpool` command files share, and nothing public: the parsed command
// line (Invocation), one run's streams, options and client (Session), the
// command table's entry type (CommandDef), and the small parsers and label
// rules more than one command uses.
//
// The commands live one family to a file (cli_jobs.cc, cli_submit.cc,
// cli_nodes.cc, cli_queues.cc, cli_topology.cc, cli_admin.cc); each defines
// its commands' CommandDefs, declared below, and cli.cc lists them in the one
// table the dispatcher and the help read. The dispatcher in cli.cc knows no
// command by name: what a command needs done to its arguments before flag
// parsing is its own `prepare` hook.
//
// Everything here is in gpool::cli with one definition (cli_common.cc or the
// family file that owns it). CI builds these files as one unity translation
// unit, so a helper private to one file must have a name no other file of
// gpool_cli uses in its anonymous namespace.
#pragma once

#include <cxxopts.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli.h"
#include "client/client.h"
#include "protocol/base/ids.h"
#include "protocol/base/status.h"
#include "protocol/event.h"
#include "protocol/messages_nodes.h"

namespace gpool::cli {

// --- One run of the CLI ------------------------------------------------------------

// A parsed command line.
struct Invocation {
  std::string command;
  cxxopts::ParseResult flags;
  std::vector<std::string> positionals;
  std::vector<std::string> trailing;   // after "--" (submit's command)
  std::vector<std::string> env_flags;  // --env K=V, in order (taken out by submit's prepare hook)
};

class Session {
 public:
  Session(std::ostream& out, std::ostream& err, const ClientFactory& factory, const CliEnv& env)
      : out(out), err(err), env(env), factory_(factory) {}

  std::ostream& out;
  std::ostream& err;
  const CliEnv& env;
  ClientOptions options;
  bool json = false;

  // The client, created on first use.
  Result<Client*> client() {
    if (!client_) {
      if (!factory_) return Status::Internal("no client factory");
      GPOOL_ASSIGN_OR_RETURN(client_, factory_(options));
      if (!client_) return Status::Internal("client factory returned nothing");
    }
    return client_.get();
  }

  int Fail(const Status& status) {
    err << "gpool: " << status.ToString() << "\n";
    return ExitCodeFor(status);
  }

  int Usage(const std::string& message) {
    err << "gpool: " << Status::InvalidArgument(message).ToString() << "\n"
        << "Run 'gpool --help' for usage.\n";
    return kExitUsage;
  }

  int64_t WallMs() const { return env.clock->WallMs(); }

 private:
  const ClientFactory& factory_;
  std::unique_ptr<Client> client_;
};

// --- The command table ---------------------------------------------------------------

// One way of calling a command that has several (`admin replica add|remove|list`).
struct CommandForm {
  std::string_view usage;     // in 'gpool help COMMAND': every flag
  std::string_view synopsis;  // in the command list of 'gpool --help': kept short so the list stays narrow
  std::string_view summary;
};

struct CommandDef {
  std::string_view name;
  std::string_view synopsis;
  std::string_view summary;
  size_t min_args;
  size_t max_args;
  void (*add_options)(cxxopts::Options&);
  int (*run)(Session&, const Invocation&);
  // When not empty, how help lists the command instead of synopsis/summary.
  std::span<const CommandForm> forms = {};
  // Runs on the arguments after the command name (less any "--" and what
  // follows it), before cxxopts sees them: for arguments cxxopts would take
  // the wrong way, such as a negative number read as a flag or a value with
  // commas split in two. It may take arguments out of `rest` into `inv`, or
  // refuse them. Returns the exit code to stop with, or nullopt to go on.
  std::optional<int> (*prepare)(Session& s, Invocation& inv, std::vector<std::string>& rest) = nullptr;
  // Whether the command takes a command line of its own after "--" (into
  // Invocation::trailing); for any other command, arguments there are an error.
  bool takes_trailing_command = false;
};

// `gpool admin keygen` and its flags (cli_keys.cc), reached through `admin`.
int RunAdminKeygen(Session& s, const Invocation& inv);
int RunAdminNodeEnrol(Session& s, const Invocation& inv);
int RunReplicaRotateKey(Session& s, const Invocation& inv);  // cli_replica_keys.cc
void AdminKeyOptions(cxxopts::Options& o);
// `gpool node pending|approve|reject` and `gpool admin join-token ...`
// (cli_enrolment.cc); their flags (--ttl, --labels) with admin's.
int RunNodeEnrolment(Session& s, const Invocation& inv);
int RunAdminJoinToken(Session& s, const Invocation& inv);
void EnrolmentOptions(cxxopts::Options& o);
// `gpool admin snapshot save|restore|info` (cli_snapshot.cc).
int RunAdminSnapshot(Session& s, const Invocation& inv);
void AdminSnapshotOptions(cxxopts::Options& o);

// The add_options of a command without flags of its own (help then shows
// only the global ones).
void NoOptions(cxxopts::Options& options);

// Each command's entry, defined in its family's file; cli.cc lists them, in
// the order `gpool --help` shows them.
extern const CommandDef kSubmitCommand;    // cli_submit.cc
extern const CommandDef kJobsCommand;      // cli_jobs.cc
extern const CommandDef kJobCommand;       // cli_jobs.cc
extern const CommandDef kCancelCommand;    // cli_jobs.cc
extern const CommandDef kLogsCommand;      // cli_jobs.cc
extern const CommandDef kWaitCommand;      // cli_jobs.cc
extern const CommandDef kExplainCommand;   // cli_jobs.cc
extern const CommandDef kNodesCommand;     // cli_nodes.cc
extern const CommandDef kNodeCommand;      // cli_nodes.cc
extern const CommandDef kQueueCommand;     // cli_queues.cc
extern const CommandDef kTopologyCommand;  // cli_topology.cc
extern const CommandDef kStatusCommand;    // cli_admin.cc
extern const CommandDef kAdminCommand;     // cli_admin.cc
extern const CommandDef kEventsCommand;    // cli_events.cc
extern const CommandDef kProbeCommand;     // cli_probe.cc
extern const CommandDef kExecCommand;      // cli_exec.cc
extern const CommandDef kWhoAmICommand;    // cli_users.cc
extern const CommandDef kAuditCommand;     // cli_users.cc
extern const CommandDef kSessionCommand;   // cli_sessions.cc
extern const CommandDef kUsageCommand;     // cli_usage.cc
extern const CommandDef kInvoiceCommand;   // cli_usage.cc
extern const CommandDef kPricesCommand;    // cli_usage.cc
extern const CommandDef kCreditCommand;    // cli_credit.cc
extern const CommandDef kTokenCommand;     // cli_tokens.cc
// `admin user|role|bootstrap` (cli_users.cc), dispatched from `admin`, and their flags.
int RunAdminUsers(Session& s, const Invocation& inv);
void AdminUserOptions(cxxopts::Options& o);
extern const CommandDef kExecRshCommand;   // cli_exec.cc

// The real CliEnv's exec signal hooks (cli_exec.cc).
void WatchExecSignals();
int TakeExecSignal();

// --- Global flags (cli.cc) -----------------------------------------------------------

// Whether `arg` is a global flag that takes the next argument as its value
// ("-c", "--token", ...): prepare hooks skip that value rather than judge it.
bool TakesValue(std::string_view arg);

// "--token=X" and the like: a global flag with its value attached.
bool IsLongFlagWithValue(std::string_view arg);

// --- Shared by several commands ------------------------------------------------------

// Polls GetJob until `job` ends, then prints it (`wait`, `submit --wait`).
// Exit 0 when it succeeded, 1 when it failed or was cancelled, 4 when
// `timeout_ms` (> 0) passes first. Defined in cli_jobs.cc.
int WaitForJob(Session& s, JobId job, int64_t timeout_ms);
// cli_watch.cc: `gpool events --follow` after the listing (events past
// filter.after_seq that pass its node and job), and `gpool jobs --watch`.
int FollowEvents(Session& s, const ListEvents& filter, int64_t timeout_ms,
                 const std::function<void(const std::vector<ClusterEvent>&)>& print);
int WatchJobs(Session& s, int64_t timeout_ms);

// A task group's GPU share flags into `res` (cli_submit.cc; `session open` too).
Status ReadShareFlags(const cxxopts::ParseResult& f, Resources& res);

// --- Small parsers (cli_common.cc) ---------------------------------------------------

// Decimal digits only, at most `max`; the error has no message (callers word it).
Result<uint64_t> ParseUnsignedText(std::string_view text, uint64_t max);

// A flag's unsigned value: "--bytes: expected an integer from 0 to MAX, got 'x'".
Result<uint64_t> ParseUnsignedFlag(std::string_view flag, const std::string& text, uint64_t max);

// A flag's int32 value, which may be negative: "--priority: expected an integer, got 'x'".
Result<int32_t> ParseInt32Flag(std::string_view flag, const std::string& text);

// --- Labels and taints (cli_common.cc) -----------------------------------------------
//
// Labels, taints, node selectors and tolerations share the coordinator's
// label rules (protocol/validate.h); these checks name the command or flag
// (`context`, e.g. "node taint" or "--selector") and what the key is for
// (`kind`: "label" or "taint"), so the message says where to look.

// 1-63 of [A-Za-z0-9._/-]; `arg` is the whole argument, for the message.
Status CheckLabelKey(std::string_view context, std::string_view kind, const std::string& arg, const std::string& key);

// At most 63 of [A-Za-z0-9._-]; may be empty.
Status CheckLabelValue(std::string_view context, const std::string& key, const std::string& value);

// "KEY=VALUE" into `out`; a key given twice must keep its value.
Status AddKeyValue(std::string_view context, std::string_view kind, const std::string& arg,
                   std::map<std::string, std::string>& out);

// kubectl style: "team=vision" sets team, "team-" removes it. `kind` is
// "label" or "taint"; `context` is "node label" or "node taint".
Status ParseKeyValueArgs(std::string_view context, std::string_view kind, std::span<const std::string> args,
                         std::map<std::string, std::string>& set, std::vector<std::string>& remove);

}  // namespace gpool::cli
