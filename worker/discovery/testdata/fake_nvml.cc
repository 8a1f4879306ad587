// A stand-in for libnvidia-ml.so.1 used by nvml_probe_test: four GPUs.
// GPUs 0 and 1 are linked directly; GPUs 2 and 3 each link to an NVSwitch
// (a PCI device that is not a GPU). Setting FAKE_NVML_INIT_FAIL makes
// nvmlInit_v2 fail like a machine without a driver.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr unsigned kCount = 4;
const char* const kBusIds[kCount] = {"00000000:3B:00.0", "00000000:3C:00.0", "00000000:5D:00.0", "00000000:5E:00.0"};
const char* const kSwitchBusId = "00000000:AA:00.0";

struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

unsigned IndexOf(void* device) { return static_cast<unsigned>(reinterpret_cast<unsigned long>(device) - 1); }

void FillPci(PciInfo* pci, const char* bus_id) {
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", bus_id);
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return std::getenv("FAKE_NVML_INIT_FAIL") != nullptr ? 9 : 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = kCount;
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= kCount) return 2;
  *device = reinterpret_cast<void*>(static_cast<unsigned long>(index) + 1);
  return 0;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  std::snprintf(name, length, "NVIDIA A100-SXM4-80GB %u", IndexOf(device) >= 2 ? 2u : 1u);
  return 0;
}

int nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
  std::snprintf(uuid, length, "GPU-fake-%u", IndexOf(device));
  return 0;
}

int nvmlDeviceGetMemoryInfo(void*, Memory* memory) {
  memory->total = 80ull * 1024 * 1024 * 1024;
  memory->free = memory->total;
  memory->used = 0;
  return 0;
}

int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* pci) {
  FillPci(pci, kBusIds[IndexOf(device)]);
  return 0;
}

int nvmlDeviceGetNvLinkState(void* device, unsigned int link, int* active) {
  if (link >= 12) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  const unsigned index = IndexOf(device);
  *active = (link == 0 || (index >= 2 && link == 1)) ? 1 : 0;
  return 0;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* device, unsigned int link, PciInfo* pci) {
  const unsigned index = IndexOf(device);
  if (index < 2) {
    FillPci(pci, kBusIds[1 - index]);
  } else {
    (void)link;
    FillPci(pci, kSwitchBusId);
  }
  return 0;
}

}  // extern "C"
