#include "worker/runner/setup/state_dir_step.h"

#include <filesystem>

#include "protocol/wire.h"
#include "worker/runner/atomic_file.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_records.h"

namespace gpool::worker {

Status StateDirStep::Prepare(TaskSetupContext& ctx) {
  if (!adopt_tasks_) return Status::Ok();
  const std::string dir = TaskStateDir(state_root_, ctx.id);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create task state directory " + dir + ": " + ec.message());
  GPOOL_RETURN_IF_ERROR(WriteFileAtomic(BindPath(dir), wire::PackToString(ctx.bind), kWithinBoot));
  ctx.request.state_dir = dir;
  ctx.record.state_dir = dir;
  return Status::Ok();
}

}  // namespace gpool::worker
