#include "worker/runner/run_dir.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace gpool::worker {
namespace {

// FNV-1a: the same id for the same path in every build (std::hash makes no
// such promise across library versions, and an upgraded worker must find
// the records the previous one left).
std::string StableId(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

bool MakeReachable(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return false;
  struct stat st {};
  // A directory of ours, not a link someone put there.
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) return false;
  return chmod(dir.c_str(), 0711) == 0;
}

}  // namespace

bool IsTmpfs(const std::string& path) {
  struct statfs fs {};
  return statfs(path.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

RunDirChoice ChooseRunDir(const std::string& flag, const std::string& data_dir, const std::string& run_root,
                          const std::function<bool(const std::string&)>& is_tmpfs) {
  if (!flag.empty()) return {flag, "--run-dir"};
  const std::string fallback = data_dir + "/tasks";
  const bool tmpfs = is_tmpfs ? is_tmpfs(run_root) : IsTmpfs(run_root);
  if (!tmpfs) return {fallback, run_root + " is not a tmpfs"};
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(data_dir, ec).lexically_normal();
  if (!absolute.has_filename() && absolute.has_parent_path()) absolute = absolute.parent_path();  // "dir/"
  const std::string parent = run_root + "/gpool-worker";
  const std::string dir = parent + "/" + StableId(ec ? data_dir : absolute.string());
  if (!MakeReachable(parent) || !MakeReachable(dir)) return {fallback, "cannot make " + dir};
  return {dir, run_root + " is a tmpfs"};
}

}  // namespace gpool::worker
