// Test helpers that start real gpool processes on loopback.
//
// Each Process is started with fork/exec, its output goes to a file, and the
// destructor kills it (SIGKILL) and reaps it, so a failing test never leaves
// processes behind. WaitFor polls a condition with a deadline: tests wait for
// an observable state, never for a fixed time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpool::testing {

class Process {
 public:
  Process(std::string name, std::vector<std::string> argv, std::string log_path);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  // The wait status once Running() has returned false.
  int wait_status() const { return wait_status_; }
  // Sends `signal` and waits up to `timeout` for the exit; returns the wait status or -1.
  int Stop(int signal, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void Kill() { Stop(9); }
  // Sends `signal` and returns at once (SIGSTOP, SIGCONT).
  void Signal(int signal);
  std::string Log() const;

 private:
  std::string name_;
  std::string log_path_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a command to completion (bounded by `timeout`), capturing its output.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Polls `condition` every 20 ms until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);
// Reads "client tcp://..." / "worker tcp://..." from a coordinator's endpoints file.
std::map<std::string, std::string> ReadEndpoints(const std::string& data_dir);
bool PidAlive(pid_t pid);
// Running, not a zombie waiting for its new parent to reap it (a task's
// process whose supervisor died is reparented to init and may linger so).
bool StillRunning(int64_t pid);
// Task cgroups need root and a cgroup hierarchy; tests that rely on them skip otherwise.
bool TaskCgroupsAvailable();

}  // namespace gpool::testing
