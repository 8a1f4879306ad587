// TaskManager's files for gang tasks' MPI: the hostfile and the job's hosts
// file (job_hosts.h). Apart from task_manager.cc to keep each file small.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "protocol/base/text.h"
#include "worker/log.h"
#include "worker/runner/atomic_file.h"
#include "worker/runner/job_hosts.h"
#include "worker/runner/task_env.h"
#include "worker/runner/task_manager.h"

namespace gpool::worker {

void TaskManager::RemoveHostsFiles(const TaskId& gone) {
  // Its MPI hostfile, and its job's hosts file once no task of the job is
  // left on this node (a later attempt bound here writes it again).
  std::error_code ec;
  std::filesystem::remove(TaskHostfilePath(state_root(), gone), ec);
  const auto same_job = tasks_.lower_bound(TaskId{gone.job, 0, 0});
  if (same_job == tasks_.end() || same_job->first.job != gone.job) {
    std::filesystem::remove(JobHostsPath(state_root(), gone), ec);
  }
}

void TaskManager::WriteHostfile(const TaskId& id, const std::vector<HostSlots>& hosts,
                                std::vector<std::string>& env) {
  const std::string content = MpiHostfile(hosts);
  if (content.empty()) {
    log_->warn("the bind's host list is malformed; no hostfile written task={} hosts={}", id.ToString(),
               hosts.size());
    return;
  }
  const std::string path = TaskHostfilePath(state_root(), id);
  std::ofstream out(path, std::ios::trunc);
  out << content;
  if (!out) {
    log_->warn("cannot write the MPI hostfile task={} path={}", id.ToString(), Q(path));
    return;
  }
  std::erase_if(env, [](const std::string& e) { return e.rfind("GPOOL_HOSTFILE=", 0) == 0; });
  env.push_back("GPOOL_HOSTFILE=" + path);
}

bool TaskManager::NamesReady(const Task& task) {
  bool ready = true;
  for (const TaskHost& t : task.bind.task_hosts) {
    if (t.address.empty() && !resolver_->Lookup(t.host)) ready = false;
  }
  return ready;
}

void TaskManager::WriteJobNames(const TaskId& id, const BindTask& bind, LaunchRequest& request) {
  std::string base;
  if (auto etc = ReadWholeFile(options_.etc_hosts); etc.ok()) base = *etc;
  std::vector<std::string> unresolved;
  // From the cache only: a host still unanswered (names_wait_ms ran out)
  // gets no line rather than a lookup on this thread.
  const auto cached = [&](const std::string& host) { return resolver_->Lookup(host).value_or(std::string()); };
  const std::string hosts = JobHostsFile(base, bind.task_hosts, cached, &unresolved);
  if (!unresolved.empty()) {
    log_->warn("task names whose node does not resolve have no hosts line task={} names={}", id.ToString(),
               Q(JoinWords(unresolved)));
  }
  const std::string hosts_path = JobHostsPath(state_root(), id);
  const std::string hostfile_path = TaskHostfilePath(state_root(), id);
  // Rewritten at every start of an attempt: nothing to keep past a reboot.
  Status written = WriteFileAtomic(hosts_path, hosts, kWithinBoot);
  if (written.ok()) written = WriteFileAtomic(hostfile_path, MpiHostfileByName(bind.task_hosts), kWithinBoot);
  if (!written.ok()) {
    log_->warn("cannot write the job's hosts file or hostfile task={} error={}", id.ToString(),
               Q(written.ToString()));
    return;
  }
  std::erase_if(request.env, [](const std::string& e) {
    return e.rfind("GPOOL_HOSTFILE=", 0) == 0 || e.rfind("GPOOL_HOSTS_FILE=", 0) == 0;
  });
  request.env.push_back("GPOOL_HOSTFILE=" + hostfile_path);
  request.env.push_back("GPOOL_HOSTS_FILE=" + hosts_path);
  for (const auto& [key, value] : MpiLauncherEnv(options_.rsh_agent, hostfile_path, request.env)) {
    request.env.push_back(key + "=" + value);
  }
  std::sort(request.env.begin(), request.env.end());
  if (options_.private_hosts) {
    request.hosts_file = hosts_path;
  } else {
    log_->info("task resolves its gang's names through GPOOL_HOSTS_FILE only (a private /etc/hosts needs a root "
               "worker) task={} hosts_file={}",
               id.ToString(), Q(hosts_path));
  }
}

}  // namespace gpool::worker
