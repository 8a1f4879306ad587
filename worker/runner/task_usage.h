// Which task each measured GPU process belongs to, and what each task uses
// in all (Heartbeat.usage).
//
// A task's main process leads its own process group (process_launcher.h:
// the group id is the pid TaskManager knows), and everything it forks stays
// in that group unless it moves out. A process belongs to task T when
//   1. it is T's pid, or
//   2. its process group is T's pid (children, and double-forked ones that
//      init or a subreaper adopted), or
//   3. an ancestor on its parent chain is T's pid or in T's group: children
//      that made their own group or session (setsid, some launchers), which
//      a process-group rule alone would miss.
// The session id is no help: tasks do not call setsid and share the
// worker's. Processes that match no task (other users', the worker's own,
// ones whose /proc entry is gone) are left out, and so are tasks with no
// measured process.
//
// Thread-safety: stateless; call from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/messages_worker.h"
#include "worker/runner/proc_stat.h"

namespace gpool::worker {

// The parent and group of a pid; nullopt when it cannot be read.
using ProcessLookup = std::function<std::optional<ProcStat>(int64_t pid)>;

// ReadProcStat under `proc_root` ("/proc"; tests give a fake tree).
ProcessLookup ProcStatLookup(std::string proc_root);

// MiB per task, by TaskId, from MiB per pid (GpuUsageSampler::Sample) and
// the running tasks' pids (TaskManager::RunningPids).
std::vector<TaskUsage> UsageByTask(const std::map<int64_t, uint64_t>& mib_by_pid,
                                   const std::map<int64_t, TaskId>& tasks_by_pid, const ProcessLookup& lookup);

}  // namespace gpool::worker
