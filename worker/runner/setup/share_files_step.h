// A GPU share's files (share_enforcement.h, device_env.h): HAMi-core's
// per-attempt accounting file, and for a share gpool's interposer holds, the
// attempt's private driver directory and ledger. A share that starts without
// its limits would take memory its neighbours were promised, so a failure
// here fails the start rather than starting it unenforced. The files never
// outlive the attempt: removed when the start fails and when it is reaped,
// whatever the flags are then (a restarted worker may have others).
#pragma once

#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "worker/runner/setup/task_setup_step.h"
#include "worker/runner/share_enforcement.h"

namespace gpool::worker {

class ShareFilesStep final : public TaskSetupStep {
 public:
  ShareFilesStep(std::string log_dir, std::string cuda_intercept_lib, ShareEnforcementOptions share,
                 std::shared_ptr<spdlog::logger> logger);

  std::string_view Name() const override { return "share"; }
  // Fills ctx.env's intercept library, share cache and interposer fields;
  // IoError when the interposer's directory or ledger cannot be made;
  // FailedPrecondition, before anything is made, for a share nothing here
  // can hold (UnenforceableShare).
  Status Prepare(TaskSetupContext& ctx) override;
  // Removes a share's cache file, directory and ledger (absent ones are no
  // error); nothing for a task that is not a share.
  void Undo(TaskSetupContext& ctx) override;

 private:
  std::string log_dir_;
  std::string cuda_intercept_lib_;
  ShareEnforcementOptions share_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace gpool::worker
