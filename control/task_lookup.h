// Finds the task a user names for `gpool exec`: "JOBID.INDEX" (the job's id
// and the task's index, as `gpool logs` takes it) or its stable name
// "<job-name>-<group>-<replica>" (GPOOL_TASK_NAME, what the MPI hostfile
// lists). A stable name is looked up among the jobs that have not finished,
// or only in `job_scope` when it is not 0 (what `gpool exec-rsh` inside a
// task sends: two jobs may share a name). Pure: reads the state.
//
// Errors: InvalidArgument for an empty or overlong name; NotFound when no
// task has it (the message says which form was tried); FailedPrecondition
// when a stable name matches tasks of several jobs (use JOBID.INDEX).
#pragma once

#include <cstdint>
#include <string_view>

#include "control/state/cluster_state.h"

namespace gpool::control {

struct FoundTask {
  const state::JobRecord* job = nullptr;
  const state::TaskRecord* task = nullptr;
};

Result<FoundTask> FindTaskByName(const state::ClusterState& state, std::string_view name, uint64_t job_scope);

}  // namespace gpool::control
