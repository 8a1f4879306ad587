#include "worker/runner/setup/task_setup_chain.h"

#include "worker/log.h"
#include "worker/runner/task_exec.h"

namespace gpool::worker {

TaskSetupChain::TaskSetupChain(std::shared_ptr<spdlog::logger> logger) : log_(OrDefault(std::move(logger))) {}

TaskSetupChain& TaskSetupChain::Add(std::unique_ptr<TaskSetupStep> step) {
  steps_.push_back(std::move(step));
  return *this;
}

Status TaskSetupChain::Prepare(TaskSetupContext& ctx) {
  for (size_t k = 0; k < steps_.size(); ++k) {
    Status prepared = steps_[k]->Prepare(ctx);
    if (prepared.ok()) continue;
    const std::string_view note = steps_[k]->LogNote();
    if (!note.empty() && !ctx.request.log_path.empty()) {
      // 0600: a log is its task's owner's, not every local user's.
      AppendLine(ctx.request.log_path, "gpool-worker: " + std::string(note) + ": " + prepared.message() + "\n");
    }
    log_->debug("task setup step failed task={} step={} undone={} error={}", ctx.id.ToString(), steps_[k]->Name(), k,
                Q(prepared.ToString()));
    for (size_t i = k; i-- > 0;) steps_[i]->Undo(ctx);
    return prepared;
  }
  return Status::Ok();
}

void TaskSetupChain::Undo(TaskSetupContext& ctx) {
  for (size_t i = steps_.size(); i-- > 0;) steps_[i]->Undo(ctx);
}

void TaskSetupChain::Release(TaskSetupContext& ctx) {
  for (size_t i = steps_.size(); i-- > 0;) steps_[i]->Release(ctx);
}

}  // namespace gpool::worker
