#include "worker/runner/rgpu_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "protocol/security/keys.h"
#include "worker/runner/share_enforcement.h"

namespace gpool::worker {

std::string ChooseRgpuServer(const std::string& flag, const std::string& exe) {
  if (flag == "none") return "";
  const std::filesystem::path dir = std::filesystem::path(exe).parent_path();
  const std::vector<std::string> candidates =
      flag.empty() ? std::vector<std::string>{(dir / "gpool-rgpu-server").string(),
                                              (dir / "rgpu" / "gpool-rgpu-server").string()}
                   : std::vector<std::string>{flag};
  const std::string found = FirstExisting(candidates);
  if (found.empty()) return "";
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(found, ec);
  return ec ? found : absolute.lexically_normal().string();
}

std::string TaskRgpuKeyPath(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".rgpu.key";
}

Result<int> PickFreePort(const std::string& address) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("rGPU address '" + address + "' is not an IPv4 address");
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable("no socket for an rGPU port");
  socklen_t len = sizeof(addr);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!bound) return Status::Unavailable("no free port on " + address + " for an rGPU session server");
  return static_cast<int>(ntohs(addr.sin_port));
}

Result<std::vector<std::string>> PrepareRgpuServer(const RgpuOptions& options, const std::string& key_file,
                                                   const std::string& driver, BindTask& bind) {
  if (options.server.empty()) {
    return Status::FailedPrecondition("this node runs no rGPU session server (gpool-rgpu-server was not found "
                                      "next to gpool-worker; give --rgpu-server PATH)");
  }
  GPOOL_ASSIGN_OR_RETURN(const int port, PickFreePort(options.address));
  GPOOL_ASSIGN_OR_RETURN(const security::KeyPair keys, security::GenerateKeyPair());
  std::error_code ec;
  std::filesystem::remove(key_file, ec);  // a previous start of this attempt's
  GPOOL_RETURN_IF_ERROR(security::WriteSecretKeyFile(key_file, keys, security::Durability::kEphemeral));
  bind.rgpu.endpoint = "tcp://" + options.address + ":" + std::to_string(port);
  bind.rgpu.server_key = keys.public_key;
  std::vector<std::string> argv{options.server,           "--endpoint",    bind.rgpu.endpoint,
                                "--secret-key-file",      key_file,        "--owner-key",
                                bind.rgpu.owner_key,      "--idle-timeout-ms",
                                std::to_string(bind.rgpu.idle_timeout_ms)};
  if (!driver.empty()) argv.insert(argv.end(), {"--driver", driver});
  return argv;
}

}  // namespace gpool::worker
