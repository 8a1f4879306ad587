#include "worker/runner/setup/task_env_step.h"

#include "worker/runner/task_env.h"

namespace gpool::worker {

Status TaskEnvStep::Prepare(TaskSetupContext& ctx) {
  auto env = BuildTaskEnv(ctx.bind, node_, base_env_, ctx.env);
  if (!env.ok()) return env.status();
  ctx.request.argv = ctx.bind.command;
  ctx.request.env = std::move(env).value();
  return Status::Ok();
}

}  // namespace gpool::worker
