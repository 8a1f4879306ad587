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
#pragma once

#include <map>
#include <string>

#include "control/state/cluster_state.h"

namespace gpool::control {

std::map<std::string, std::string> TrainingEnv(const state::ClusterState& state, const state::JobRecord& job,
                                               const state::TaskRecord& task);

}  // namespace gpool::control
