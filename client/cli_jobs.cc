// The commands that look at or act on jobs once submitted: jobs, job, cancel,
// logs, wait and explain (submit is in cli_submit.cc).
#include "client/cli_internal.h"

#include <algorithm>

#include "client/format.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/types.h"

namespace gpool::cli {
namespace {

// The wire decoder accepts strings up to 8 MiB (wire::DecodeLimits).
constexpr uint64_t kMaxLogBytes = 8 * 1024 * 1024;

int RunJobs(Session& s, const Invocation& inv) {
  if (inv.flags["watch"].as<bool>()) {
    int64_t timeout_ms = 0;
    if (inv.flags.count("timeout")) {
      auto t = ParseWaitTimeout(inv.flags["timeout"].as<std::string>());
      if (!t.ok()) return s.Fail(t.status().WithContext("--timeout"));
      timeout_ms = *t;
    }
    return WatchJobs(s, timeout_ms);
  }
  auto limit = ParseUnsignedFlag("--limit", inv.flags["limit"].as<std::string>(), UINT32_MAX);
  if (!limit.ok()) return s.Fail(limit.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListJobs(inv.flags["all"].as<bool>(), static_cast<uint32_t>(*limit));
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatJobsTable(*reply, s.WallMs()));
  return kExitOk;
}

int RunJob(Session& s, const Invocation& inv) {
  auto job = ParseJobId(inv.positionals[0]);
  if (!job.ok()) return s.Fail(job.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->GetJob(*job);
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatJobDetail(*reply, s.WallMs()));
  return kExitOk;
}

int RunCancel(Session& s, const Invocation& inv) {
  auto job = ParseJobId(inv.positionals[0]);
  if (!job.ok()) return s.Fail(job.status());
  auto grace = ParseWaitTimeout(inv.flags["grace"].as<std::string>());
  if (!grace.ok()) return s.Fail(grace.status().WithContext("--grace"));
  if (*grace > UINT32_MAX) return s.Fail(Status::InvalidArgument("--grace: too long"));
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->CancelJob(*job, static_cast<uint32_t>(*grace));
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) : "job " + std::to_string(reply->job_id) + " " + reply->state) << "\n";
  return kExitOk;
}

int RunLogs(Session& s, const Invocation& inv) {
  auto task = ParseTaskRef(inv.positionals[0]);
  if (!task.ok()) return s.Fail(task.status());
  auto bytes = ParseUnsignedFlag("--bytes", inv.flags["bytes"].as<std::string>(), kMaxLogBytes);
  if (!bytes.ok()) return s.Fail(bytes.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->GetTaskLog(task->job, task->index, static_cast<uint32_t>(*bytes));
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << LogToJson(task->job, task->index, *reply) << "\n";
    return kExitOk;
  }
  s.out << reply->data;
  s.out.flush();
  if (reply->truncated) {
    s.err << "(showing the last " << reply->data.size() << " of " << reply->size
          << " bytes; --bytes N shows more)\n";
  }
  if (reply->dropped > 0) {
    s.err << "(the log is capped on its node: " << reply->dropped
          << " earlier bytes were moved out)\n";
  }
  return kExitOk;
}

int RunWait(Session& s, const Invocation& inv) {
  auto job = ParseJobId(inv.positionals[0]);
  if (!job.ok()) return s.Fail(job.status());
  int64_t timeout_ms = 0;
  if (inv.flags.count("timeout")) {
    auto t = ParseWaitTimeout(inv.flags["timeout"].as<std::string>());
    if (!t.ok()) return s.Fail(t.status().WithContext("--timeout"));
    timeout_ms = *t;
  }
  return WaitForJob(s, *job, timeout_ms);
}

int RunExplain(Session& s, const Invocation& inv) {
  auto job = ParseJobId(inv.positionals[0]);
  if (!job.ok()) return s.Fail(job.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ExplainJob(*job);
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatExplain(*reply));
  return kExitOk;
}

void JobsOptions(cxxopts::Options& o) {
  o.add_options("jobs")
      ("a,all", "include finished jobs", cxxopts::value<bool>()->default_value("false"))
      ("limit", "show at most this many jobs, newest first", cxxopts::value<std::string>()->default_value("1000"), "N")
      ("w,watch", "then print each change as it is committed (pushed by the coordinator)",
       cxxopts::value<bool>()->default_value("false"))
      ("timeout", "with --watch: stop after this long (90, 90s, 5m); default: until interrupted",
       cxxopts::value<std::string>(), "S");
}

void CancelOptions(cxxopts::Options& o) {
  o.add_options("cancel")
      ("grace", "time between SIGTERM and SIGKILL (10, 10s, 1m)",
       cxxopts::value<std::string>()->default_value("10"), "S");
}

void LogsOptions(cxxopts::Options& o) {
  o.add_options("logs")
      ("bytes", "show at most the last N bytes (max 8388608)",
       cxxopts::value<std::string>()->default_value("65536"), "N");
}

void WaitOptions(cxxopts::Options& o) {
  o.add_options("wait")
      ("timeout", "give up after this long (90, 90s, 5m, 2h); exit 4 (default: no limit)",
       cxxopts::value<std::string>(), "S");
}

}  // namespace

const CommandDef kJobsCommand = {
    .name = "jobs",
    .synopsis = "[--all] [--watch [--timeout S]]",
    .summary = "list pending and running jobs (--all: finished ones too)",
    .min_args = 0,
    .max_args = 0,
    .add_options = JobsOptions,
    .run = RunJobs,
};

const CommandDef kJobCommand = {
    .name = "job",
    .synopsis = "ID",
    .summary = "show a job: summary, why it is pending, its tasks",
    .min_args = 1,
    .max_args = 1,
    .add_options = NoOptions,
    .run = RunJob,
};

const CommandDef kCancelCommand = {
    .name = "cancel",
    .synopsis = "ID [--grace S]",
    .summary = "cancel a job",
    .min_args = 1,
    .max_args = 1,
    .add_options = CancelOptions,
    .run = RunCancel,
};

const CommandDef kLogsCommand = {
    .name = "logs",
    .synopsis = "TASK [--bytes N]",
    .summary = "print the end of a task's log; TASK is JOB.INDEX, or JOB for index 0",
    .min_args = 1,
    .max_args = 1,
    .add_options = LogsOptions,
    .run = RunLogs,
};

const CommandDef kWaitCommand = {
    .name = "wait",
    .synopsis = "ID [--timeout S]",
    .summary = "wait for a job to finish; exit 0 if it succeeded, 1 if it failed or was cancelled",
    .min_args = 1,
    .max_args = 1,
    .add_options = WaitOptions,
    .run = RunWait,
};

const CommandDef kExplainCommand = {
    .name = "explain",
    .synopsis = "ID",
    .summary = "show why a job is where it is: reasons, queue quotas and usage, jobs ahead",
    .min_args = 1,
    .max_args = 1,
    .add_options = NoOptions,
    .run = RunExplain,
};

}  // namespace gpool::cli
