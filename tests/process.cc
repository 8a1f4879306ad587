#include "tests/process.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace gpool::testing {
namespace {

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  int err = err_path == out_path ? out : open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  int null_in = open("/dev/null", O_RDONLY);
  dup2(null_in, 0);
  dup2(out, 1);
  dup2(err, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

}  // namespace

Process::Process(std::string name, std::vector<std::string> argv, std::string log_path)
    : name_(std::move(name)), log_path_(std::move(log_path)) {
  pid_ = Spawn(argv, log_path_, log_path_);
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) Stop(SIGKILL, std::chrono::seconds(5));
}

bool Process::Running() {
  if (reaped_) return false;
  pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

void Process::Signal(int signal) {
  if (!reaped_) kill(pid_, signal);
}

int Process::Stop(int signal, std::chrono::milliseconds timeout) {
  if (reaped_) return wait_status_;
  kill(pid_, signal);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &wait_status_, WNOHANG) == pid_) {
      reaped_ = true;
      return wait_status_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &wait_status_, 0);
  reaped_ = true;
  return -1;
}

std::string Process::Log() const { return ReadFile(log_path_); }

CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  TempDir dir;
  const std::string out_path = dir.Join("out");
  const std::string err_path = dir.Join("err");
  pid_t pid = Spawn(argv, out_path, err_path);
  CommandResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.err = "timed out";
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gpool-test-XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  path_ = made != nullptr ? made : pattern;
  // Tasks run as nobody (issue 31): they reach their own directory, their
  // job's hosts files and gpool-rsh by absolute path under a worker's data
  // dir here, and tests' task scripts leave marker and pid files here. A
  // test directory may be world-writable (sticky, like /tmp); the worker's
  // own data dir below it is still 0711 with 0700 task dirs.
  chmod(path_.c_str(), 01777);
}

TempDir::~TempDir() {
  // GPOOL_KEEP_TEST_DIRS keeps every process's log and data for a post-mortem.
  if (std::getenv("GPOOL_KEEP_TEST_DIRS") != nullptr) {
    std::fprintf(stderr, "kept %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
}

std::map<std::string, std::string> ReadEndpoints(const std::string& data_dir) {
  std::map<std::string, std::string> endpoints;
  std::istringstream in(ReadFile(data_dir + "/endpoints"));
  std::string key, value;
  while (in >> key >> value) endpoints[key] = value;
  return endpoints;
}

bool PidAlive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

bool StillRunning(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

bool TaskCgroupsAvailable() {
  return geteuid() == 0 && (std::filesystem::exists("/sys/fs/cgroup/freezer/cgroup.procs") ||
                            std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers"));
}

}  // namespace gpool::testing
