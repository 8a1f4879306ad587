#include "worker/discovery/nvml_probe.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace gpool::worker {
namespace {

// The few NVML declarations we need (from nvml.h; the ABI is stable).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;
constexpr unsigned kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS in recent drivers

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using GetCountFn = nvmlReturn_t (*)(unsigned int*);
using GetHandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using GetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using GetMemoryFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using GetPciFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using GetLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, int*);
using GetRemotePciFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);

// Closes the library on every return path.
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  template <typename Fn>
  Fn Symbol(const char* name) const {
    return reinterpret_cast<Fn>(dlsym(handle_, name));
  }

 private:
  void* handle_;
};

// NVML bus ids look like "00000000:3B:00.0"; sysfs names the device
// "0000:3b:00.0" (four-digit domain, lower case).
std::string SysfsBusId(const nvmlPciInfo_t& pci) {
  std::string id(pci.busId, strnlen(pci.busId, sizeof(pci.busId)));
  if (id.empty()) id.assign(pci.busIdLegacy, strnlen(pci.busIdLegacy, sizeof(pci.busIdLegacy)));
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id.erase(0, colon - 4);
  return id;
}

int32_t ReadNumaNode(const std::string& sys_root, const std::string& bus_id) {
  std::ifstream in(sys_root + "/bus/pci/devices/" + bus_id + "/numa_node");
  int value = -1;
  if (!(in >> value) || value < 0) return -1;
  return value;
}

std::string CString(const char* buffer, size_t size) { return std::string(buffer, strnlen(buffer, size)); }

}  // namespace

Result<std::vector<GpuInfo>> ProbeNvmlGpus(const NvmlProbeOptions& options) {
  dlerror();
  void* handle = dlopen(options.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return Status::NotFound("NVML library " + options.library + " not loadable: " + (err ? err : "unknown error"));
  }
  Library lib(handle);
  auto init = lib.Symbol<InitFn>("nvmlInit_v2");
  auto shutdown = lib.Symbol<ShutdownFn>("nvmlShutdown");
  auto get_count = lib.Symbol<GetCountFn>("nvmlDeviceGetCount_v2");
  auto get_handle = lib.Symbol<GetHandleFn>("nvmlDeviceGetHandleByIndex_v2");
  if (init == nullptr || shutdown == nullptr || get_count == nullptr || get_handle == nullptr) {
    return Status::Unavailable("NVML library " + options.library + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2");
  }
  auto error_string = lib.Symbol<ErrorStringFn>("nvmlErrorString");
  auto describe = [&](nvmlReturn_t rc) {
    const char* text = error_string != nullptr ? error_string(rc) : nullptr;
    return std::string(text != nullptr ? text : "NVML error") + " (" + std::to_string(rc) + ")";
  };
  auto get_name = lib.Symbol<GetStringFn>("nvmlDeviceGetName");
  auto get_uuid = lib.Symbol<GetStringFn>("nvmlDeviceGetUUID");
  auto get_memory = lib.Symbol<GetMemoryFn>("nvmlDeviceGetMemoryInfo");
  auto get_pci = lib.Symbol<GetPciFn>("nvmlDeviceGetPciInfo_v3");
  auto get_link_state = lib.Symbol<GetLinkStateFn>("nvmlDeviceGetNvLinkState");
  auto get_remote_pci = lib.Symbol<GetRemotePciFn>("nvmlDeviceGetNvLinkRemotePciInfo_v2");

  nvmlReturn_t rc = init();
  if (rc != kNvmlSuccess) return Status::Unavailable("nvmlInit failed: " + describe(rc));

  std::vector<GpuInfo> gpus;
  Status status;
  unsigned int count = 0;
  rc = get_count(&count);
  if (rc != kNvmlSuccess) status = Status::Unavailable("nvmlDeviceGetCount failed: " + describe(rc));
  count = std::min(count, 1024u);

  std::vector<nvmlDevice_t> devices;
  std::vector<std::string> bus_ids;
  for (unsigned int i = 0; status.ok() && i < count; ++i) {
    nvmlDevice_t device = nullptr;
    rc = get_handle(i, &device);
    if (rc != kNvmlSuccess) {
      status = Status::Unavailable("nvmlDeviceGetHandleByIndex(" + std::to_string(i) + ") failed: " + describe(rc));
      break;
    }
    GpuInfo gpu;
    gpu.index = i;
    gpu.vendor = "nvidia";
    char buffer[128] = {};
    if (get_uuid != nullptr && get_uuid(device, buffer, sizeof(buffer)) == kNvmlSuccess) {
      gpu.uuid = CString(buffer, sizeof(buffer));
    }
    if (gpu.uuid.empty()) gpu.uuid = "GPU-index-" + std::to_string(i);
    char name[128] = {};
    if (get_name != nullptr && get_name(device, name, sizeof(name)) == kNvmlSuccess) {
      gpu.model = CString(name, sizeof(name));
      // Model names carry spaces ("NVIDIA A100-SXM4-80GB"); labels and
      // selectors want one token.
      std::replace(gpu.model.begin(), gpu.model.end(), ' ', '-');
    }
    nvmlMemory_t memory{};
    if (get_memory != nullptr && get_memory(device, &memory) == kNvmlSuccess) {
      gpu.memory_mib = memory.total / (1024 * 1024);
    }
    std::string bus_id;
    nvmlPciInfo_t pci{};
    if (get_pci != nullptr && get_pci(device, &pci) == kNvmlSuccess) {
      bus_id = SysfsBusId(pci);
      gpu.numa = ReadNumaNode(options.sys_root, bus_id);
    }
    devices.push_back(device);
    bus_ids.push_back(bus_id);
    gpus.push_back(std::move(gpu));
  }

  // NVLink peers, best effort.
  if (status.ok() && get_link_state != nullptr && get_remote_pci != nullptr) {
    std::map<std::string, uint32_t> gpu_by_bus;
    for (size_t i = 0; i < bus_ids.size(); ++i) {
      if (!bus_ids[i].empty()) gpu_by_bus[bus_ids[i]] = static_cast<uint32_t>(i);
    }
    std::set<uint32_t> on_switch;
    for (size_t i = 0; i < devices.size(); ++i) {
      std::set<uint32_t> peers;
      for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
        int active = 0;
        if (get_link_state(devices[i], link, &active) != kNvmlSuccess) continue;
        if (active != kNvmlFeatureEnabled) continue;
        nvmlPciInfo_t remote{};
        if (get_remote_pci(devices[i], link, &remote) != kNvmlSuccess) continue;
        auto it = gpu_by_bus.find(SysfsBusId(remote));
        if (it != gpu_by_bus.end()) {
          if (it->second != i) peers.insert(it->second);
        } else {
          on_switch.insert(static_cast<uint32_t>(i));
        }
      }
      gpus[i].nvlink_peers.assign(peers.begin(), peers.end());
    }
    for (uint32_t i : on_switch) {
      std::set<uint32_t> peers(gpus[i].nvlink_peers.begin(), gpus[i].nvlink_peers.end());
      for (uint32_t j : on_switch) {
        if (j != i) peers.insert(j);
      }
      gpus[i].nvlink_peers.assign(peers.begin(), peers.end());
    }
  }

  shutdown();
  if (!status.ok()) return status;
  return gpus;
}

}  // namespace gpool::worker
