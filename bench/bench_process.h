// Helpers the process-starting benches share: loopback ports, child
// processes that die with the bench, timing and percentiles.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace gpool::bench {

using SteadyClock = std::chrono::steady_clock;

inline double Ms(SteadyClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

inline int ReservePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("reserving a port");
    std::exit(1);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

inline pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(log, 1);
    dup2(log, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// The client endpoint a coordinator started with port 0 wrote to its data
// dir's endpoints file; "" if none appeared within 20 s.
inline std::string ClientEndpointOf(const std::string& data_dir) {
  for (int i = 0; i < 1000; ++i) {
    if (FILE* file = std::fopen((data_dir + "/endpoints").c_str(), "r")) {
      char key[64], value[256];
      std::string found;
      while (std::fscanf(file, "%63s %255s", key, value) == 2) {
        if (std::string(key) == "client") found = value;
      }
      std::fclose(file);
      if (!found.empty()) return found;
    }
    usleep(20'000);
  }
  return "";
}

inline void Kill(pid_t pid, int signal) {
  if (pid <= 0) return;
  kill(pid, signal);
  waitpid(pid, nullptr, 0);
}

}  // namespace gpool::bench
