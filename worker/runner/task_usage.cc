#include "protocol/messages_worker.h"
#include "worker/runner/task_usage.h"

namespace gpool::worker {
namespace {

// Deeper than any real launcher chain (shell -> torchrun -> worker ->
// dataloader); bounds the walk if /proc shows a cycle (pid reuse mid-walk).
constexpr int kMaxAncestors = 64;

const TaskId* OwnerOf(int64_t pid, const std::map<int64_t, TaskId>& tasks, const ProcessLookup& lookup) {
  auto task_of = [&](int64_t id) -> const TaskId* {
    auto it = tasks.find(id);
    return it == tasks.end() ? nullptr : &it->second;
  };
  if (const TaskId* task = task_of(pid)) return task;
  int64_t current = pid;
  for (int depth = 0; depth < kMaxAncestors; ++depth) {
    const auto stat = lookup(current);
    if (!stat) return nullptr;
    if (const TaskId* task = task_of(stat->pgrp)) return task;
    if (stat->ppid <= 1) return nullptr;  // reached init: no task above
    if (const TaskId* task = task_of(stat->ppid)) return task;
    current = stat->ppid;
  }
  return nullptr;
}

}  // namespace

ProcessLookup ProcStatLookup(std::string proc_root) {
  return [root = std::move(proc_root)](int64_t pid) { return ReadProcStat(root, pid); };
}

std::vector<TaskUsage> UsageByTask(const std::map<int64_t, uint64_t>& mib_by_pid,
                                   const std::map<int64_t, TaskId>& tasks_by_pid, const ProcessLookup& lookup) {
  if (tasks_by_pid.empty()) return {};
  std::map<TaskId, uint64_t> by_task;
  for (const auto& [pid, mib] : mib_by_pid) {
    if (const TaskId* task = OwnerOf(pid, tasks_by_pid, lookup)) by_task[*task] += mib;
  }
  std::vector<TaskUsage> out;
  out.reserve(by_task.size());
  for (const auto& [task, mib] : by_task) out.push_back(TaskUsage{task, mib});
  return out;
}

}  // namespace gpool::worker
