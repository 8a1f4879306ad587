#include "worker/runner/rgpu_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "protocol/messages_worker.h"
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

std::string TaskRgpuEndpointPath(const std::string& dir, const TaskId& task) {
  return dir + "/" + std::to_string(task.job.value()) + "." + std::to_string(task.index) + "." +
         std::to_string(task.attempt) + ".rgpu.endpoint";
}

Result<std::string> ReadRgpuEndpoint(const std::string& path, const std::string& address) {
  // O_NOFOLLOW and a regular file only: the directory may be the session
  // owner's, who must not make the worker read (and publish) another file;
  // O_NONBLOCK so a FIFO planted there cannot block the worker's loop.
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("no endpoint reported in " + path + " yet");
    return Status::Malformed("cannot read the reported endpoint " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  char buffer[128];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = read(fd, buffer, sizeof(buffer));
  close(fd);
  if (n < 0) return Status::Malformed("the reported endpoint " + path + " is not a readable regular file");
  std::string text(buffer, static_cast<size_t>(n));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string prefix = "tcp://" + address + ":";
  const std::string port = text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : "";
  int value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value <= 0 || value > 65535) {
    return Status::Malformed("the session server reported '" + text.substr(0, 64) + "' in " + path +
                             ", not an endpoint tcp://" + address + ":PORT");
  }
  return text;
}

Result<std::vector<std::string>> PrepareRgpuServer(const RgpuOptions& options, const std::string& key_file,
                                                   const std::string& endpoint_file, const std::string& driver,
                                                   BindTask& bind) {
  if (options.server.empty()) {
    return Status::FailedPrecondition("this node runs no rGPU session server (gpool-rgpu-server was not found "
                                      "next to gpool-worker; give --rgpu-server PATH)");
  }
  in_addr parsed{};
  if (inet_pton(AF_INET, options.address.c_str(), &parsed) != 1) {
    return Status::InvalidArgument("rGPU address '" + options.address + "' is not an IPv4 address");
  }
  GPOOL_ASSIGN_OR_RETURN(const security::KeyPair keys, security::GenerateKeyPair());
  std::error_code ec;
  std::filesystem::remove(key_file, ec);  // a previous start of this attempt's
  GPOOL_RETURN_IF_ERROR(security::WriteSecretKeyFile(key_file, keys, security::Durability::kEphemeral));
  std::filesystem::remove(endpoint_file, ec);  // what a previous start of this attempt reported
  std::filesystem::remove(endpoint_file + ".tmp", ec);
  bind.rgpu.endpoint.clear();  // known once the server reports it
  bind.rgpu.server_key = keys.public_key;
  // Port 0 ("*"): the server binds one of its own choice and reports it.
  std::vector<std::string> argv{options.server,
                                "--endpoint",
                                "tcp://" + options.address + ":*",
                                "--secret-key-file",
                                key_file,
                                "--owner-key",
                                bind.rgpu.owner_key,
                                "--idle-timeout-ms",
                                std::to_string(bind.rgpu.idle_timeout_ms),
                                "--endpoint-file",
                                endpoint_file};
  if (!driver.empty()) argv.insert(argv.end(), {"--driver", driver});
  return argv;
}

}  // namespace gpool::worker
