// TaskManager's starts: the setup chain (setup/task_setup_chain.h) built
// from its options, run before each launch and released at each reap. The
// order is the one the steps depend on: the log first (every later failure
// is written there), the share's files and MIG instances before the
// environment that names them, the rGPU server after the environment it
// inherits, the state directory before the isolation that makes it root's,
// and the isolation last (it gives the task the files the others made).
#include <filesystem>

#include "topology/cpulist.h"
#include "worker/log.h"
#include "worker/runner/lease_file.h"
#include "worker/runner/setup/cgroup_step.h"
#include "worker/runner/setup/isolation_step.h"
#include "worker/runner/setup/numa_step.h"
#include "worker/runner/setup/rgpu_server_step.h"
#include "worker/runner/setup/share_files_step.h"
#include "worker/runner/setup/state_dir_step.h"
#include "worker/runner/setup/task_env_step.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {

void TaskManager::BuildSetupChain() {
  const TaskManagerOptions& o = options_;
  auto log_step = std::make_unique<LogCapStep>(o.log_dir, o.log_max_bytes, log_);
  auto mig_step = std::make_unique<MigInstanceStep>(o.node, o.mig, log_);
  auto hosts_step = std::make_unique<HostsFilesStep>(
      HostsFilesStepOptions{.state_root = state_root(), .etc_hosts = o.etc_hosts, .rsh_agent = o.rsh_agent,
                            .private_hosts = o.private_hosts, .resolver = resolver_},
      log_);
  log_step_ = log_step.get();
  mig_step_ = mig_step.get();
  hosts_step_ = hosts_step.get();
  setup_.Add(std::move(log_step))
      .Add(std::make_unique<ShareFilesStep>(o.log_dir, o.cuda_intercept_lib, o.share, log_))
      .Add(std::move(mig_step))
      .Add(std::make_unique<TaskEnvStep>(o.node, o.base_env))
      .Add(std::make_unique<RgpuServerStep>(RgpuServerStepOptions{.rgpu = o.rgpu,
                                                                  .log_dir = o.log_dir,
                                                                  .isolated = o.isolation.enabled,
                                                                  .real_driver = o.share.real_driver,
                                                                  .cuda_intercept_lib = o.cuda_intercept_lib}))
      .Add(std::make_unique<NumaStep>(o.node))
      .Add(std::make_unique<CgroupStep>(
          CgroupStepOptions{.exclusive_cores_affinity_fallback = o.exclusive_cores_affinity_fallback}))
      .Add(std::move(hosts_step))
      .Add(std::make_unique<StateDirStep>(o.adopt_tasks, state_root()))
      .Add(std::make_unique<IsolationStep>(o.isolation, o.log_dir, o.node));
}

bool TaskManager::BeginStart(const TaskId& id, Task& task, Launching& launching) {
  auto setup = std::make_unique<TaskSetupContext>(id, task.bind, task.setup);
  if (Status prepared = setup_.Prepare(*setup); !prepared.ok()) {
    FailStart(id, task, prepared);
    return false;
  }
  launching.id = id;
  launching.ticket = options_.launcher->BeginLaunch(setup->request);
  launching.setup = std::move(setup);
  return true;
}

void TaskManager::FinishStart(Launching& launching) {
  const TaskId& id = launching.id;
  Task& task = tasks_.at(id);
  const LaunchRequest& request = launching.setup->request;
  auto pid = options_.launcher->FinishLaunch(launching.ticket);
  if (!pid.ok()) {
    setup_.Undo(*launching.setup);
    return FailStart(id, task, pid.status());
  }
  task.phase = Phase::kRunning;
  task.pid = *pid;
  task.started_mono_ms = options_.clock->MonoMs();
  by_pid_[*pid] = id;
  if (task.bind.rgpu.owner_key.empty()) {
    EmitStarted(id, task);
  } else {
    AwaitRgpuEndpoint(id, task, options_.clock->WallMs());  // "started" once it says where it listens
  }
  log_->info("task started task={} pid={} gpus={} numa_cpus={} exclusive_cpus={} log={} uid={} gid={} user={} pid_ns={} denied_devices={}",
             id.ToString(), *pid, JoinIndices(task.bind.gpu_indices),
             request.numa.empty() ? "none" : topology::FormatCpuList(request.numa.cpus),
             request.limits.cpuset_cpus.empty() ? "none" : topology::FormatCpuList(request.limits.cpuset_cpus),
             Q(request.log_path),
             request.identity.set ? std::to_string(request.identity.uid) : "worker",
             request.identity.set ? std::to_string(request.identity.gid) : "worker", Q(request.identity.user),
             request.own_pid_namespace, request.limits.deny_devices.size());
}

void TaskManager::FailStart(const TaskId& id, Task& task, const Status& status) {
  task.phase = Phase::kFailed;
  task.exit_code = 127;
  task.finished_mono_ms = options_.clock->MonoMs();
  // Refused for want of a lease (bound while this node was stalled past
  // it): the node's doing, not the task's. Reported lost, the coordinator
  // requeues it as a node loss instead of failing the job.
  task.lost = StartRefusedForNoLease(status);
  task.exit_seq = Emit(id, task.lost ? TaskEventKind::kLost : TaskEventKind::kFailed, 0, 127, 0, status.message());
  log_->warn("task failed to start task={} exit_code=127 lost={} error={}", id.ToString(), task.lost,
             Q(status.ToString()));
}

void TaskManager::ReleaseSetup(const TaskId& id, Task& task) {
  TaskSetupContext setup(id, task.bind, task.setup);
  setup_.Release(setup);
}

void TaskManager::RemoveHostsFiles(const TaskId& gone) {
  // Its job's hosts file goes once no task of the job is left on this node.
  const auto same_job = tasks_.lower_bound(TaskId{gone.job, 0, 0});
  hosts_step_->Remove(gone, same_job == tasks_.end() || same_job->first.job != gone.job);
}

}  // namespace gpool::worker
