#include "worker/runner/share_enforcement.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/runner/device_env.h"

namespace gpool::worker {
namespace {

std::string AttemptName(const TaskId& task, char sep) {
  return std::to_string(task.job.value()) + sep + std::to_string(task.index) + sep + std::to_string(task.attempt);
}

}  // namespace

const std::vector<std::string>& DefaultRealDriverPaths() {
  // The interposer looks in the same places when the variable is unset
  // (worker/cuda/README.md); naming the one found keeps both in step.
  static const std::vector<std::string> kPaths = {
      "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1",
      "/usr/lib/aarch64-linux-gnu/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1"};
  return kPaths;
}

std::string FirstExisting(const std::vector<std::string>& candidates) {
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return path;
  }
  return {};
}

std::vector<std::string> InterposerPathsNextTo(const std::string& exe) {
  const std::filesystem::path dir = std::filesystem::path(exe).parent_path();
  return {(dir / ".." / "lib" / "gpool" / "libgpool-cuda.so.1").lexically_normal().string(),
          (dir / "cuda" / "libgpool-cuda.so.1").lexically_normal().string()};
}

InterposerChoice ChooseInterposer(const std::string& flag, const std::string& intercept_lib, const std::string& exe) {
  InterposerChoice choice;
  if (!intercept_lib.empty()) {
    choice.message = "gpu shares are held by the CUDA intercept library (LD_PRELOAD), not gpool's interposer";
    return choice;
  }
  if (flag == "none") {
    choice.message = "gpu shares are not interposed (--cuda-interposer none): their limits are variables only, "
                     "and only the NVML memory check stops a task over its share";
    return choice;
  }
  const std::vector<std::string> candidates = flag.empty() ? InterposerPathsNextTo(exe) : std::vector{flag};
  const std::string found = FirstExisting(candidates);
  if (found.empty()) {
    std::string looked;
    for (const std::string& c : candidates) looked += (looked.empty() ? "" : ", ") + c;
    choice.warn = true;
    choice.missing = looked;
    choice.message = "gpu share limits cannot be enforced on this node: the CUDA interposer libgpool-cuda.so.1 is "
                     "missing (looked at " + looked + "); share tasks are refused unless --allow-unenforced-shares; "
                     "give --cuda-interposer PATH, or none to run them unenforced";
    return choice;
  }
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(found, ec);
  choice.path = ec ? found : absolute.lexically_normal().string();
  choice.message = "gpu shares are held by gpool's CUDA interposer";
  return choice;
}

bool InterposedShare(const BindTask& bind, const ShareEnforcementOptions& share, const std::string& intercept_lib) {
  const bool mig = std::any_of(bind.mig_profiles.begin(), bind.mig_profiles.end(),
                               [](const std::string& p) { return !p.empty(); });
  return IsGpuShare(bind) && !mig && !share.interposer.empty() && intercept_lib.empty();
}

std::string UnenforceableShare(const BindTask& bind, const ShareEnforcementOptions& share,
                               const std::string& intercept_lib) {
  const bool mig = std::any_of(bind.mig_profiles.begin(), bind.mig_profiles.end(),
                               [](const std::string& p) { return !p.empty(); });
  if (!IsGpuShare(bind) || mig || share.allow_unenforced) return {};
  std::string missing;
  if (!intercept_lib.empty()) {
    // A bare name is the dynamic loader's to find: not checked here.
    std::error_code ec;
    if (intercept_lib.find('/') != std::string::npos && !std::filesystem::exists(intercept_lib, ec)) {
      missing = "the CUDA intercept library " + intercept_lib + " is missing";
    }
  } else if (!share.interposer_missing.empty()) {
    missing = "the CUDA interposer libgpool-cuda.so.1 is missing (looked at " + share.interposer_missing + ")";
  }
  if (missing.empty()) return {};
  return std::string(kUnenforceableShareReason) + ": " + missing +
         "; the node's operator may allow unenforced shares with --allow-unenforced-shares";
}

std::string TaskCudaDir(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + AttemptName(task, '.') + ".cuda";
}

std::string TaskCudaLedgerPath(const std::string& ledger_dir, const TaskId& task) {
  return ledger_dir + "/gpool-cuda-" + AttemptName(task, '-');
}

Status PrepareCudaDir(const std::string& dir, const std::string& interposer) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A previous worker process may have died between making it and starting
  // the task: start clean, so nothing a task could have put there remains.
  fs::remove_all(dir, ec);
  if (ec) return Status::IoError("cannot clear " + dir + ": " + ec.message());
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create " + dir + ": " + ec.message());
  // Readable and searchable by the task's user, writable only by the worker:
  // the task must not swap the link for a library of its own.
  if (chmod(dir.c_str(), 0755) != 0) return Status::IoError("cannot make " + dir + " 0755");
  fs::create_symlink(interposer, fs::path(dir) / "libcuda.so.1", ec);
  if (ec) return Status::IoError("cannot link " + dir + "/libcuda.so.1 to " + interposer + ": " + ec.message());
  return Status::Ok();
}

std::string RemoveShareFiles(const std::string& dir, const std::string& ledger) {
  std::string error;
  std::error_code ec;
  // remove_all unlinks the symlink, never what it points at.
  std::filesystem::remove_all(dir, ec);
  if (ec) error = "cannot remove " + dir + ": " + ec.message();
  std::filesystem::remove(ledger, ec);
  if (ec && error.empty()) error = "cannot remove " + ledger + ": " + ec.message();
  return error;
}

uint64_t ShareMemoryLimitMib(const BindTask& bind) {
  return static_cast<uint64_t>(bind.gpu_memory_mib) * bind.gpu_indices.size();
}

uint64_t ShareMemoryToleranceMib(uint64_t limit_mib, uint64_t tolerance_floor_mib) {
  return std::max(tolerance_floor_mib, limit_mib / 20);
}

std::string OverShareReason(uint64_t used_mib, uint64_t limit_mib, const std::string& why) {
  return "GPU memory " + std::to_string(used_mib) + " MiB over its share of " + std::to_string(limit_mib) +
         " MiB (" + why + ")";
}

std::vector<ShareMemoryGuard::Overrun> ShareMemoryGuard::Observe(const std::map<TaskId, const BindTask*>& shares,
                                                                 const std::vector<TaskUsage>& usage) {
  std::map<TaskId, uint64_t> used;
  for (const TaskUsage& u : usage) used[u.task] += u.gpu_memory_used_mib;
  std::erase_if(over_, [&](const auto& entry) { return !shares.count(entry.first); });
  std::vector<Overrun> out;
  for (const auto& [id, bind] : shares) {
    const uint64_t limit = ShareMemoryLimitMib(*bind);
    auto it = used.find(id);
    if (limit == 0 || it == used.end() || it->second <= limit + ShareMemoryToleranceMib(limit, tolerance_floor_mib_)) {
      over_.erase(id);
      continue;
    }
    if (++over_[id] < kSamplesToStop) continue;
    over_.erase(id);
    out.push_back({id, it->second, limit});
  }
  return out;
}

}  // namespace gpool::worker
