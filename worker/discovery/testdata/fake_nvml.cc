// A stand-in for libnvidia-ml.so.1 used by nvml_probe_test: four GPUs.
// GPUs 0 and 1 are linked directly; GPUs 2 and 3 each link to an NVSwitch
// (a PCI device that is not a GPU). Setting FAKE_NVML_INIT_FAIL makes
// nvmlInit_v2 fail like a machine without a driver.
//
// MIG (left out when built with FAKE_NVML_OLD_DRIVER, like a driver before
// MIG): GPUs 0 and 1 are A100-80GB with MIG capability, off unless
// FAKE_NVML_MIG is set, which turns it on for GPU 0 with these MIG devices
// (slot: profile, GPU instance id, placement start):
//   0: 3g.40gb  GI 1   start 4
//   1: empty
//   2: 1g.10gb  GI 9   start 0
//   3: 1g.10gb  GI 10  start 1
//   4: a compute instance with 1 of GI 2's 2 slices (left out by the probe)
// GPUs 2 and 3 do not support MIG. FAKE_NVML_MIG_NO_PLACEMENT makes
// nvmlDeviceGetGpuInstanceById fail with NO_PERMISSION, as for non-root on
// some drivers; FAKE_NVML_MIG_NO_PROFILES makes the profile table
// unreadable. Whole GPUs report 108 SMs through nvmlDeviceGetAttributes_v2.
//
// Processes (nvmlDeviceGetComputeRunningProcesses{,_v2,_v3}; the old driver
// exports none of them unless built with FAKE_NVML_V1_PROCESSES, which adds
// the unsuffixed v1 one): FAKE_NVML_PROCESSES lists them, read at every
// call so a test may change it between samples, as comma-separated
// "<gpu>:<pid>:<bytes>" entries ("na" for bytes: NVML_VALUE_NOT_AVAILABLE).
// A call whose buffer is too small answers INSUFFICIENT_SIZE with the count
// needed, like NVML. FAKE_NVML_PROCESSES_RACE makes the sizing answer (no
// buffer) one short, as if a process started right after it, so the next
// call is too small again; FAKE_NVML_PROCESSES_ENDLESS makes every answer
// one more than the caller's buffer holds (a list that never fits);
// FAKE_NVML_PROCESSES_FAIL=<gpu> makes that GPU's query fail (UNKNOWN).
//
// Dynamic MIG (also left out of the old driver): FAKE_NVML_MIG_DYNAMIC
// turns MIG on for GPU 1 with no instances; nvmlDeviceCreateGpuInstance-
// WithPlacement, nvmlGpuInstanceCreateComputeInstance and the destroy calls
// change its layout, which nvmlDeviceGetGpuInstances, ...GetComputeInstances
// and the MIG device handles (uuid "MIG-fake-1-<GI id>") then report, as
// the probe's queries do. Placements follow A100's (3g spans 4 slices, 7g
// 8); one that overlaps an existing instance fails with
// INSUFFICIENT_RESOURCES. FAKE_NVML_MIG_NO_PERMISSION makes creation fail
// with NO_PERMISSION (not root). The layout is forgotten at the last
// nvmlShutdown.
//
// Health (worker/health/gpu_checks.h): FAKE_NVML_HEALTH_FILE names a file
// re-read at every health call, one fault per line:
//   xid <gpu> <code>        an XID event, delivered once through nvmlEventSetWait
//   ecc <gpu> <count>       volatile uncorrectable ECC errors
//   retired-pending <gpu>   retired pages pending
//   remap-pending <gpu>     row remap pending
//   remap-failure <gpu>     row remap failure
//   nvlink-down <gpu> <link>
//   lost <gpu>              every query of it fails with GPU_IS_LOST
//   temp <gpu> <celsius>
//   count <n>               nvmlDeviceGetCount reports n GPUs (fewer than 4: the rest fell off)
// Removing a line clears the fault (an XID already delivered stays delivered).
// Built with FAKE_NVML_OLD_DRIVER it lacks the event API and
// nvmlDeviceGetRemappedRows (drivers before R450/R460), which the health
// checks must do without.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

// The types and constants are the worker's own declarations of NVML's ABI,
// so the fake and the code under test cannot drift apart.
#include "worker/discovery/nvml_api.h"

namespace {

namespace nvml = gpool::worker::nvml;

constexpr unsigned kCount = 4;
const char* const kBusIds[kCount] = {"00000000:3B:00.0", "00000000:3C:00.0", "00000000:5D:00.0", "00000000:5E:00.0"};
const char* const kSwitchBusId = "00000000:AA:00.0";

unsigned IndexOf(void* device) { return static_cast<unsigned>(reinterpret_cast<unsigned long>(device) - 1); }

void FillPci(nvml::PciInfo* pci, const char* bus_id) {
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", bus_id);
}

#if !defined(FAKE_NVML_OLD_DRIVER) || defined(FAKE_NVML_V1_PROCESSES)
constexpr unsigned kMaxProcesses = 64;

struct FakeProcess {
  unsigned pid;
  unsigned long long bytes;
};

// The entries of FAKE_NVML_PROCESSES on `gpu`, at most kMaxProcesses.
unsigned ProcessesOn(unsigned gpu, FakeProcess* out) {
  const char* text = std::getenv("FAKE_NVML_PROCESSES");
  unsigned n = 0;
  while (text != nullptr && *text != '\0' && n < kMaxProcesses) {
    char* end = nullptr;
    const unsigned long entry_gpu = std::strtoul(text, &end, 10);
    if (*end != ':') break;
    const unsigned long pid = std::strtoul(end + 1, &end, 10);
    if (*end != ':') break;
    unsigned long long bytes = nvml::kValueNotAvailable;
    if (std::strncmp(end + 1, "na", 2) == 0) {
      end += 3;
    } else {
      bytes = std::strtoull(end + 1, &end, 10);
    }
    if (entry_gpu == gpu) out[n++] = {static_cast<unsigned>(pid), bytes};
    text = *end == ',' ? end + 1 : end;
  }
  return n;
}

template <typename Info>
int RunningProcesses(void* device, unsigned int* count, Info* infos) {
  const unsigned gpu = IndexOf(device);
  if (gpu >= kCount) return nvml::kErrorInvalidArgument;
  const char* fail = std::getenv("FAKE_NVML_PROCESSES_FAIL");
  if (fail != nullptr && std::strtoul(fail, nullptr, 10) == gpu) return nvml::kErrorUnknown;
  FakeProcess processes[kMaxProcesses];
  const unsigned n = ProcessesOn(gpu, processes);
  if (std::getenv("FAKE_NVML_PROCESSES_ENDLESS") != nullptr) {
    *count += 1;
    return nvml::kErrorInsufficientSize;
  }
  if (*count < n || infos == nullptr) {
    if (n == 0) {
      *count = 0;
      return 0;
    }
    const bool race = infos == nullptr && std::getenv("FAKE_NVML_PROCESSES_RACE") != nullptr && n > 1;
    *count = race ? n - 1 : n;
    return nvml::kErrorInsufficientSize;
  }
  for (unsigned i = 0; i < n; ++i) {
    std::memset(&infos[i], 0xff, sizeof(infos[i]));  // MIG ids: 0xFFFFFFFF, no MIG
    infos[i].pid = processes[i].pid;
    infos[i].usedGpuMemory = processes[i].bytes;
  }
  *count = n;
  return 0;
}
#endif

#ifndef FAKE_NVML_OLD_DRIVER
constexpr unsigned long kMigBase = 0x1000;  // MIG handles: kMigBase + slot (all on GPU 0)

// A100-80GB's GPU instance profiles by index (NVML_GPU_INSTANCE_PROFILE_*).
struct Profile {
  unsigned index, id, slices;
  unsigned long long memory_mb;
  unsigned media;  // decoders, JPEG and OFA engines
  const char* name;
};
constexpr Profile kProfiles[] = {
    {0, 19, 1, 9728, 0, "MIG 1g.10gb"},  {1, 14, 2, 19968, 1, "MIG 2g.20gb"}, {2, 9, 3, 40192, 2, "MIG 3g.40gb"},
    {3, 5, 4, 40192, 2, "MIG 4g.40gb"},  {4, 0, 7, 80896, 5, "MIG 7g.80gb"},  {6, 20, 1, 9728, 1, "MIG 1g.10gb+me"},
    {7, 15, 1, 19968, 1, "MIG 1g.20gb"},
};

struct MigSlot {
  bool present;
  unsigned gi_id, profile_id, start, slices, ci_slices;
  unsigned long long memory_mb;
  unsigned media;
};
constexpr MigSlot kMigSlots[] = {
    {true, 1, 9, 4, 3, 3, 40192, 2},  {false, 0, 0, 0, 0, 0, 0, 0},    {true, 9, 19, 0, 1, 1, 9728, 0},
    {true, 10, 19, 1, 1, 1, 9728, 0}, {true, 2, 14, 2, 2, 1, 19968, 1},
};
constexpr unsigned kMaxMig = 7;

bool MigOn() { return std::getenv("FAKE_NVML_MIG") != nullptr; }
bool IsMig(void* device) { return reinterpret_cast<unsigned long>(device) >= kMigBase; }
const MigSlot* SlotOf(void* device) {
  const unsigned long slot = reinterpret_cast<unsigned long>(device) - kMigBase;
  return slot < sizeof(kMigSlots) / sizeof(kMigSlots[0]) ? &kMigSlots[slot] : nullptr;
}
const MigSlot* SlotByGi(unsigned gi) {
  for (const MigSlot& s : kMigSlots) {
    if (s.present && s.gi_id == gi) return &s;
  }
  return nullptr;
}

// GPU 1's dynamic layout. Handles: GPU instances kDynGiBase + GI id, compute
// instances kDynCiBase + GI id, MIG devices kDynMigBase + slot.
constexpr unsigned long kDynMigBase = 0x2000;
constexpr unsigned long kDynGiBase = 0x3000;
constexpr unsigned long kDynCiBase = 0x4000;

struct DynInstance {
  bool used;
  unsigned gi_id, profile_id, start, size, slices;
  bool ci;
};
DynInstance g_dyn[kMaxMig];
unsigned g_next_gi = 1;
int g_inits = 0;

bool DynOn() { return std::getenv("FAKE_NVML_MIG_DYNAMIC") != nullptr; }
bool IsDynMig(void* device) {
  const unsigned long h = reinterpret_cast<unsigned long>(device);
  return h >= kDynMigBase && h < kDynMigBase + kMaxMig;
}
DynInstance& DynMig(void* device) { return g_dyn[reinterpret_cast<unsigned long>(device) - kDynMigBase]; }
DynInstance* DynByHandle(void* handle, unsigned long base) {
  const unsigned long gi = reinterpret_cast<unsigned long>(handle) - base;
  for (DynInstance& d : g_dyn) {
    if (d.used && d.gi_id == gi) return &d;
  }
  return nullptr;
}
const Profile* ProfileById(unsigned id) {
  for (const Profile& p : kProfiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}
// A100's placement size for a profile of `slices`.
unsigned PlacementSize(unsigned slices) { return slices == 3 ? 4 : slices == 7 ? 8 : slices; }
// Slices of A100's NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7}_SLICE (indices
// 0..4, ids alike): one compute instance profile per slice count.
constexpr unsigned kCiSlices[] = {1, 2, 3, 4, 7};
constexpr unsigned kCiProfiles = sizeof(kCiSlices) / sizeof(kCiSlices[0]);

// A MIG device's attributes: 14 SMs per compute instance slice.
void FillMigAttributes(nvml::DeviceAttributes* attributes, unsigned gi_slices, unsigned ci_slices,
                       unsigned long long memory_mb, unsigned media) {
  attributes->gpuInstanceSliceCount = gi_slices;
  attributes->computeInstanceSliceCount = ci_slices;
  attributes->multiprocessorCount = 14 * ci_slices;
  attributes->memorySizeMB = memory_mb;
  attributes->sharedDecoderCount = attributes->sharedJpegCount = attributes->sharedOfaCount = media;
}

// A GPU instance on GPU `gpu` (whose handle is gpu + 1).
void FillGpuInstanceInfo(nvml::GpuInstanceInfo* info, unsigned long gpu, unsigned gi_id, unsigned profile_id,
                         unsigned start, unsigned size) {
  info->device = reinterpret_cast<nvml::Device>(gpu + 1);
  info->id = gi_id;
  info->profileId = profile_id;
  info->placement.start = start;
  info->placement.size = size;
}
#endif

struct FakeHealth {
  unsigned long long ecc[kCount] = {};
  bool retired_pending[kCount] = {};
  bool remap_pending[kCount] = {};
  bool remap_failure[kCount] = {};
  bool lost[kCount] = {};
  unsigned temp[kCount] = {};
  bool nvlink_down[kCount][12] = {};
  unsigned xid_gpu[256] = {};
  unsigned long long xid_code[256] = {};
  unsigned xids = 0;
  unsigned count = kCount;
};

FakeHealth ReadHealth() {
  FakeHealth h;
  for (unsigned i = 0; i < kCount; ++i) h.temp[i] = 40;
  const char* path = std::getenv("FAKE_NVML_HEALTH_FILE");
  if (path == nullptr) return h;
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return h;
  char what[32];
  unsigned gpu = 0;
  unsigned long long value = 0;
  char line[128];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    const int n = std::sscanf(line, "%31s %u %llu", what, &gpu, &value);
    const std::string_view w(what);
    if (w == "count" && n == 2) {
      h.count = gpu < kCount ? gpu : kCount;
      continue;
    }
    if (n < 2 || gpu >= kCount) continue;
    if (w == "xid" && n == 3 && h.xids < 256) {
      h.xid_gpu[h.xids] = gpu;
      h.xid_code[h.xids++] = value;
    } else if (w == "ecc" && n == 3) {
      h.ecc[gpu] = value;
    } else if (w == "retired-pending") {
      h.retired_pending[gpu] = true;
    } else if (w == "remap-pending") {
      h.remap_pending[gpu] = true;
    } else if (w == "remap-failure") {
      h.remap_failure[gpu] = true;
    } else if (w == "lost") {
      h.lost[gpu] = true;
    } else if (w == "temp" && n == 3) {
      h.temp[gpu] = static_cast<unsigned>(value);
    } else if (w == "nvlink-down" && n == 3 && value < 12) {
      h.nvlink_down[gpu][value] = true;
    }
  }
  std::fclose(f);
  return h;
}

#ifndef FAKE_NVML_OLD_DRIVER
unsigned g_xids_delivered = 0;  // XID lines already handed out, in file order
#endif

bool Lost(void* device) { return IndexOf(device) < kCount && ReadHealth().lost[IndexOf(device)]; }

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (std::getenv("FAKE_NVML_INIT_FAIL") != nullptr) return nvml::kErrorDriverNotLoaded;
#ifndef FAKE_NVML_OLD_DRIVER
  ++g_inits;
#endif
  return 0;
}
int nvmlShutdown() {
#ifndef FAKE_NVML_OLD_DRIVER
  if (g_inits > 0 && --g_inits == 0) {
    std::memset(g_dyn, 0, sizeof(g_dyn));
    g_next_gi = 1;
    g_xids_delivered = 0;  // a new session reads the fault file from its start
  }
#endif
  return 0;
}
const char* nvmlErrorString(int rc) { return rc == nvml::kErrorDriverNotLoaded ? "Driver Not Loaded" : "Unknown Error"; }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = ReadHealth().count;
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= kCount) return nvml::kErrorInvalidArgument;
  if (ReadHealth().lost[index]) return nvml::kErrorGpuIsLost;
  *device = reinterpret_cast<void*>(static_cast<unsigned long>(index) + 1);
  return 0;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  std::snprintf(name, length, "NVIDIA A100-SXM4-80GB %u", IndexOf(device) >= 2 ? 2u : 1u);
  return 0;
}

int nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
#ifndef FAKE_NVML_OLD_DRIVER
  if (IsDynMig(device)) {
    std::snprintf(uuid, length, "MIG-fake-1-%u", DynMig(device).gi_id);
    return 0;
  }
  if (IsMig(device)) {
    std::snprintf(uuid, length, "MIG-fake-0-%lu", reinterpret_cast<unsigned long>(device) - kMigBase);
    return 0;
  }
#endif
  std::snprintf(uuid, length, "GPU-fake-%u", IndexOf(device));
  return 0;
}

// FAKE_NVML_UTILIZATION: "<gpu>:<percent busy>:<MiB used>,..." read at
// every call (metrics and utilisation alerts); GPUs not listed are idle.
bool Utilization(unsigned gpu, unsigned* percent, unsigned long long* used_mib) {
  const char* text = std::getenv("FAKE_NVML_UTILIZATION");
  for (const char* p = text; p != nullptr && *p != '\0';) {
    unsigned g = 0, u = 0;
    unsigned long long m = 0;
    if (std::sscanf(p, "%u:%u:%llu", &g, &u, &m) == 3 && g == gpu) {
      *percent = u;
      *used_mib = m;
      return true;
    }
    p = std::strchr(p, ',');
    if (p != nullptr) ++p;
  }
  return false;
}

int nvmlDeviceGetMemoryInfo(void* device, nvml::Memory* memory) {
  unsigned percent = 0;
  unsigned long long used_mib = 0;
  Utilization(IndexOf(device), &percent, &used_mib);
  memory->total = 80ull * 1024 * 1024 * 1024;
  memory->used = std::min(memory->total, used_mib * 1024 * 1024);
  memory->free = memory->total - memory->used;
  return 0;
}

int nvmlDeviceGetUtilizationRates(void* device, nvml::Utilization* rates) {
  if (Lost(device)) return nvml::kErrorGpuIsLost;
  unsigned percent = 0;
  unsigned long long used_mib = 0;
  Utilization(IndexOf(device), &percent, &used_mib);
  rates->gpu = percent;
  rates->memory = percent;
  return 0;
}

int nvmlDeviceGetPciInfo_v3(void* device, nvml::PciInfo* pci) {
  FillPci(pci, kBusIds[IndexOf(device)]);
  return 0;
}

int nvmlDeviceGetNvLinkState(void* device, unsigned int link, int* active) {
  if (link >= 12) return nvml::kErrorInvalidArgument;
  const unsigned index = IndexOf(device);
  const FakeHealth health = ReadHealth();
  if (index < kCount && health.lost[index]) return nvml::kErrorGpuIsLost;
  *active = (link == 0 || (index >= 2 && link == 1)) ? 1 : 0;
  if (index < kCount && health.nvlink_down[index][link]) *active = 0;
  return 0;
}

#ifndef FAKE_NVML_OLD_DRIVER
int nvmlEventSetCreate(void** set) {
  *set = reinterpret_cast<void*>(0x5e7);
  return 0;
}
int nvmlEventSetFree(void*) { return 0; }
int nvmlDeviceRegisterEvents(void* device, unsigned long long, void*) {
  return Lost(device) ? nvml::kErrorGpuIsLost : 0;
}
int nvmlEventSetWait_v2(void*, nvml::EventData* data, unsigned int) {
  const FakeHealth health = ReadHealth();
  if (g_xids_delivered >= health.xids) return nvml::kErrorTimeout;
  const unsigned i = g_xids_delivered++;
  std::memset(data, 0, sizeof(*data));
  data->device = reinterpret_cast<nvml::Device>(static_cast<unsigned long>(health.xid_gpu[i]) + 1);
  data->eventType = nvml::kEventTypeXidCriticalError;
  data->eventData = health.xid_code[i];
  return 0;
}
#endif
int nvmlDeviceGetTotalEccErrors(void* device, int, int, unsigned long long* count) {
  if (Lost(device)) return nvml::kErrorGpuIsLost;
  *count = ReadHealth().ecc[IndexOf(device)];
  return 0;
}
int nvmlDeviceGetRetiredPagesPendingStatus(void* device, int* pending) {
  if (Lost(device)) return nvml::kErrorGpuIsLost;
  *pending = ReadHealth().retired_pending[IndexOf(device)] ? 1 : 0;
  return 0;
}
#ifndef FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetRemappedRows(void* device, unsigned int* corrected, unsigned int* uncorrected, unsigned int* pending,
                              unsigned int* failure) {
  if (Lost(device)) return nvml::kErrorGpuIsLost;
  const FakeHealth health = ReadHealth();
  *corrected = 0;
  *uncorrected = 0;
  *pending = health.remap_pending[IndexOf(device)] ? 1 : 0;
  *failure = health.remap_failure[IndexOf(device)] ? 1 : 0;
  return 0;
}
#endif
int nvmlDeviceGetTemperature(void* device, unsigned int, unsigned int* temp) {
  if (Lost(device)) return nvml::kErrorGpuIsLost;
  *temp = ReadHealth().temp[IndexOf(device)];
  return 0;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* device, unsigned int link, nvml::PciInfo* pci) {
  const unsigned index = IndexOf(device);
  if (index < 2) {
    FillPci(pci, kBusIds[1 - index]);
  } else {
    (void)link;
    FillPci(pci, kSwitchBusId);
  }
  return 0;
}

#if !defined(FAKE_NVML_OLD_DRIVER) || defined(FAKE_NVML_V1_PROCESSES)
int nvmlDeviceGetComputeRunningProcesses(void* device, unsigned int* count, nvml::ProcessInfoV1* infos) {
  return RunningProcesses(device, count, infos);
}
#endif

#ifndef FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetComputeRunningProcesses_v2(void* device, unsigned int* count, nvml::ProcessInfoV2* infos) {
  return RunningProcesses(device, count, infos);
}

int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned int* count, nvml::ProcessInfoV2* infos) {
  return RunningProcesses(device, count, infos);
}

int nvmlDeviceGetMigMode(void* device, unsigned int* current, unsigned int* pending) {
  const unsigned index = IndexOf(device);
  if (index >= 2) return nvml::kErrorNotSupported;
  *current = *pending = ((index == 0 && MigOn()) || (index == 1 && DynOn())) ? 1 : 0;
  return 0;
}

int nvmlDeviceGetMaxMigDeviceCount(void* device, unsigned int* count) {
  *count = IndexOf(device) < 2 ? kMaxMig : 0;
  return 0;
}

int nvmlDeviceGetMigDeviceHandleByIndex(void* device, unsigned int index, void** mig) {
  if (IndexOf(device) == 1 && DynOn() && index < kMaxMig) {
    if (!g_dyn[index].used || !g_dyn[index].ci) return nvml::kErrorNotFound;
    *mig = reinterpret_cast<void*>(kDynMigBase + index);
    return 0;
  }
  if (IndexOf(device) != 0 || !MigOn() || index >= kMaxMig) return nvml::kErrorNotFound;
  const MigSlot* slot = SlotOf(reinterpret_cast<void*>(kMigBase + index));
  if (slot == nullptr || !slot->present) return nvml::kErrorNotFound;
  *mig = reinterpret_cast<void*>(kMigBase + index);
  return 0;
}

int nvmlDeviceGetAttributes_v2(void* device, nvml::DeviceAttributes* attributes) {
  std::memset(attributes, 0, sizeof(*attributes));
  if (!IsMig(device)) {
    attributes->multiprocessorCount = 108;
    return 0;
  }
  if (IsDynMig(device)) {
    const DynInstance& d = DynMig(device);
    const Profile* p = ProfileById(d.profile_id);
    FillMigAttributes(attributes, d.slices, d.slices, p->memory_mb, p->media);
    return 0;
  }
  const MigSlot* slot = SlotOf(device);
  FillMigAttributes(attributes, slot->slices, slot->ci_slices, slot->memory_mb, slot->media);
  return 0;
}

int nvmlDeviceGetGpuInstanceId(void* device, unsigned int* id) {
  if (!IsMig(device)) return nvml::kErrorNotSupported;
  if (IsDynMig(device)) {
    *id = DynMig(device).gi_id;
    return 0;
  }
  *id = SlotOf(device)->gi_id;
  return 0;
}

int nvmlDeviceGetGpuInstanceById(void* device, unsigned int id, void** instance) {
  if (std::getenv("FAKE_NVML_MIG_NO_PLACEMENT") != nullptr) return nvml::kErrorNoPermission;
  if (IndexOf(device) == 1) {
    void* handle = reinterpret_cast<void*>(kDynGiBase + id);
    if (!DynOn() || DynByHandle(handle, kDynGiBase) == nullptr) return nvml::kErrorNotFound;
    *instance = handle;
    return 0;
  }
  if (IndexOf(device) != 0 || SlotByGi(id) == nullptr) return nvml::kErrorNotFound;
  *instance = reinterpret_cast<void*>(static_cast<unsigned long>(id) + 1);
  return 0;
}

int nvmlGpuInstanceGetInfo(void* instance, nvml::GpuInstanceInfo* info) {
  if (reinterpret_cast<unsigned long>(instance) >= kDynGiBase) {
    const DynInstance* d = DynByHandle(instance, kDynGiBase);
    if (d == nullptr) return nvml::kErrorNotFound;
    FillGpuInstanceInfo(info, 1, d->gi_id, d->profile_id, d->start, d->size);
    return 0;
  }
  const MigSlot* slot = SlotByGi(static_cast<unsigned>(reinterpret_cast<unsigned long>(instance) - 1));
  if (slot == nullptr) return nvml::kErrorNotFound;
  FillGpuInstanceInfo(info, 0, slot->gi_id, slot->profile_id, slot->start, slot->slices);
  return 0;
}

int nvmlDeviceGetGpuInstanceProfileInfoV(void* device, unsigned int index, nvml::GpuInstanceProfileInfoV2* info) {
  if (std::getenv("FAKE_NVML_MIG_NO_PROFILES") != nullptr || IndexOf(device) >= 2) return nvml::kErrorNotSupported;
  if (info->version != nvml::kGpuInstanceProfileInfoV2) return nvml::kErrorArgumentVersionMismatch;
  for (const Profile& p : kProfiles) {
    if (p.index != index) continue;
    std::memset(info, 0, sizeof(*info));
    info->id = p.id;
    info->sliceCount = p.slices;
    info->memorySizeMB = p.memory_mb;
    info->decoderCount = info->jpegCount = info->ofaCount = p.media;
    std::snprintf(info->name, sizeof(info->name), "%s", p.name);
    return 0;
  }
  return nvml::kErrorInvalidArgument;  // no such profile on this GPU
}

int nvmlDeviceGetGpuInstancePossiblePlacements_v2(void* device, unsigned int profile_id, nvml::GpuInstancePlacement* out,
                                                  unsigned int* count) {
  const Profile* p = ProfileById(profile_id);
  if (IndexOf(device) != 1 || p == nullptr) return nvml::kErrorInvalidArgument;
  const unsigned size = PlacementSize(p->slices);
  unsigned n = 0;
  for (unsigned start = 0; start + size <= 8 && start < kMaxMig; start += size) {
    if (n < *count) out[n] = {start, size};
    ++n;
  }
  const bool fits = n <= *count;
  *count = n;
  return fits ? 0 : nvml::kErrorInsufficientSize;
}

int nvmlDeviceCreateGpuInstanceWithPlacement(void* device, unsigned int profile_id, const nvml::GpuInstancePlacement* placement,
                                             void** instance) {
  if (IndexOf(device) != 1 || !DynOn()) return nvml::kErrorNotSupported;
  if (std::getenv("FAKE_NVML_MIG_NO_PERMISSION") != nullptr) return nvml::kErrorNoPermission;
  const Profile* p = ProfileById(profile_id);
  if (p == nullptr || placement->size != PlacementSize(p->slices)) return nvml::kErrorInvalidArgument;
  for (const DynInstance& d : g_dyn) {
    if (d.used && placement->start < d.start + d.size && d.start < placement->start + placement->size) {
      return nvml::kErrorInsufficientResources;
    }
  }
  for (DynInstance& d : g_dyn) {
    if (d.used) continue;
    d = {true, g_next_gi++, profile_id, placement->start, placement->size, p->slices, false};
    *instance = reinterpret_cast<void*>(kDynGiBase + d.gi_id);
    return 0;
  }
  return nvml::kErrorInsufficientResources;
}

int nvmlDeviceGetGpuInstances(void* device, unsigned int profile_id, void** instances, unsigned int* count) {
  unsigned n = 0;
  if (IndexOf(device) == 1 && DynOn()) {
    for (const DynInstance& d : g_dyn) {
      if (d.used && d.profile_id == profile_id) instances[n++] = reinterpret_cast<void*>(kDynGiBase + d.gi_id);
    }
  }
  *count = n;
  return 0;
}

// The compute instance profiles of kCiSlices that fit the GPU instance.
int nvmlGpuInstanceGetComputeInstanceProfileInfo(void* instance, unsigned int profile, unsigned int,
                                                 nvml::ComputeInstanceProfileInfo* info) {
  const DynInstance* d = DynByHandle(instance, kDynGiBase);
  if (d == nullptr || profile >= kCiProfiles || kCiSlices[profile] > d->slices) return nvml::kErrorNotSupported;
  std::memset(info, 0, sizeof(*info));
  info->id = profile;
  info->sliceCount = kCiSlices[profile];
  info->instanceCount = d->slices / kCiSlices[profile];
  return 0;
}

int nvmlGpuInstanceCreateComputeInstance(void* instance, unsigned int profile_id, void** ci) {
  DynInstance* d = DynByHandle(instance, kDynGiBase);
  if (d == nullptr) return nvml::kErrorInvalidArgument;
  if (d->ci || profile_id >= kCiProfiles) return nvml::kErrorInsufficientResources;
  d->ci = true;
  *ci = reinterpret_cast<void*>(kDynCiBase + d->gi_id);
  return 0;
}

int nvmlGpuInstanceGetComputeInstances(void* instance, unsigned int profile_id, void** cis, unsigned int* count) {
  const DynInstance* d = DynByHandle(instance, kDynGiBase);
  if (d == nullptr) return nvml::kErrorInvalidArgument;
  *count = 0;
  if (d->ci && profile_id < kCiProfiles && kCiSlices[profile_id] == d->slices) {
    cis[0] = reinterpret_cast<void*>(kDynCiBase + d->gi_id);
    *count = 1;
  }
  return 0;
}

int nvmlComputeInstanceDestroy(void* ci) {
  DynInstance* d = DynByHandle(ci, kDynCiBase);
  if (d == nullptr || !d->ci) return nvml::kErrorInvalidArgument;
  d->ci = false;
  return 0;
}

int nvmlGpuInstanceDestroy(void* instance) {
  DynInstance* d = DynByHandle(instance, kDynGiBase);
  if (d == nullptr) return nvml::kErrorInvalidArgument;
  if (d->ci) return nvml::kErrorInUse;  // NVML: compute instances must go first
  d->used = false;
  return 0;
}
#endif

}  // extern "C"
