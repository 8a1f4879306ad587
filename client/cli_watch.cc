// The CLI's followers on the watch API (docs/protocol.md 7.19): `gpool wait`
// (a progress line on each change of the job), `gpool jobs --watch` and
// `gpool events --follow`. A coordinator (or a test's fake client) without
// the watch API answers UnknownType; they then poll as before.
#include <chrono>

#include "client/cli_internal.h"
#include "client/format.h"
#include "client/format_health.h"
#include "client/watcher.h"
#include "protocol/event.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_watch.h"
#include "protocol/types.h"

namespace gpool::cli {
namespace {

constexpr int64_t kPollMs = 200;
// How long one Next() waits at most, so a --timeout is noticed.
constexpr int64_t kSliceMs = 1000;

bool NoWatchApi(const Status& status) { return status.code() == StatusCode::kUnknownType; }

// Milliseconds left before `timeout_ms` (0: none) runs out since `start`.
int64_t Left(const Session& s, int64_t start, int64_t timeout_ms) {
  if (timeout_ms == 0) return kSliceMs;
  return std::min(kSliceMs, timeout_ms - (s.env.clock->MonoMs() - start));
}

// The job's final line and exit code, or -1 while it has not ended.
int Ended(Session& s, const JobSummary& summary) {
  auto state = JobStateFromString(summary.state);
  if (!state || !IsTerminal(*state)) return -1;
  if (s.json) {
    s.out << ToJson(summary) << "\n";
  } else {
    s.out << "job " << summary.job_id << " " << summary.state;
    if (*state != JobState::kSucceeded && !summary.reason.empty()) s.out << ": " << summary.reason;
    s.out << "\n";
  }
  return *state == JobState::kSucceeded ? kExitOk : kExitJobUnsuccessful;
}

std::string Progress(const JobSummary& job) {
  std::string line = "job " + std::to_string(job.job_id) + ": " + job.state;
  if (job.state == "Running") {
    line += " (" + std::to_string(job.tasks_running) + "/" + std::to_string(job.tasks_total) + " tasks running)";
  }
  if (!job.reason.empty()) line += ": " + job.reason;
  return line;
}

Status StillRunning(JobId job, const std::string& state, int64_t waited) {
  return Status::DeadlineExceeded("job " + std::to_string(job.value()) + " is still " + state + " after " +
                                  FormatDuration(waited));
}

int PollForJob(Session& s, Client& client, JobId job, int64_t timeout_ms) {
  const int64_t start = s.env.clock->MonoMs();
  while (true) {
    auto reply = client.GetJob(job);
    if (!reply.ok()) return s.Fail(reply.status());
    if (int code = Ended(s, reply->summary); code >= 0) return code;
    const int64_t waited = s.env.clock->MonoMs() - start;
    if (timeout_ms > 0 && waited >= timeout_ms) return s.Fail(StillRunning(job, reply->summary.state, waited));
    s.env.sleep_ms(timeout_ms > 0 ? std::min(kPollMs, timeout_ms - waited) : kPollMs);
  }
}

}  // namespace

int WaitForJob(Session& s, JobId job, int64_t timeout_ms) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  Watch request;
  request.topic = "job";
  request.key = std::to_string(job.value());
  Watcher watcher(**client, request);
  const int64_t start = s.env.clock->MonoMs();
  std::string last_line, state = "Pending";
  while (true) {
    const int64_t left = Left(s, start, timeout_ms);
    if (left <= 0) return s.Fail(StillRunning(job, state, s.env.clock->MonoMs() - start));
    auto batch = watcher.Next(std::chrono::milliseconds(left));
    if (!batch.ok()) {
      if (NoWatchApi(batch.status())) return PollForJob(s, **client, job, timeout_ms);
      return s.Fail(batch.status());
    }
    if (!batch->has_value()) continue;
    for (const JobSummary& summary : (*batch)->items.jobs) {
      state = summary.state;
      if (int code = Ended(s, summary); code >= 0) return code;
      // Progress goes to stderr, so stdout stays the one final line.
      if (std::string line = Progress(summary); !s.json && line != last_line) {
        s.err << line << "\n" << std::flush;
        last_line = std::move(line);
      }
    }
  }
}

int FollowEvents(Session& s, const ListEvents& filter, int64_t timeout_ms,
                 const std::function<void(const std::vector<ClusterEvent>&)>& print) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  Watch request;
  request.topic = "events";
  request.after = filter.after_seq;
  Watcher watcher(**client, request);
  const int64_t start = s.env.clock->MonoMs();
  ListEvents polled = filter;
  bool polling = false;
  while (true) {
    const int64_t left = Left(s, start, timeout_ms);
    if (left <= 0) return kExitOk;
    if (polling) {
      s.env.sleep_ms(std::min<int64_t>(left, 500));
      auto reply = (*client)->ListEvents(polled);
      if (!reply.ok()) return s.Fail(reply.status());
      polled.after_seq = reply->last_seq;
      print(reply->events);
      continue;
    }
    auto batch = watcher.Next(std::chrono::milliseconds(left));
    if (!batch.ok()) {
      if (!NoWatchApi(batch.status())) return s.Fail(batch.status());
      polling = true;
      continue;
    }
    if (!batch->has_value()) continue;
    std::vector<ClusterEvent> shown;
    for (ClusterEvent& event : (*batch)->items.events) {
      // The initial listing printed up to filter.after_seq already.
      if (event.seq <= filter.after_seq) continue;
      if (!filter.node.empty() && event.node != filter.node) continue;
      if (filter.job != 0 && event.job != filter.job) continue;
      shown.push_back(std::move(event));
    }
    print(shown);
  }
}

int WatchJobs(Session& s, int64_t timeout_ms) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  Watch request;
  request.topic = "jobs";
  Watcher watcher(**client, request);
  const int64_t start = s.env.clock->MonoMs();
  bool first = true;
  while (true) {
    const int64_t left = Left(s, start, timeout_ms);
    if (left <= 0) return kExitOk;
    auto batch = watcher.Next(std::chrono::milliseconds(left));
    if (!batch.ok()) return s.Fail(batch.status());
    if (!batch->has_value()) continue;
    if (first || (*batch)->reset) {
      // The unfinished jobs as they are now; then one line per change.
      ListJobsReply table;
      table.jobs = (*batch)->items.jobs;
      s.out << (s.json ? ToJson(table) + "\n" : FormatJobsTable(table, s.WallMs()));
      first = false;
    } else {
      for (const JobSummary& job : (*batch)->items.jobs) {
        s.out << (s.json ? ToJson(job) : Progress(job)) << "\n";
      }
    }
    s.out.flush();
  }
}

}  // namespace gpool::cli
