// Gang tasks' files for MPI (job_hosts.h): with names (task_hosts), the
// job's hosts file, the hostfile by name and MPI's variables; with a host
// list (GPOOL_HOSTS), an MPI hostfile. A failure to write them is logged
// and the task starts without them, as it always has: a gang whose ranks
// find each other another way must not be held back by a file.
//
// The files are not undone with a failed start: the job's hosts file is
// shared by the job's tasks on this node, so it goes when the last of their
// records does (Remove, called by the TaskManager, which keeps the table).
// The wait for the nodes' names to resolve is the TaskManager's (a pending
// task waits, never the loop); this step reads the resolver's cache only.
#pragma once

#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "worker/runner/host_resolver.h"
#include "worker/runner/setup/task_setup_step.h"

namespace gpool::worker {

struct HostsFilesStepOptions {
  std::string state_root;             // where the files go (task_manager.h state_dir)
  std::string etc_hosts = "/etc/hosts";  // the start of every job's hosts file
  std::string rsh_agent;              // MPI's remote agent; empty: none set
  bool private_hosts = false;         // the hosts file over /etc/hosts (root)
  HostResolver* resolver = nullptr;   // not owned; required for names
};

class HostsFilesStep final : public TaskSetupStep {
 public:
  HostsFilesStep(HostsFilesStepOptions options, std::shared_ptr<spdlog::logger> logger);

  std::string_view Name() const override { return "hosts"; }
  // Writes the files and points the request's env (and hosts_file) at
  // them; never fails.
  Status Prepare(TaskSetupContext& ctx) override;

  // A task's MPI hostfile once its record is gone, and its job's hosts file
  // when no task of the job is left on this node (`job_gone`; a later
  // attempt bound here writes it again).
  void Remove(const TaskId& gone, bool job_gone) const;

 private:
  void WriteHostfile(const TaskSetupContext& ctx, std::vector<std::string>& env) const;
  void WriteJobNames(const TaskSetupContext& ctx, LaunchRequest& request) const;

  HostsFilesStepOptions options_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace gpool::worker
