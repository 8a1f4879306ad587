// ClusterStateTest: a ClusterState driven by commands as the log would
// apply them (each at its own index and a time of 1000 ms per index), with
// builders for the commands most tests need.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "control/state/cluster_state.h"
#include "protocol/model/task_report.h"

namespace gpool::state {

inline JobSpec MakeJob(const std::string& name, uint32_t replicas, uint32_t gpus) {
  JobSpec spec;
  spec.name = name;
  TaskGroupSpec group;
  group.replicas = replicas;
  group.command = {"true"};
  group.resources = Resources{gpus, 1000, 1024};
  spec.tasks.push_back(group);
  return spec;
}

class ClusterStateTest : public ::testing::Test {
 protected:
  ApplyResult Do(CommandBody body) { return state_.Apply(++index_, Command{static_cast<int64_t>(1000 * index_), std::move(body)}); }

  uint64_t Submit(const std::string& name, uint32_t replicas, uint32_t gpus, const std::string& key = "") {
    ApplyResult r = Do(SubmitJobCmd{MakeJob(name, replicas, gpus), key});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.job_id;
  }

  PlanBind Bind(uint64_t job, uint32_t task, const std::string& node, std::vector<uint32_t> gpus) {
    return PlanBind{JobId(job), task, node, std::move(gpus), 1000, 1024};
  }

  ApplyResult Event(uint64_t job, uint32_t task, const std::string& node, const std::string& kind, int32_t code = 0) {
    TaskEvent event;
    event.node = node;
    event.task = TaskId{JobId(job), task, 0};
    event.kind = EnumFromName<TaskEventKind>(kind).value();
    event.exit_code = code;
    event.pid = 100 + task;
    return Do(TaskEventCmd{event});
  }

  ClusterState state_;
  uint64_t index_ = 0;
};

}  // namespace gpool::state
