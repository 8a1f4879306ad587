#include "worker/discovery/vendor_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "worker/discovery/vendor_smi.h"

extern char** environ;

namespace gpool::worker {
namespace {

int64_t VendorProbeNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string JoinArgv(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace

Result<std::string> RunVendorTool(const std::vector<std::string>& argv, int64_t timeout_ms) {
  if (argv.empty()) return Status::InvalidArgument("no tool to run");
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    if (spawned == ENOENT) return Status::NotFound(argv[0] + " is not installed");
    return Status::Unavailable("cannot run " + argv[0] + ": " + std::strerror(spawned));
  }
  std::string out;
  const int64_t deadline = VendorProbeNowMs() + timeout_ms;
  bool timed_out = false;
  while (true) {
    const int64_t left = deadline - VendorProbeNowMs();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{.fd = pipe_fds[0], .events = POLLIN, .revents = 0};
    const int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends the wait
    char buf[4096];
    const ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the tool closed its stdout
    out.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::DeadlineExceeded(JoinArgv(argv) + " did not finish within " + std::to_string(timeout_ms) + " ms");
  }
  // posix_spawnp reports a missing program as exit 127 on some libcs.
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && out.empty()) {
    return Status::NotFound(argv[0] + " is not installed");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Unavailable(JoinArgv(argv) + " failed (status " + std::to_string(status) + ")");
  }
  return out;
}

VendorToolRunner VendorRunnerOf(const VendorProbeOptions& options) {
  if (options.runner) return options.runner;
  const int64_t timeout_ms = options.timeout_ms;
  return [timeout_ms](const std::vector<std::string>& argv) { return RunVendorTool(argv, timeout_ms); };
}

Result<VendorProbeResult> ProbeVendorGpus(const VendorProbeOptions& options) {
  const VendorToolRunner run = VendorRunnerOf(options);
  std::string tried;
  for (const VendorProfile& profile : AcceleratorProfiles()) {
    if (profile.tool.empty()) continue;
    const std::vector<std::string> argv(profile.tool.begin(), profile.tool.end());
    auto output = run(argv);
    if (!output.ok()) {
      // Not installed, or installed on a node without the devices (the
      // tools exit non-zero then): not this family's node.
      tried += (tried.empty() ? "" : "; ") + output.status().message();
      continue;
    }
    auto gpus = ParseVendorTool(profile.vendor, *output);
    if (!gpus.ok() && gpus.status().code() == StatusCode::kNotFound) {  // installed, no devices
      tried += (tried.empty() ? "" : "; ") + gpus.status().message();
      continue;
    }
    if (!gpus.ok()) return gpus.status().WithContext(std::string(profile.display) + " discovery");
    return VendorProbeResult{.vendor = profile.vendor, .gpus = std::move(*gpus)};
  }
  return Status::NotFound("no accelerator vendor tool lists a device (" + tried + ")");
}

}  // namespace gpool::worker
