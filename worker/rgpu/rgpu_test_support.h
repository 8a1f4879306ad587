// For the rGPU tests: key files in a temporary folder, and a
// gpool-rgpu-server child process (started on an ephemeral 127.0.0.1 port,
// read until its ready line, ended by its PID). Clients are
// gpool-rgpu-check runs through cuda_test_support.h's CudaTask (the
// interposer as libcuda.so.1), in remote mode by RemoteEnv().
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "protocol/security/keys.h"

extern char** environ;

namespace gpool::rgpu::testing {

// Three key pairs: the server's, the session owner's and a stranger's.
class SessionKeys {
 public:
  SessionKeys() {
    char dir_template[] = "/tmp/gpool-rgpu-test-XXXXXX";
    dir_ = mkdtemp(dir_template);
    for (const char* who : {"server", "owner", "stranger"}) {
      auto pair = security::GenerateKeyPair();
      pairs_.push_back(pair.value());
      (void)security::WriteSecretKeyFile(File(who), pair.value());
    }
  }
  ~SessionKeys() { std::filesystem::remove_all(dir_); }
  SessionKeys(const SessionKeys&) = delete;
  SessionKeys& operator=(const SessionKeys&) = delete;

  std::string File(const std::string& who) const { return dir_ + "/" + who + ".key"; }
  const security::KeyPair& server() const { return pairs_[0]; }
  const security::KeyPair& owner() const { return pairs_[1]; }
  const security::KeyPair& stranger() const { return pairs_[2]; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<security::KeyPair> pairs_;
};

struct ServerExit {
  bool exited = false;  // false: still running when the wait ended (then killed)
  int code = -1;
};

class ServerProcess {
 public:
  // Starts gpool-rgpu-server with `args` (after the binary) and the test's
  // environment plus `extra_env` ("NAME=value", replacing same-named ones).
  bool Start(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<std::string> argv_s{GPOOL_RGPU_SERVER_BIN};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    const auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=') + 1); };
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv(*e);
      bool replaced = kv.rfind("GPOOL_", 0) == 0 || kv.rfind("FAKE_CUDA_", 0) == 0;
      for (const std::string& x : extra_env) replaced = replaced || name_of(x) == name_of(kv);
      if (!replaced) env_s.push_back(kv);
    }
    env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int rc = posix_spawn(&pid_, GPOOL_RGPU_SERVER_BIN, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    stdout_fd_ = out[0];
    if (rc != 0) return false;
    // The ready line, within 30 s.
    std::string text;
    char buf[256];
    while (text.find('\n') == std::string::npos) {
      pollfd p{stdout_fd_, POLLIN, 0};
      if (poll(&p, 1, 30000) <= 0) return false;
      const ssize_t n = read(stdout_fd_, buf, sizeof(buf));
      if (n <= 0) return false;
      text.append(buf, static_cast<std::size_t>(n));
    }
    const std::size_t at = text.find("endpoint=");
    if (at == std::string::npos) return false;
    endpoint_ = text.substr(at + 9, text.find('\n', at) - at - 9);
    return true;
  }

  // Waits up to `seconds` for the exit; a server still running then is
  // killed and reported as not exited.
  ServerExit WaitExit(double seconds) {
    ServerExit result;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      int status = 0;
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        result.exited = WIFEXITED(status);
        result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pid_ = -1;
        return result;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        Kill();
        return result;
      }
      // Nothing to block on for a child's exit but its stdout closing.
      pollfd p{stdout_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[256];
        if (read(stdout_fd_, buf, sizeof(buf)) <= 0) {
          close(stdout_fd_);
          stdout_fd_ = -1;
          waitpid(pid_, &status, 0);
          result.exited = WIFEXITED(status);
          result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
          pid_ = -1;
          return result;
        }
      }
    }
  }

  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  ~ServerProcess() {
    Kill();
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string endpoint_;
};

// The arguments the worker passes, with an ephemeral port.
inline std::vector<std::string> ServerArgs(const SessionKeys& keys, const std::string& owner_public,
                                           int idle_timeout_ms, bool fake_driver = true) {
  std::vector<std::string> args{
      "--endpoint",  "tcp://127.0.0.1:*", "--secret-key-file", keys.File("server"),
      "--owner-key", owner_public,        "--idle-timeout-ms", std::to_string(idle_timeout_ms)};
  if (fake_driver) {
    args.push_back("--driver");
    args.push_back(GPOOL_FAKE_CUDA_PATH);
  }
  return args;
}

// A client process's remote-mode environment.
inline std::vector<std::string> RemoteEnv(const SessionKeys& keys, const std::string& endpoint,
                                          const std::string& who = "owner", int timeout_ms = 10000) {
  return {"GPOOL_RGPU_ENDPOINT=" + endpoint, "GPOOL_RGPU_SERVER_KEY=" + keys.server().public_key,
          "GPOOL_RGPU_KEY_FILE=" + keys.File(who), "GPOOL_RGPU_CALL_TIMEOUT_MS=" + std::to_string(timeout_ms)};
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace gpool::rgpu::testing
