// The job specs benches submit or build offline, one definition each so the
// benches' numbers stay comparable (the same record sizes in every state).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "protocol/types.h"

namespace gpool::bench {

// `replicas` tasks of `gpus` GPUs each, 100 millicores and 64 MB, running `command`.
inline JobSpec SimpleJob(const std::string& name, uint32_t replicas, uint32_t gpus, std::vector<std::string> command) {
  JobSpec spec;
  spec.name = name;
  TaskGroupSpec group;
  group.name = "main";
  group.replicas = replicas;
  group.command = std::move(command);
  group.resources = Resources{gpus, 100, 64};
  spec.tasks.push_back(group);
  return spec;
}

// A month-of-training job as the retention benches keep them: one task, one
// GPU, a few env vars; 50 users.
inline JobSpec TrainingJob(uint64_t i) {
  JobSpec spec;
  spec.name = "train-" + std::to_string(i);
  spec.user = "user-" + std::to_string(i % 50);
  TaskGroupSpec group;
  group.command = {"python3", "train.py", "--seed", std::to_string(i)};
  group.env = {{"EPOCHS", "3"}, {"DATASET", "imagenet"}};
  group.resources = Resources{1, 4'000, 32'768};
  spec.tasks.push_back(group);
  return spec;
}

}  // namespace gpool::bench
