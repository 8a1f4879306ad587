// A NumaPinning resolved against this machine, ready for a forked child.
// Prepare runs in the parent (it allocates and asks the kernel what this
// process may use); the Apply calls run in the child between fork and exec
// and make only async-signal-safe system calls. See
// posix_process_launcher.h for the rules.
//
// Thread-safety: Prepare is reentrant; an instance is used by one process.
#pragma once

#include <sched.h>

#include <cstdint>
#include <string>
#include <vector>

#include "worker/runner/process_launcher.h"

namespace gpool::worker {

class PreparedPinning {
 public:
  // Node ids are refused above this (NumaInfo ids go to 4095).
  static constexpr uint32_t kMaxNodes = 4096;

  // `notes` gets one line per part left out and why (for the worker's log).
  static PreparedPinning Prepare(const NumaPinning& pinning, std::vector<std::string>* notes);

  PreparedPinning() = default;
  PreparedPinning(PreparedPinning&& other) noexcept;
  PreparedPinning& operator=(PreparedPinning&&) = delete;
  PreparedPinning(const PreparedPinning&) = delete;
  ~PreparedPinning();

  // 0, or the errno of sched_setaffinity / set_mempolicy. Nothing to do: 0.
  int ApplyCpus() const;
  int ApplyMemory() const;

  bool pins_cpus() const { return cpus_ != nullptr; }
  bool pins_memory() const { return mode_ != 0; }
  const std::string& cpu_list() const { return cpu_list_; }    // what ApplyCpus sets, as a cpulist
  const std::string& node_list() const { return node_list_; }  // what ApplyMemory binds to
  const char* mode_name() const;

 private:
  cpu_set_t* cpus_ = nullptr;  // CPU_ALLOC'ed
  size_t cpus_bytes_ = 0;
  int mode_ = 0;                     // MPOL_*; 0: no memory policy
  std::vector<unsigned long> nodes_;  // nodemask of kMaxNodes bits
  std::string cpu_list_;
  std::string node_list_;
};

}  // namespace gpool::worker
