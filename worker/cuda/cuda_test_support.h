// For the interposer's tests: a task's private library directory (a
// libcuda.so.1 symlink to the interposer, as the worker makes one) and a
// ledger path in a temporary folder, and runs of gpool-cuda-check in child
// processes with the task's environment, against the fake driver.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace gpool::cuda::testing {

struct CheckResult {
  int exit_code = -1;  // -1: did not exit normally
  std::string output;
};

// A running gpool-cuda-check whose stdin the test holds (for "hold").
struct RunningCheck {
  pid_t pid = -1;
  int stdin_fd = -1;
  int stdout_fd = -1;

  // Reads stdout until `marker` appears (or EOF); returns what was read.
  std::string ReadUntil(const std::string& marker) {
    std::string out;
    char buf[256];
    while (out.find(marker) == std::string::npos) {
      const ssize_t n = read(stdout_fd, buf, sizeof(buf));
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  // Ends one "hold" (a line on stdin); the program goes on.
  void Continue() { (void)!write(stdin_fd, "\n", 1); }
  // Closes stdin (ending "hold") and waits; returns the exit code.
  CheckResult Finish() {
    if (stdin_fd >= 0) close(stdin_fd);
    stdin_fd = -1;
    CheckResult r;
    r.output = ReadUntil("\x01never");
    close(stdout_fd);
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }
  // Finish, but within `seconds`: a child still running then is killed
  // and the result says so (exit_code -1, "timed out" in the output).
  CheckResult FinishWithin(double seconds) {
    if (stdin_fd >= 0) close(stdin_fd);
    stdin_fd = -1;
    CheckResult r;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    char buf[256];
    for (;;) {
      using std::chrono::milliseconds;
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{stdout_fd, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        Kill();
        r.output += "\ntimed out";
        return r;
      }
      const ssize_t n = read(stdout_fd, buf, sizeof(buf));
      if (n <= 0) break;
      r.output.append(buf, static_cast<std::size_t>(n));
    }
    close(stdout_fd);
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }
  void Kill() {
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (stdin_fd >= 0) close(stdin_fd);
    close(stdout_fd);
  }
};

class CudaTask {
 public:
  CudaTask() {
    char dir_template[] = "/tmp/gpool-cuda-test-XXXXXX";
    dir_ = mkdtemp(dir_template);
    std::filesystem::create_directory(dir_ + "/lib");
    std::filesystem::create_symlink(GPOOL_CUDA_INTERPOSER_PATH, dir_ + "/lib/libcuda.so.1");
  }
  ~CudaTask() { std::filesystem::remove_all(dir_); }
  CudaTask(const CudaTask&) = delete;
  CudaTask& operator=(const CudaTask&) = delete;

  const std::string& dir() const { return dir_; }
  std::string ledger() const { return dir_ + "/ledger"; }
  // The task's own activity directory unless a test names another.
  std::string activity() const { return dir_ + "/activity.d"; }

  // The environment of one of the task's processes: the library directory
  // first on LD_LIBRARY_PATH, the fake as the real driver, and `extra`
  // ("NAME=value", which may name another real driver or library path;
  // "ledger" stands for GPOOL_CUDA_LEDGER=<ledger()>).
  std::vector<std::string> Env(const std::vector<std::string>& extra) const {
    std::vector<std::string> env;
    // getenv answers the first of two same-named entries, so a name in
    // `extra` replaces the inherited one; ASAN_OPTIONS (set by test.sh)
    // is merged instead, the test's options last so that they win.
    const auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=') + 1); };
    std::string inherited_asan;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv(*e);
      if (kv.rfind("GPOOL_", 0) == 0 || kv.rfind("LD_LIBRARY_PATH=", 0) == 0 || kv.rfind("FAKE_CUDA_", 0) == 0) {
        continue;
      }
      if (kv.rfind("ASAN_OPTIONS=", 0) == 0) {
        inherited_asan = kv.substr(13);
        continue;
      }
      bool replaced = false;
      for (const std::string& x : extra) replaced = replaced || name_of(x) == name_of(kv);
      if (!replaced) env.push_back(kv);
    }
    bool real_named = false, path_named = false, activity_named = false, asan_named = false;
    for (const std::string& kv : extra) {
      if (kv.rfind("ASAN_OPTIONS=", 0) == 0) {
        asan_named = true;
        env.push_back(inherited_asan.empty() ? kv : "ASAN_OPTIONS=" + inherited_asan + ":" + kv.substr(13));
        continue;
      }
      env.push_back(kv == "ledger" ? "GPOOL_CUDA_LEDGER=" + ledger() : kv);
      real_named = real_named || kv.rfind("GPOOL_CUDA_REAL_DRIVER=", 0) == 0;
      path_named = path_named || kv.rfind("LD_LIBRARY_PATH=", 0) == 0;
      activity_named = activity_named || kv.rfind("GPOOL_CUDA_ACTIVITY=", 0) == 0;
    }
    if (!asan_named && !inherited_asan.empty()) env.push_back("ASAN_OPTIONS=" + inherited_asan);
    // Tests running side by side must not see each other's launches.
    if (!activity_named) env.push_back("GPOOL_CUDA_ACTIVITY=" + activity());
    if (!real_named) env.push_back(std::string("GPOOL_CUDA_REAL_DRIVER=") + GPOOL_FAKE_CUDA_PATH);
    if (!path_named) env.push_back("LD_LIBRARY_PATH=" + dir_ + "/lib");
    return env;
  }

  RunningCheck Start(const std::vector<std::string>& extra_env, const std::vector<std::string>& steps) const {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return {};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<std::string> args{GPOOL_CUDA_CHECK_BIN};
    args.insert(args.end(), steps.begin(), steps.end());
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env = Env(extra_env);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    RunningCheck check;
    posix_spawn(&check.pid, GPOOL_CUDA_CHECK_BIN, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    check.stdin_fd = in[1];
    check.stdout_fd = out[0];
    return check;
  }

  CheckResult Run(const std::vector<std::string>& extra_env, const std::vector<std::string>& steps) const {
    return Start(extra_env, steps).Finish();
  }

 private:
  std::string dir_;
};

// Preloading the interposer puts it in the global scope from the start, as
// linking a program with -lcuda does: the real driver, loaded later, then
// binds its own calls of exported names to the interposer's. (ASan wants
// its runtime first among preloads: told not to mind.)
inline const std::string kAsIfLinked = std::string("LD_PRELOAD=") + GPOOL_CUDA_INTERPOSER_PATH;
inline const std::string kAsanAnyOrder = "ASAN_OPTIONS=verify_asan_link_order=0";

// The number after "key=" in `text`, or -1.
inline double ValueOf(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(key + "=");
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + key.size() + 1);
}

}  // namespace gpool::cuda::testing
