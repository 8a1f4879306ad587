// The task's log: where its output goes (<log_dir>/<job>.<index>.<attempt>.log)
// and its cap (log_cap.h). First in the chain, so every later step's failure
// can be written there. The log outlives the task (FetchLog finds it by
// name), so nothing is undone; at the reap it is capped a last time for what
// the task wrote since the loop's last turn. The TaskManager caps running
// tasks' logs on its turns through Cap.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

class LogCapStep final : public TaskSetupStep {
 public:
  LogCapStep(std::string log_dir, uint64_t max_bytes, std::shared_ptr<spdlog::logger> logger);

  std::string_view Name() const override { return "log"; }
  // Sets request.log_path; never fails.
  Status Prepare(TaskSetupContext& ctx) override;
  // The last cap (finished: nothing appends any more).
  void Release(TaskSetupContext& ctx) override { Cap(ctx.id, /*finished=*/true); }

  // Holds the task's log to max_bytes; failures (but a log not yet there)
  // are logged.
  void Cap(const TaskId& id, bool finished = false) const;

 private:
  std::string log_dir_;
  uint64_t max_bytes_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace gpool::worker
