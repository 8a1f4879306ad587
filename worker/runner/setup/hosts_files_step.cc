#include "worker/runner/setup/hosts_files_step.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "protocol/base/text.h"
#include "protocol/messages_worker.h"
#include "worker/log.h"
#include "worker/runner/atomic_file.h"
#include "worker/runner/job_hosts.h"
#include "worker/runner/task_env.h"

namespace gpool::worker {

HostsFilesStep::HostsFilesStep(HostsFilesStepOptions options, std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)), log_(OrDefault(std::move(logger))) {}

Status HostsFilesStep::Prepare(TaskSetupContext& ctx) {
  if (!ctx.bind.task_hosts.empty()) {
    WriteJobNames(ctx, ctx.request);
  } else if (!ctx.bind.hosts.empty()) {
    WriteHostfile(ctx, ctx.request.env);
  }
  return Status::Ok();
}

void HostsFilesStep::Remove(const TaskId& gone, bool job_gone) const {
  std::error_code ec;
  std::filesystem::remove(TaskHostfilePath(options_.state_root, gone), ec);
  if (job_gone) std::filesystem::remove(JobHostsPath(options_.state_root, gone), ec);
}

void HostsFilesStep::WriteHostfile(const TaskSetupContext& ctx, std::vector<std::string>& env) const {
  const std::vector<HostSlots>& hosts = ctx.bind.hosts;
  const std::string content = MpiHostfile(hosts);
  if (content.empty()) {
    log_->warn("the bind's host list is malformed; no hostfile written task={} hosts={}", ctx.id.ToString(),
               hosts.size());
    return;
  }
  const std::string path = TaskHostfilePath(options_.state_root, ctx.id);
  std::ofstream out(path, std::ios::trunc);
  out << content;
  if (!out) {
    log_->warn("cannot write the MPI hostfile task={} path={}", ctx.id.ToString(), Q(path));
    return;
  }
  std::erase_if(env, [](const std::string& e) { return e.rfind("GPOOL_HOSTFILE=", 0) == 0; });
  env.push_back("GPOOL_HOSTFILE=" + path);
}

void HostsFilesStep::WriteJobNames(const TaskSetupContext& ctx, LaunchRequest& request) const {
  const TaskId& id = ctx.id;
  const BindTask& bind = ctx.bind;
  std::string base;
  if (auto etc = ReadWholeFile(options_.etc_hosts); etc.ok()) base = *etc;
  std::vector<std::string> unresolved;
  // From the cache only: a host still unanswered (names_wait_ms ran out)
  // gets no line rather than a lookup on this thread.
  HostResolver* resolver = options_.resolver;
  const auto cached = [&](const std::string& host) { return resolver->Lookup(host).value_or(std::string()); };
  const std::string hosts = JobHostsFile(base, bind.task_hosts, cached, &unresolved);
  if (!unresolved.empty()) {
    log_->warn("task names whose node does not resolve have no hosts line task={} names={}", id.ToString(),
               Q(JoinWords(unresolved)));
  }
  const std::string hosts_path = JobHostsPath(options_.state_root, id);
  const std::string hostfile_path = TaskHostfilePath(options_.state_root, id);
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
