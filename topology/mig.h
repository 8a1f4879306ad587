// NVIDIA MIG (Multi-Instance GPU) profile tables and layout math.
//
// A GPU in MIG mode cannot be cut anywhere: each profile takes a fixed number
// of compute slices (GPCs) and a contiguous run of memory slices that may only
// start at a few offsets the hardware allows. Whether one more instance fits
// is therefore a question of geometry, not of free memory: 1g.10gb x4 on an
// A100-40GB leaves three compute slices idle yet nothing else fits, and after
// a 4g at 0 a 3g only goes at 4. The scheduler (dynamic MIG), node
// registration (static layouts a node reports) and the CLI must agree on that
// geometry, so the tables and the fit rules live here once.
//
// Pure data and arithmetic: no NVML, no I/O, no dependency beyond the
// standard library, so it runs on the coordinator (which has no GPU), in the
// simulator and in tests. Memory figures are the per-instance sizes NVML
// reports for a profile (nvidia-smi mig -lgip, in MiB), which is what a task
// can actually allocate, not the nominal "10gb" of the name; mig.cc says
// where each figure comes from and which are estimates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpool::topology {

struct MigProfile {
  std::string name;              // "1g.10gb"
  uint32_t compute_slices = 0;   // GPCs it takes (1, 2, 3, 4, 7)
  uint32_t memory_slices = 0;    // memory slices it takes, of the model's total
  uint64_t memory_mib = 0;       // usable memory of an instance
  std::vector<uint32_t> starts;  // allowed placement starts (memory-slice units), ascending
  // "+me" profile: the GPU's one set of media engines (JPEG, OFA) comes with
  // it, so a GPU holds at most one such instance. Given only when asked for by
  // name; best fit never picks one.
  bool media = false;
};

struct MigModel {
  std::string name;                  // "A100-80GB"
  uint32_t compute_slices = 7;       // total
  uint32_t memory_slices = 8;        // total
  std::vector<MigProfile> profiles;  // smallest first: by memory, then compute
};

// An instance on a GPU: its profile name and placement start.
struct MigInstance {
  std::string profile;
  uint32_t start = 0;
};

// The table for a GPU model as NVML and node spec files name it
// ("A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "H100 NVL", "NVIDIA H20", ...),
// case-insensitive. memory_mib (the device's total, as nvidia-smi reports it;
// 0 if unknown) tells sizes of one model apart (A100 40 vs 80 GB, H100 80 vs
// 94 vs 96 GB, H20 96 vs 141 GB) and wins over a size in the name; without it
// the name must say. nullptr: the model has no MIG, or its size cannot be told.
const MigModel* FindMigModel(std::string_view gpu_model, uint64_t memory_mib);

// A profile of `model` by name: "1g.10gb", also "MIG 1g.10gb" (nvidia-smi -L)
// and "mig-1g.10gb" (Kubernetes resource), case-insensitive. nullptr: none.
const MigProfile* FindProfile(const MigModel& model, std::string_view profile_name);

// Compute share of a profile in percent of the whole GPU, rounded down
// (1g of 7: 14).
uint32_t MigComputePct(const MigModel& model, const MigProfile& profile);

// The lowest allowed start where `profile` fits next to `used`: its memory
// slices overlap none of theirs and compute slices together stay within the
// model's total (and at most one media-extension instance). nullopt when it
// fits nowhere, or when `used` names a profile the model does not have (its
// slices are unknown, so nothing is safe).
std::optional<uint32_t> FindMigStart(const MigModel& model, const MigProfile& profile,
                                     const std::vector<MigInstance>& used);

struct MigChoice {
  const MigProfile* profile = nullptr;
  uint32_t start = 0;
};

// Best fit for a request: the first (smallest) profile with at least
// memory_mib memory and at least compute_pct compute share (MigComputePct)
// that can still be placed next to `used`, and where. Media-extension
// profiles are skipped. nullopt: none.
std::optional<MigChoice> BestFitMig(const MigModel& model, uint64_t memory_mib, uint32_t compute_pct,
                                    const std::vector<MigInstance>& used);

// Whether a whole layout is one the hardware allows (static layouts nodes
// report). nullopt: it is; otherwise the first problem, naming the instance
// by its 0-based index, e.g. "instance 2 (3g.40gb at 2): start not allowed (0, 4)".
std::optional<std::string> CheckMigLayout(const MigModel& model, const std::vector<MigInstance>& layout);

// Names of all models with tables ("A30-24GB", "A100-40GB", ...), for docs
// and the CLI. Each one is also accepted by FindMigModel with memory_mib 0.
std::vector<std::string> MigModelNames();

}  // namespace gpool::topology
