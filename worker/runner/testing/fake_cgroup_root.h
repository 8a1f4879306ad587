// FakeCgroupRoot: a gtest fixture whose root_ is an empty directory that
// stands in for /sys/fs/cgroup, for the layout rules of task_cgroup.h
// without root. A test writes what the kernel would show (Write) and reads
// back what the code wrote (ReadCgroupFile). Plain files, not cgroupfs: a
// mkdir makes no control files, so creating a task's cgroup needs the real
// hierarchy (the tests' RealCgroups fixtures). Removed after each test.
//
// Shared by task_cgroup_test.cc, task_cpuset_test.cc and
// shared_cpu_pool_test.cc, which each derive a fixture of their own name.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace gpool::worker {

// A cgroup file's value without the kernel's trailing newline.
inline std::string ReadCgroupFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class FakeCgroupRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("gpool-cgroup-fake-" + std::to_string(getpid()));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  // Writes `text` to `path`, making its directories.
  static void Write(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::filesystem::path root_;
};

}  // namespace gpool::worker
