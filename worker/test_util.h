// Helpers shared by the worker's tests (not part of the library): a
// self-deleting temporary directory, a scoped environment variable and a
// logger that captures its lines.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <spdlog/logger.h>

#include "protocol/types.h"
#include "topology/test_nodes.h"
#include <spdlog/sinks/ostream_sink.h>

namespace gpool::worker::testing {

using topology::testing::MakeGpuNode;

// Sets an environment variable (the fake NVML's controls) for one scope.
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name, const std::string& value = "1") : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpool-worker-test-XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    path_ = made != nullptr ? made : pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Write(const std::string& relative, const std::string& content) const {
    const std::filesystem::path full = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full, std::ios::binary) << content;
    return full.string();
  }

 private:
  std::string path_;
};

// A logger whose output a test can read back.
class CapturedLog {
 public:
  CapturedLog() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("%l %v");
    logger_ = std::make_shared<spdlog::logger>("test", sink);
    logger_->set_level(spdlog::level::trace);
  }
  std::shared_ptr<spdlog::logger> logger() const { return logger_; }
  std::string text() const { return stream_.str(); }
  bool Contains(const std::string& needle) const { return text().find(needle) != std::string::npos; }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> logger_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace gpool::worker::testing
