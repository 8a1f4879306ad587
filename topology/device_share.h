// Device sharing rules: when a GPU can take one more tenant (a fractional
// share, a MIG instance or some of its cores).
//
// The scheduler decides placements with these rules and the state machine
// re-checks every bind with the same ones before committing it, so a plan
// computed on a stale view can never over-commit a device.
//
//   - a device held whole takes no tenants; a device with tenants cannot be
//     held whole;
//   - shares add up to at most the device's memory and 100 % compute, and
//     at most kMaxTenantsPerDevice of them;
//   - sharing QoS: a shared device takes only tasks of the QoS of its first
//     tenant; a task asking for 100 % compute is exempt (it has the compute
//     to itself whatever the others' policy);
//   - MIG and shares never mix on one device; static MIG devices hand out the
//     instances they have, dynamic ones get instances from the model's
//     profile table (topology/mig.h), and switch MIG on or off only while
//     idle.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/types.h"
#include "topology/cluster_view.h"

namespace gpool::topology {

inline constexpr uint32_t kMaxTenantsPerDevice = 32;

// What a device's tenants hold now.
struct DeviceLoad {
  uint32_t tenants = 0;
  uint64_t memory_used_mib = 0;
  uint32_t compute_used_pct = 0;
  std::string qos;              // of its first tenant asking less than 100 % compute
  std::vector<MigSlot> mig;     // its MIG instances
  std::vector<bool> cores_used;  // per core

  static DeviceLoad Of(const GpuSlot& gpu);
  void WriteTo(GpuSlot& gpu) const;  // the inverse of Of
  bool HasMig() const;  // an instance is in use
};

enum class Misfit : uint8_t {
  kNone,
  kHeldWhole,     // a task holds the whole device
  kMigMode,       // MIG device and a share request, or a share device and a MIG request
  kMemory,        // not enough memory left on the device
  kUnknownMemory, // the node did not report the device's memory
  kCompute,       // not enough compute left
  kQos,           // its tenants use another sharing QoS
  kTenants,       // kMaxTenantsPerDevice reached
  kProfile,       // no MIG instance of that profile fits
  kNoMigTable,    // dynamic MIG on a model without a profile table
};
std::string_view MisfitText(Misfit misfit);

// "best-effort" when unset.
std::string EffectiveQos(const Resources& need);
// The share's memory on a device of `device_mib`: gpu_memory_mib, or the
// percentage of the device rounded up to whole MiB.
uint64_t ResolveShareMemory(const Resources& need, uint64_t device_mib);

// A share of `memory_mib` and `compute_pct` with `qos` on `gpu` given its load.
Misfit CheckShare(const GpuSlot& gpu, const DeviceLoad& load, uint64_t memory_mib, uint32_t compute_pct,
                  std::string_view qos);
void AddShare(DeviceLoad& load, uint64_t memory_mib, uint32_t compute_pct, std::string_view qos);
void RemoveShare(DeviceLoad& load, uint64_t memory_mib, uint32_t compute_pct);

// The MIG instance `need` (mig_profile: a name or "auto") gets on `gpu`:
// static MIG: a free instance of that profile (auto: the smallest that holds
// the request); dynamic: the best-fit profile of the model's table at the
// lowest start that fits next to the instances in use.
struct MigFit {
  Misfit misfit = Misfit::kNone;
  MigSlot instance;
  uint64_t memory_mib = 0;  // the instance's memory
};
MigFit CheckMig(const GpuSlot& gpu, const DeviceLoad& load, const Resources& need);
void AddMig(DeviceLoad& load, const MigSlot& instance);
// `destroy`: a dynamic instance goes away with its tenant; a static one stays.
void RemoveMig(DeviceLoad& load, const MigSlot& instance, bool destroy);

// What one grant holds on one device, added to (`add`) or taken from its
// load: its cores (node-wide core ids; those of other devices are skipped),
// its MIG instance (a dynamic one goes with its tenant) or its share. Each
// is one tenant. The one rule the scheduler's session, the simulator and the
// state machine apply grants by; a whole device held by one task is not a
// load (GpuSlot::allocated) and an empty grant changes nothing.
void ApplyGrant(DeviceLoad& load, const GpuSlot& gpu, const DeviceGrant& grant, bool add);

// Only MIG instances run on it: static MIG, or MIG mode on right now.
bool MigOnly(const GpuSlot& gpu);
// Whether sharing tenants (shares, MIG instances, cores) hold some of it,
// or it is a static MIG device (which never runs whole-GPU work).
bool HasTenants(const GpuSlot& gpu, const DeviceLoad& load);
// Whether the device may be held whole now.
bool WholeFree(const GpuSlot& gpu, const DeviceLoad& load);

}  // namespace gpool::topology
