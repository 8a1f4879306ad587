// Retention: finished jobs leave the live state after a while, and what
// remains of them.
//
// Every job the coordinator ever admitted used to stay in its memory, in
// every snapshot and in every replay at start (20,000 jobs: 128 MB RSS, 169
// MB after a restart). Now a finished job (Succeeded, Failed or Cancelled)
// is kept for RetentionPolicy::keep_ms after it finished and among the
// newest keep_jobs finished jobs, and then forgotten: its record leaves the
// state (and so the next snapshot, and the restart after it), and a
// ForgottenJob of it is kept instead (a bounded ring of the newest, for `gpool
// job N`) along with running per-(queue, user) UsageTotals, which are what
// accounting reads until the observability work exports per-job records.
//
// Determinism: the state machine forgets only through a committed
// ForgetJobsCmd (commands.h). The leader's RetentionDriver computes the
// cutoff from its own wall clock and its policy, and puts both numbers in
// the command; every replica applies the same rule to the same state with
// the same numbers. A rule evaluated at apply time from each replica's own
// flags would let two replicas configured differently (a rolling restart
// with a new --retain-finished-jobs) hold different states from one log.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>

namespace gpool::state {

struct RetentionPolicy {
  // Sized for a 10,000-GPU cluster: at a typical 20,000-50,000 finished
  // jobs a day, seven days is 140,000-350,000 jobs, so the count binds
  // first and bounds memory (about 2.6 KB a finished one-task job in the
  // live state: 298 MiB after a month of 1,000,000 jobs, 156 MiB after a
  // restart; bench/retention_bench.cc, docs/operations.md 6.5),
  // while a week covers the questions users ask of a finished job (what
  // did it exit with, where did it run) and every client retry window for
  // idempotency keys, which go with their jobs.
  int64_t keep_ms = int64_t{7} * 24 * 3600 * 1000;  // after the job finished; 0: forget at the next check
  uint64_t keep_jobs = 100'000;                     // the newest finished jobs kept; 0: none
  int64_t check_every_ms = 60'000;                  // how often the leader looks
};

// What is left of a forgotten job.
struct ForgottenJob {
  uint64_t id = 0;
  std::string user;
  std::string queue;
  uint32_t state = 0;  // JobState
  int64_t submit_ms = 0;
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  // GPUs held times running time, summed over its tasks' last attempts
  // (earlier attempts of requeued tasks are not in the record to count).
  uint64_t gpu_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("user", user);
    v.Optional("queue", queue);
    v.Optional("state", state);
    v.Optional("submit_ms", submit_ms);
    v.Optional("start_ms", start_ms);
    v.Optional("finish_ms", finish_ms);
    v.Optional("gpu_ms", gpu_ms);
  }
};

// Every forgotten job of one queue and user, summed.
struct UsageTotal {
  std::string queue;
  std::string user;
  uint64_t jobs = 0;
  uint64_t succeeded = 0;
  uint64_t failed = 0;
  uint64_t cancelled = 0;
  uint64_t gpu_ms = 0;
  int64_t last_finish_ms = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("queue", queue);
    v.Optional("user", user);
    v.Optional("jobs", jobs);
    v.Optional("succeeded", succeeded);
    v.Optional("failed", failed);
    v.Optional("cancelled", cancelled);
    v.Optional("gpu_ms", gpu_ms);
    v.Optional("last_finish_ms", last_finish_ms);
  }
};

}  // namespace gpool::state
