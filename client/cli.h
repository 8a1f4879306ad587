// The `gpool` command line: argument parsing and command dispatch.
//
// RunCli is the whole program minus main(): it takes the arguments, writes to
// the given streams and returns the exit code, getting its Client from a
// factory and its environment, clock and sleep from a CliEnv, so tests run
// every command against a FakeClient with a FakeClock and no sleeps.
//
// Thread-safety: RunCli keeps no global state; concurrent calls are fine if
// their CliEnv and factory are.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "protocol/base/clock.h"
#include "protocol/base/ids.h"
#include "protocol/base/status.h"

namespace gpool {

// Process exit codes; part of the CLI's contract with scripts.
enum ExitCode : int {
  kExitOk = 0,
  kExitJobUnsuccessful = 1,  // `wait`: the job ended Failed or Cancelled
  kExitUsage = 2,            // bad arguments or an invalid job spec
  kExitNotFound = 3,         // no such job, task or log
  kExitUnavailable = 4,      // coordinator unreachable, no leader, or a timeout
  kExitError = 5,            // anything else
};

// The exit code for a failed call (InvalidArgument -> 2, NotFound -> 3,
// Unavailable/NotLeader/DeadlineExceeded -> 4, others -> 5).
int ExitCodeFor(const Status& status);

using ClientFactory = std::function<Result<std::unique_ptr<Client>>(const ClientOptions&)>;

// What the CLI needs from its surroundings.
struct CliEnv {
  // An environment variable, nullopt when unset (GPOOL_COORDINATOR, GPOOL_TOKEN).
  std::function<std::optional<std::string>(const std::string&)> getenv;
  // Pauses between polls (`wait`).
  std::function<void(int64_t ms)> sleep_ms;
  // Wall time for ages in tables, monotonic time for `wait --timeout`.
  const Clock* clock = nullptr;
  // Read by `submit -`.
  std::istream* in = nullptr;
  // `exec`: starts catching SIGINT, SIGTERM and SIGHUP (to forward them to
  // the remote command), and takes the one caught since the last call (0:
  // none). nullptr: nothing is caught.
  std::function<void()> watch_signals;
  std::function<int()> take_signal;
  // Runs a program (argv[0]: a path, or a name looked up on PATH) with this
  // process's stdin, stdout and stderr, and returns its exit status
  // (`admin snapshot restore` runs gpool-coordinator). nullptr: Unavailable.
  std::function<Result<int>(const std::vector<std::string>& argv)> run_program;

  // The real process environment, SystemClock, std::cin and a real sleep.
  static CliEnv System();
};

// `args` are the arguments after the program name. Output goes to `out`,
// errors to `err` as "gpool: <Code>: <message>".
int RunCli(std::vector<std::string> args, std::ostream& out, std::ostream& err, const ClientFactory& factory,
           const CliEnv& env = CliEnv::System());

// The top-level help text (`gpool --help`).
std::string UsageText();

// "17" -> job 17. Job ids are positive integers.
Result<JobId> ParseJobId(std::string_view text);

// A task on the command line: "17.2" (job 17, index 2) or "17" (index 0).
struct TaskRef {
  JobId job;
  uint32_t index = 0;
};
Result<TaskRef> ParseTaskRef(std::string_view text);

// `wait --timeout`: "90" or "90s", "5m", "2h" -> milliseconds; "0" means no limit.
Result<int64_t> ParseWaitTimeout(std::string_view text);

// A queue quota flag (`queue create --capability ...`), "RESOURCE=AMOUNT,...":
//   gpu=16, gpu/A100=8   whole GPUs (of one model)
//   cpu=64, cpu=0.5      cores, to 1/1000 (or "500m"); stored as milli-CPU
//   memory=256Gi         Mi, Gi, Ti (or the other units of topology/quantity.h); a bare number is MiB
// "none" is the empty quota (no limits). Errors are InvalidArgument and
// start with `flag`: "--capability: gpu: expected a whole number of GPUs, got '1.5'".
Result<Quota> ParseQuota(std::string_view flag, std::string_view text);

}  // namespace gpool
