// The environment distributed-training launchers expect (torchrun, DeepSpeed,
// Horovod/MPI wrappers), computed for one task of a gang from where the whole
// job was placed:
//
//   RANK / WORLD_SIZE              the task's index among all the job's tasks
//   LOCAL_RANK / LOCAL_WORLD_SIZE  its rank among the job's tasks on its node
//   NODE_RANK / NNODES             its node's rank among the job's nodes, in
//                                  order of each node's lowest task index
//   MASTER_ADDR / MASTER_PORT      task 0's host, and a port chosen from the
//                                  job id (29500 + id mod 10000)
//   GPOOL_HOSTS                    host:slots for every node, in NODE_RANK
//                                  order (an MPI hostfile's content)
//   GPOOL_TASK_NAME                <job>-<group>-<replica>: stable across
//                                  attempts and placements
//   GPOOL_<GROUP>_HOSTS            each group's hosts in replica order
//
// An elastic job (a group with fewer min_replicas than replicas) is laid out
// over the replicas placed so far: RANK and WORLD_SIZE count those. A task
// whose gang-mates are not all placed yet gets only RANK, WORLD_SIZE and
// GPOOL_TASK_NAME. The user's own env wins: a job that sets MASTER_PORT keeps it.
// Pure: reads the state, touches nothing.
//
// TrainingLayout computes a job's layout once, so that binding all the
// tasks of a wide job costs linear work rather than a pass over the job per
// task (a thousand-task job meant a million steps); TrainingEnv is the
// one-task shorthand. A layout is only valid while the state it was built
// from does not change.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/state/cluster_state.h"
#include "protocol/messages_worker.h"

namespace gpool::control {

class TrainingLayout {
 public:
  // The layout of `job` as `task` sees it: an elastic job is laid out over
  // the replicas holding resources, with `task` among them.
  TrainingLayout(const state::ClusterState& state, const state::JobRecord& job, const state::TaskRecord& task);

  // Whether `task` of the same job sees this same layout (any task of a gang
  // job; a task of an elastic job that holds resources or was the one the
  // layout was built for).
  bool Covers(const state::TaskRecord& task) const;
  // The environment of `task`; Covers(task) must hold.
  std::map<std::string, std::string> EnvFor(const state::TaskRecord& task) const;
  // Every node of the layout with its task count, in NODE_RANK order, for
  // `task`'s bind (the worker writes the MPI hostfile from it); empty where
  // EnvFor has no GPOOL_HOSTS.
  std::vector<HostSlots> HostsFor(const state::TaskRecord& task) const;
  // Every member task by its stable name (GPOOL_TASK_NAME) with its node's
  // host and its MPI slots (one), in task index order, for `task`'s bind (the
  // worker writes the job's hosts file and the hostfile by name from it);
  // empty where HostsFor is.
  std::vector<TaskHost> TaskHostsFor(const state::TaskRecord& task) const;
  // <job>-<group>-<replica>: stable across attempts and placements.
  std::string TaskName(const state::TaskRecord& task) const;

 private:
  const state::JobRecord* job_;
  bool elastic_ = false;
  uint32_t built_for_ = 0;                // the task index the layout was built with
  std::vector<uint32_t> replica_;         // per task index: its replica number in its group
  std::vector<int64_t> member_;           // per task index: its position among the members, -1 if none
  uint32_t members_ = 0;
  bool placed_ = false;                   // every member has a node
  std::vector<uint32_t> node_of_;         // per member: its node's rank
  std::vector<uint32_t> local_rank_;      // per member: its rank among the members on its node
  std::vector<uint32_t> slots_;           // per node rank: members there
  std::vector<HostSlots> hosts_;          // what GPOOL_HOSTS spells as host:slots,...
  std::vector<TaskHost> task_hosts_;      // per member: its name, its node's host, its slots
  std::string master_;                    // MASTER_ADDR
  std::map<std::string, std::string> group_hosts_;  // GPOOL_<GROUP>_HOSTS -> value
};

std::map<std::string, std::string> TrainingEnv(const state::ClusterState& state, const state::JobRecord& job,
                                               const state::TaskRecord& task);

}  // namespace gpool::control
