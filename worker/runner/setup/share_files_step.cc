#include "worker/runner/setup/share_files_step.h"

#include <unistd.h>

#include <filesystem>

#include "worker/log.h"
#include "worker/runner/cuda_shared_files.h"
#include "worker/runner/task_env.h"

namespace gpool::worker {

ShareFilesStep::ShareFilesStep(std::string log_dir, std::string cuda_intercept_lib, ShareEnforcementOptions share,
                               std::shared_ptr<spdlog::logger> logger)
    : log_dir_(std::move(log_dir)),
      cuda_intercept_lib_(std::move(cuda_intercept_lib)),
      share_(std::move(share)),
      log_(OrDefault(std::move(logger))) {}

Status ShareFilesStep::Prepare(TaskSetupContext& ctx) {
  TaskEnvOptions& env = ctx.env;
  env.cuda_intercept_lib = cuda_intercept_lib_;
  if (const std::string why = UnenforceableShare(ctx.bind, share_, cuda_intercept_lib_); !why.empty()) {
    // Nothing was made yet: a refusal leaves nothing behind.
    return Status::FailedPrecondition(why);
  }
  if (IsGpuShare(ctx.bind)) env.share_cache_path = TaskShareCachePath(log_dir_, ctx.id);
  if (!InterposedShare(ctx.bind, share_, cuda_intercept_lib_)) return Status::Ok();
  const std::string dir = TaskCudaDir(log_dir_, ctx.id);
  Status failed;
  if (Status made = PrepareCudaDir(dir, share_.interposer); !made.ok()) {
    failed = Status::IoError("cannot prepare the GPU share's CUDA interposer: " + made.message());
  } else {
    env.cuda_lib_dir = dir;
    env.cuda_real_driver = share_.real_driver;
    env.cuda_ledger = TaskCudaLedgerPath(share_.ledger_dir, ctx.id);
    env.cuda_activity_dir = share_.activity_dir;
    env.cuda_object_costs = share_.object_costs;
    // Made here, fresh, so no other task can have planted it; the isolation
    // step gives it to the task's uid with the task's other files.
    if (Status ledger = CreateTaskLedger(env.cuda_ledger, geteuid(), getegid()); !ledger.ok()) {
      failed = Status::IoError("cannot prepare the GPU share's ledger: " + ledger.message());
    }
  }
  if (!failed.ok()) {
    Undo(ctx);  // what was made of the directory or the ledger
    return failed;
  }
  log_->info("gpu share interposed task={} dir={} ledger={} real_driver={}", ctx.id.ToString(), Q(dir),
             Q(env.cuda_ledger), Q(share_.real_driver.empty() ? "unset" : share_.real_driver));
  return Status::Ok();
}

void ShareFilesStep::Undo(TaskSetupContext& ctx) {
  if (!IsGpuShare(ctx.bind)) return;
  std::error_code ec;
  // HAMi-core's accounting file is the task's own and dies with it.
  std::filesystem::remove(TaskShareCachePath(log_dir_, ctx.id), ec);
  // Whatever the flags now (a restarted worker may have others): an
  // attempt's directory and ledger never outlive it.
  const std::string error =
      RemoveShareFiles(TaskCudaDir(log_dir_, ctx.id), TaskCudaLedgerPath(share_.ledger_dir, ctx.id));
  if (!error.empty()) log_->warn("gpu share files not removed task={} error={}", ctx.id.ToString(), Q(error));
}

}  // namespace gpool::worker
