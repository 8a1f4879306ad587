// TaskManager's own records in a task's state directory (task_manager.h),
// beside the supervisor's (supervisor_state.h).
#pragma once

#include <string>

namespace gpool::worker {

inline std::string BindPath(const std::string& state_dir) { return state_dir + "/bind"; }
inline std::string StopPath(const std::string& state_dir) { return state_dir + "/stop"; }
inline std::string AckedPath(const std::string& state_dir) { return state_dir + "/acked"; }

}  // namespace gpool::worker
