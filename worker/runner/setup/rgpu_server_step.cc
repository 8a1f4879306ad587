#include "worker/runner/setup/rgpu_server_step.h"

#include <filesystem>

#include "worker/runner/task_isolation.h"

namespace gpool::worker {

std::string RgpuEndpointFileOf(const std::string& log_dir, bool isolated, const TaskId& id) {
  return TaskRgpuEndpointPath(isolated ? TaskWorkDir(log_dir, id) : log_dir, id);
}

Status RgpuServerStep::Prepare(TaskSetupContext& ctx) {
  if (ctx.bind.rgpu.owner_key.empty()) return Status::Ok();
  const std::string key_file = TaskRgpuKeyPath(options_.log_dir, ctx.id);
  // A share's server finds its interposer (or HAMi-core) through its
  // environment by opening libcuda.so.1 by name; any other opens the real
  // driver by path (--cuda-real-driver may name one off the search path).
  const bool driver_by_name =
      !ctx.env.cuda_lib_dir.empty() || (IsGpuShare(ctx.bind) && !options_.cuda_intercept_lib.empty());
  const std::string endpoint_file = RgpuEndpointFileOf(options_.log_dir, options_.isolated, ctx.id);
  auto server = PrepareRgpuServer(options_.rgpu, key_file, endpoint_file, driver_by_name ? "" : options_.real_driver,
                                  ctx.bind);
  if (!server.ok()) return server.status();
  ctx.request.argv = std::move(server).value();
  ctx.owned_files.push_back(key_file);
  return Status::Ok();
}

void RgpuServerStep::Undo(TaskSetupContext& ctx) {
  if (ctx.bind.rgpu.owner_key.empty()) return;
  std::error_code ec;
  std::filesystem::remove(TaskRgpuKeyPath(options_.log_dir, ctx.id), ec);
  std::filesystem::remove(RgpuEndpointFileOf(options_.log_dir, options_.isolated, ctx.id), ec);
}

}  // namespace gpool::worker
