// gpool-rgpu-server: one remote-GPU session's data plane (README.md here).
//
//   gpool-rgpu-server --endpoint tcp://127.0.0.1:* --secret-key-file PATH --owner-key Z85PUBLIC
//                     --idle-timeout-ms N [--endpoint-file PATH] [--driver PATH]
//
// Exit codes: 0 after SIGTERM/SIGINT, 3 after the idle timeout (both after
// releasing everything the session created), 2 when it cannot start (bad
// flags, key file, endpoint, driver, or an endpoint file it cannot write:
// the reason on stderr).
// Once it accepts connections it writes the bound endpoint (the port
// filled in) to --endpoint-file (endpoint_file.h: how the worker learns
// the port) and prints "gpool-rgpu-server ready endpoint=<bound endpoint>"
// on stdout.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "protocol/security/keys.h"
#include "worker/rgpu/server/driver.h"
#include "worker/rgpu/server/endpoint_file.h"
#include "worker/rgpu/server/server.h"

namespace {

constexpr int kExitSignalled = 0;
constexpr int kExitCannotStart = 2;
constexpr int kExitIdle = 3;

int Fail(const std::string& why) {
  std::fprintf(stderr, "gpool-rgpu-server: %s\n", why.c_str());
  return kExitCannotStart;
}

const char kUsage[] =
    "usage: gpool-rgpu-server --endpoint tcp://HOST:PORT|tcp://HOST:* --secret-key-file PATH --owner-key Z85 "
    "--idle-timeout-ms N [--endpoint-file PATH] [--driver PATH]";

}  // namespace

int main(int argc, char** argv) {
  std::string endpoint, key_file, owner_key, driver_path = "libcuda.so.1", idle_text, endpoint_file;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Fail("flag " + flag + " needs a value; " + kUsage);
    const std::string value = argv[++i];
    const std::pair<const char*, std::string*> flags[] = {{"--endpoint", &endpoint},
                                                          {"--secret-key-file", &key_file},
                                                          {"--owner-key", &owner_key},
                                                          {"--idle-timeout-ms", &idle_text},
                                                          {"--endpoint-file", &endpoint_file},
                                                          {"--driver", &driver_path}};
    std::string* into = nullptr;
    for (const auto& [name, target] : flags) into = flag == name ? target : into;
    if (into == nullptr) return Fail("unknown flag " + flag + "; " + kUsage);
    *into = value;
  }
  if (endpoint.empty() || key_file.empty() || owner_key.empty() || idle_text.empty()) return Fail(kUsage);
  char* end = nullptr;
  const long long idle_ms = std::strtoll(idle_text.c_str(), &end, 10);
  if (*end != '\0' || idle_ms <= 0) return Fail("--idle-timeout-ms must be a positive number of milliseconds");

  // Logs go to stderr: stdout carries the ready line.
  spdlog::set_default_logger(spdlog::stderr_color_mt("gpool-rgpu-server"));
  // The server is the local side: a remote-mode interposer underneath it
  // would send the calls on instead of executing them.
  unsetenv("GPOOL_RGPU_ENDPOINT");
  // Blocked before any thread starts, so only the loop's signalfd sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto pair = gpool::security::ReadSecretKeyFile(key_file);
  if (!pair.ok()) return Fail(pair.status().message());
  auto driver = gpool::rgpu::OpenDriver(driver_path);
  if (!driver.ok()) return Fail(driver.status().message());
  gpool::rgpu::ServerOptions options;
  options.endpoint = endpoint;
  options.own = pair.value();
  options.owner_key = owner_key;
  options.idle_timeout_ms = idle_ms;
  auto server = gpool::rgpu::Server::Open(options, std::move(driver).value());
  if (!server.ok()) return Fail(server.status().message());
  if (!endpoint_file.empty()) {
    // A server the worker cannot find serves nobody: better not to start.
    const gpool::Status reported = gpool::rgpu::WriteEndpointFile(endpoint_file, server.value()->endpoint());
    if (!reported.ok()) return Fail("cannot report the bound endpoint: " + reported.message());
  }
  std::printf("gpool-rgpu-server ready endpoint=%s\n", server.value()->endpoint().c_str());
  std::fflush(stdout);
  spdlog::info("rgpu session serving endpoint={} driver={} idle_timeout_ms={} endpoint_file={}",
               server.value()->endpoint(), driver_path, idle_ms, endpoint_file.empty() ? "none" : endpoint_file);
  const gpool::rgpu::ServerEnd how = server.value()->Run();
  return how == gpool::rgpu::ServerEnd::kIdle ? kExitIdle : kExitSignalled;
}
