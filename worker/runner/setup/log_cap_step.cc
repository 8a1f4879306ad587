#include "worker/runner/setup/log_cap_step.h"

#include "worker/log.h"
#include "worker/runner/log_cap.h"
#include "worker/runner/task_env.h"

namespace gpool::worker {

LogCapStep::LogCapStep(std::string log_dir, uint64_t max_bytes, std::shared_ptr<spdlog::logger> logger)
    : log_dir_(std::move(log_dir)), max_bytes_(max_bytes), log_(OrDefault(std::move(logger))) {}

Status LogCapStep::Prepare(TaskSetupContext& ctx) {
  ctx.request.log_path = TaskLogPath(log_dir_, ctx.id);
  return Status::Ok();
}

void LogCapStep::Cap(const TaskId& id, bool finished) const {
  auto capped = CapTaskLog(TaskLogPath(log_dir_, id), max_bytes_, finished);
  if (!capped.ok() && capped.status().code() != StatusCode::kNotFound) {
    log_->warn("task log not capped task={} error={}", id.ToString(), Q(capped.status().ToString()));
  } else if (capped.ok() && *capped) {
    log_->info("task log capped task={} max_bytes={}", id.ToString(), max_bytes_);
  }
}

}  // namespace gpool::worker
