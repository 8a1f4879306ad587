// The directory of tasks' within-boot records (TaskManagerOptions::state_dir,
// `gpool-worker --run-dir`).
//
// Each task start writes ~10 small files (its bind, launch and start
// records, the supervisor's lock and log, its exit and ack, hosts files) and
// removes them once it is over. On an ext4 data disk that churn (journal,
// inode allocation among recently deleted inodes) was a third of the
// worker's CPU per short task (issue 46). The records need to survive a
// worker restart, not a reboot (the supervisors and their tasks do not
// survive one either), which is what a tmpfs such as /run is for.
#pragma once

#include <functional>
#include <string>

namespace gpool::worker {

struct RunDirChoice {
  std::string dir;
  std::string why;  // for the log: how it was chosen
};

// `flag` when given; else <run_root>/gpool-worker/<id> when run_root is a
// tmpfs (is_tmpfs) and that directory can be made (mode 0711: tasks reach
// their own hosts files, list nothing), id a stable hash of the data dir's
// absolute path (two workers on one host, and the same worker after a
// restart or an upgrade, get what they got before); else <data_dir>/tasks,
// the layout of workers without a run dir.
RunDirChoice ChooseRunDir(const std::string& flag, const std::string& data_dir, const std::string& run_root = "/run",
                          const std::function<bool(const std::string&)>& is_tmpfs = nullptr);

// Whether `path` is on a tmpfs (statfs).
bool IsTmpfs(const std::string& path);

}  // namespace gpool::worker
