// VendorRules: the per-vendor device selection rules the scheduler applies
// inside one node, for accelerators whose interconnect or sharing model makes
// "any N free devices" wrong. Pure and deterministic: the standard library
// and protocol's PlacementPolicy only, no clocks, logging or I/O; ties always
// break on the lowest device index.
//
// The rules, and where they come from (names only; learned from, not copied):
//
// Ascend 910 (first generation, Atlas 800 training server; model "Ascend910",
//   "910A", "910ProB"): 8 chips in two HCCS rings, 0-3 and 4-7, that cannot
//   talk to each other. A task takes 1, 2, 4 or 8 chips; up to 4 stay inside
//   one ring and 8 takes both whole rings. Ring choice for 1 chip: the ring
//   with 1 free chip, then 3, 2, 4; for 2: 2, then 4, then 3; for 4: a wholly
//   free ring. [Huawei MindCluster "Ascend for Volcano" affinity rules and
//   resource allocation constraints; CANN distributed-training notes: "0-3 and
//   4-7 each form a network, 2 or 4 devices cannot span them".]
// Ascend 910B (Atlas A2): the 8-chip server (Atlas 800T A2) is one HCCS full
//   mesh, so any 1..8 chips work (CANN: "no limit on the count in one
//   server"); link groups the caller reports (HAMi's NetworkID) are only a
//   preference. The 16-chip A+X module server ("module-910B-16") has two HCCS
//   halves, 0-7 and 8-15: a task takes 1, 2, 4, 8 or 16, up to 8 inside one
//   half (best fit: the half with the fewest free chips that holds it), 16
//   takes the node. [MindCluster ascend-for-volcano module910bx8 /
//   module910bx16; HAMi ascend device.] Not modelled: the Atlas 200T A2 Box16
//   subrack, which also allows 3,5,6,7,10,12,14 with an even split.
// Ascend 910C (Atlas A3, e.g. Atlas 800T A3 / A200T A3 Box8 SuperPoD
//   servers): 16 dies, every two (2k, 2k+1) joined by SIO into one module. A
//   task takes 1 or an even count up to 16; an even count takes whole modules,
//   a single die goes to a module whose partner is already busy. [MindCluster
//   A3 affinity principles; HAMi ascend 910C module pairing, which rounds 1 up
//   to 2 where MindCluster allows 1.] Ascend shares (vNPU) are one chip per
//   task on every generation [HAMi: "vNPU not supported for multiple
//   devices"; MindCluster: a vNPU task requests exactly 1].
// Kunlunxin P800 (vXPU): 8 devices in two wings, 0-3 and 4-7. Whole-device
//   tasks take 1, 2, 4 or 8; wing choice for 1 device: the wing with 1
//   fitting device, then 3, 2, 4; for 2: 2, 3, 4; for 4: a wing with exactly
//   4; failing a wing, the cross-wing links 0-4, 1-5, 2-6, 3-7 (for 2) and the
//   sets 0145, 2367, 0246, 1357, 0347, 1256 (for 4). A share is a quarter or a
//   half device: memory is rounded up to 1/4 or 1/2 of the device (24576 or
//   49152 MiB on the 96 GiB P800), more than half is a whole device; a device
//   holds slices of one size only. Slices pack onto devices already split.
//   The driver has 32 handles per node: each device takes 1, and splitting a
//   device into k slices takes k more, so 8 devices cut in quarters (40) do
//   not fit while 6 do (32). [HAMi kunlun topo/vdevice code and the
//   "kunlun vXPU support" doc.]
// AWS Neuron, Trainium (trn1, trn2; 2D torus): devices are taken as aligned
//   contiguous blocks of 1, 4, 8 or 16 (or the whole node).
//   Inferentia (inf1, inf2; ring): any count of contiguous devices, never
//   wrapping; the shortest free run that holds it is used. Core requests
//   (NeuronCores; 2 per device on inf2/trn1, more on trn2 as the device
//   plugin reports): up to one device's worth is a contiguous run of free
//   cores on one device, packed onto partly used devices first; more must be
//   a whole multiple of a device and takes whole devices by the device rule.
//   Cores are numbered node-wide as device_index * cores + i. [AWS Neuron
//   "Neuron scheduler extension" doc; HAMi awsneuron device.]
// MetaX sGPU: a whole-device (exclusive) multi-device task takes devices of
//   one MetaLink zone if a zone holds it (the smallest such zone), else spans
//   zones smallest first, then devices without zone information. Its score is
//   10 x allocated - loss, where a pair of devices in the same zone is worth
//   10, "allocated" sums the pairs inside the pick, and "loss" is the pair
//   value the pick breaks: pairs among the free devices before, minus pairs
//   inside the pick, minus pairs among the free devices left. Zone <= 0 is
//   no zone. [HAMi metax sdevice prioritizeExclusiveDevices / score.go.]
// Enflame GCU (S60): a share is a percentage of one device that bounds both
//   compute and memory, rounded up to the device's slice granularity (100 /
//   slices; 1% when the plugin reports 100 or nothing); shares are for single-
//   device requests only, more devices are whole. [HAMi enflame device and
//   the "Enflame GCU sharing" doc.]
// Everything else (NVIDIA, AMD, ...) is kGeneric: no vendor rule here.
//
// The job's gpu_policy (VendorRequest::gpu_policy, HAMi's per-pod GPU
// policy) decides where a share goes and nothing else. default and binpack
// are the rules above: a share packs onto devices already shared (Kunlun:
// already split), so whole devices stay whole. spread gives a share the
// device with the most room left, so it contends the least:
//   - MetaX sGPU and Ascend vNPU shares: most memory left after the share,
//     then most compute left, then the lowest index;
//   - Enflame: least compute in use (a GCU share bounds compute and memory
//     together), then least memory, then the lowest index;
//   - Kunlun, a single-device slice: the least-split device that still takes
//     that slice size (fewest slices in use; an unsplit device first), then
//     among equals the wing order of a single whole device (1, 3, 2, 4 whole
//     devices left in the wing), then the lowest index. One slice size per
//     device and the 32-handle limit hold as under binpack: a device whose
//     split would pass the limit is skipped for the next.
// The policy does not apply to whole-device picks (Ascend rings, halves and
// modules, Kunlun wings and cross-wing links, Neuron torus blocks and ring
// runs, MetaX zones, Enflame whole GCUs), to Kunlun slices on several
// devices (which keep their wing rules) or to Neuron core requests: their
// topology decides, and a policy that broke a ring or a wing would make the
// device unusable for the next multi-device task.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/types.h"

namespace gpool::scheduler {

enum class DeviceFamily : uint8_t {
  kGeneric,       // NVIDIA, AMD and anything else: no vendor rule
  kAscend910,     // first-generation 910: two HCCS rings of 4
  kAscend910B,    // Atlas A2: 8-chip full mesh, or 16 chips in two halves
  kAscend910C,    // Atlas A3: SIO modules of 2 dies
  kKunlun,        // Kunlunxin P800 XPU / vXPU
  kNeuron,        // AWS Trainium (trn1, trn2): torus blocks 1/4/8/16
  kNeuronRing,    // AWS Inferentia (inf1, inf2): contiguous ring runs
  kMetax,         // MetaX sGPU with MetaLink zones
  kEnflame,       // Enflame GCU percentage shares
};

// From GpuInfo.vendor / model as node specs carry them, case-insensitive
// ("huawei"/"ascend" + "Ascend910B3", "kunlunxin" + "P800", "aws" + "trn2",
// "metax" + "C500", "enflame" + "S60").
DeviceFamily FamilyOf(std::string_view vendor, std::string_view model);
std::string_view FamilyName(DeviceFamily family);

// One device of a node as the scheduler sees it this cycle.
struct VendorDevice {
  size_t slot = 0;               // caller's position, returned in picks
  uint32_t index = 0;            // device index on the node
  int32_t link_group = -1;       // HCCS ring / Kunlun wing / MetaX zone; -1 unknown (derived from index)
  uint64_t memory_mib = 0;       // device memory
  uint64_t memory_used_mib = 0;  // held by shared tenants
  uint32_t compute_used_pct = 0; // held by shared tenants
  uint32_t tenants = 0;          // tasks sharing it (0: free for whole use, unless !free)
  uint32_t cores = 0;            // NeuronCores on the device (0: not core-addressable)
  std::vector<bool> cores_used;  // per core; shorter than `cores` means the rest are free
  uint32_t slices = 0;           // Enflame share granularity (slices per device); 0: 1% steps
  bool free = true;              // healthy and not held whole by anyone
};

struct VendorRequest {
  uint32_t count = 0;         // devices
  uint64_t memory_mib = 0;    // per device share (0: whole device unless memory_pct/compute_pct/cores)
  uint32_t memory_pct = 0;    // per device share as % of device memory
  uint32_t compute_pct = 0;   // per device share of compute, %
  uint32_t cores = 0;         // core-level request (Neuron): this many cores instead of devices
  uint32_t node_devices = 0;  // devices on the node (Ascend 8 vs 16 chips, Kunlun handles); 0: devices given
  uint32_t device_cores = 0;  // cores per device for static checks (Neuron); 0: unknown
  // The job's gpu_policy: where a share goes (spread: the device with the
  // most room left; see above). kDefault and kBinpack are today's packing.
  PlacementPolicy gpu_policy = PlacementPolicy::kDefault;
};

struct VendorPick {
  std::vector<size_t> slots;    // chosen devices (caller's slot values), by device index
  uint64_t memory_mib_each = 0; // resolved per-device memory (rounded to the vendor's sizes); 0: whole
  uint32_t share_pct = 0;       // resolved per-device compute share to charge; 0: whole
  std::vector<uint32_t> cores;  // Neuron core requests: node-wide core ids (device index * cores + i)
  int64_t score = 0;            // higher is better, to compare nodes (MetaX formula; else -leftover)
};

// Static validity of a request for a family, regardless of free state
// ("Ascend 910 takes 1, 2, 4 or 8 chips per task, not 3"); nullopt when fine.
std::optional<std::string> CheckVendorRequest(DeviceFamily family, const VendorRequest& request);

// The devices to use, or nullopt with `why` (may be null) set to a short
// reason naming the rule ("no free HCCS ring of 4"). kGeneric: nullopt, "no
// vendor rule". A whole-device pick needs devices with free && tenants == 0.
std::optional<VendorPick> PickVendorDevices(DeviceFamily family, const std::vector<VendorDevice>& devices,
                                            const VendorRequest& request, std::string* why);

}  // namespace gpool::scheduler
