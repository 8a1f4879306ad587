#include "worker/discovery/nvml_probe.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "worker/discovery/nvml_api.h"
#include "worker/discovery/nvml_library.h"
#include "worker/discovery/nvml_mig.h"

namespace gpool::worker {
namespace {

using nvml::Device;
using nvml::PciInfo;

// NVML bus ids look like "00000000:3B:00.0"; sysfs names the device
// "0000:3b:00.0" (four-digit domain, lower case).
std::string SysfsBusId(const PciInfo& pci) {
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
  auto opened = NvmlLibrary::Open(options.library);
  if (!opened.ok()) return opened.status();
  const NvmlLibrary& lib = **opened;
  auto describe = [&](nvml::Return rc) { return lib.Describe(rc); };
  auto get_count = lib.get_count();
  auto get_handle = lib.get_handle();
  auto get_name = lib.Symbol<nvml::GetStringFn>("nvmlDeviceGetName");
  auto get_memory = lib.Symbol<nvml::GetMemoryFn>("nvmlDeviceGetMemoryInfo");
  auto get_pci = lib.Symbol<nvml::GetPciFn>("nvmlDeviceGetPciInfo_v3");
  auto get_link_state = lib.Symbol<nvml::GetLinkStateFn>("nvmlDeviceGetNvLinkState");
  auto get_remote_pci = lib.Symbol<nvml::GetRemotePciFn>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  const nvml::MigApi mig = lib.ResolveMigApi();
  const auto get_uuid = mig.get_uuid;

  std::vector<GpuInfo> gpus;
  Status status;
  unsigned int count = 0;
  nvml::Return rc = get_count(&count);
  if (rc != nvml::kSuccess) status = Status::Unavailable("nvmlDeviceGetCount failed: " + describe(rc));
  count = std::min(count, 1024u);

  std::vector<Device> devices;
  std::vector<std::string> bus_ids;
  for (unsigned int i = 0; status.ok() && i < count; ++i) {
    Device device = nullptr;
    rc = get_handle(i, &device);
    if (rc != nvml::kSuccess) {
      status = Status::Unavailable("nvmlDeviceGetHandleByIndex(" + std::to_string(i) + ") failed: " + describe(rc));
      break;
    }
    GpuInfo gpu;
    gpu.index = i;
    gpu.vendor = "nvidia";
    char buffer[128] = {};
    if (get_uuid != nullptr && get_uuid(device, buffer, sizeof(buffer)) == nvml::kSuccess) {
      gpu.uuid = CString(buffer, sizeof(buffer));
    }
    if (gpu.uuid.empty()) gpu.uuid = "GPU-index-" + std::to_string(i);
    char name[128] = {};
    if (get_name != nullptr && get_name(device, name, sizeof(name)) == nvml::kSuccess) {
      gpu.model = CString(name, sizeof(name));
      // Model names carry spaces ("NVIDIA A100-SXM4-80GB"); labels and
      // selectors want one token.
      std::replace(gpu.model.begin(), gpu.model.end(), ' ', '-');
    }
    nvml::Memory memory{};
    if (get_memory != nullptr && get_memory(device, &memory) == nvml::kSuccess) {
      gpu.memory_mib = memory.total / (1024 * 1024);
    }
    std::string bus_id;
    PciInfo pci{};
    if (get_pci != nullptr && get_pci(device, &pci) == nvml::kSuccess) {
      bus_id = SysfsBusId(pci);
      gpu.numa = ReadNumaNode(options.sys_root, bus_id);
    }
    // SMs, when the driver reports attributes for a whole GPU (many do only
    // for MIG devices). nvmlDeviceGetNumGpuCores counts CUDA cores, not SMs.
    nvml::DeviceAttributes attributes{};
    if (mig.get_attributes != nullptr && mig.get_attributes(device, &attributes) == nvml::kSuccess) {
      gpu.compute_units = attributes.multiprocessorCount;
    }
    ProbeMig(mig, device, &gpu);
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
      for (unsigned link = 0; link < nvml::kMaxLinks; ++link) {
        int active = 0;
        if (get_link_state(devices[i], link, &active) != nvml::kSuccess) continue;
        if (active != nvml::kFeatureEnabled) continue;
        PciInfo remote{};
        if (get_remote_pci(devices[i], link, &remote) != nvml::kSuccess) continue;
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

  if (!status.ok()) return status;
  return gpus;
}

}  // namespace gpool::worker
