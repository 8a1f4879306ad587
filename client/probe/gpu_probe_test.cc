#include "client/probe/gpu_probe.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

namespace gpool::probe {
namespace {

// A driver with `g_devices` devices whose memory is host memory.
struct FakeDriver {
  int devices = 2;
  int init_rc = 0;
  int fail_alloc_on_device = -1;  // cuMemAlloc fails on this device
  int current = -1;               // the device of the current context
  int contexts = 0;               // live contexts
  std::map<unsigned long long, void*> allocations;  // NOLINT(runtime/int)
  int pinned = 0;
  int copies = 0;
  double bus_mib_s = 0;  // > 0: a slow bus, every copy lasts at least bytes / this rate
};
FakeDriver* g_driver = nullptr;

int FakeInit(unsigned int) { return g_driver->init_rc; }
int FakeCount(int* count) {
  *count = g_driver->devices;
  return 0;
}
int FakeGet(int* device, int ordinal) {
  *device = ordinal;
  return 0;
}
int FakeName(char* name, int len, int device) {
  std::snprintf(name, static_cast<size_t>(len), "Fake GPU %d", device);
  return 0;
}
int FakeCtxCreate(CudaApi::Ctx* ctx, unsigned int, int device) {
  g_driver->current = device;
  ++g_driver->contexts;
  *ctx = g_driver;
  return 0;
}
int FakeCtxDestroy(CudaApi::Ctx) {
  --g_driver->contexts;
  return 0;
}
int FakeSync() { return 0; }
int FakeAlloc(CudaApi::DevPtr* ptr, size_t bytes) {
  if (g_driver->current == g_driver->fail_alloc_on_device) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  void* p = std::malloc(bytes);
  *ptr = reinterpret_cast<CudaApi::DevPtr>(p);
  g_driver->allocations[*ptr] = p;
  return 0;
}
int FakeFree(CudaApi::DevPtr ptr) {
  std::free(g_driver->allocations.at(ptr));
  g_driver->allocations.erase(ptr);
  return 0;
}
int FakeAllocHost(void** ptr, size_t bytes) {
  ++g_driver->pinned;
  *ptr = std::malloc(bytes);
  return 0;
}
int FakeFreeHost(void* ptr) {
  --g_driver->pinned;
  std::free(ptr);
  return 0;
}
// The fake's bus: a copy on a slow one sleeps for as long as the bytes take.
void Bus(size_t bytes) {
  if (g_driver->bus_mib_s <= 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(static_cast<double>(bytes) / (1 << 20) / g_driver->bus_mib_s));
}
int FakeHtoD(CudaApi::DevPtr dst, const void* src, size_t bytes) {
  ++g_driver->copies;
  Bus(bytes);
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return 0;
}
int FakeDtoH(void* dst, CudaApi::DevPtr src, size_t bytes) {
  ++g_driver->copies;
  Bus(bytes);
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return 0;
}

class GpuProbeTest : public ::testing::Test {
 protected:
  GpuProbeTest() {
    g_driver = &driver_;
    api_.cuInit = FakeInit;
    api_.cuDeviceGetCount = FakeCount;
    api_.cuDeviceGet = FakeGet;
    api_.cuDeviceGetName = FakeName;
    api_.cuCtxCreate = FakeCtxCreate;
    api_.cuCtxDestroy = FakeCtxDestroy;
    api_.cuCtxSynchronize = FakeSync;
    api_.cuMemAlloc = FakeAlloc;
    api_.cuMemFree = FakeFree;
    api_.cuMemAllocHost = FakeAllocHost;
    api_.cuMemFreeHost = FakeFreeHost;
    api_.cuMemcpyHtoD = FakeHtoD;
    api_.cuMemcpyDtoH = FakeDtoH;
  }
  ~GpuProbeTest() override { g_driver = nullptr; }

  FakeDriver driver_;
  CudaApi api_;
};

TEST_F(GpuProbeTest, OneLinePerDeviceAndEverythingFreed) {
  auto lines = RunGpuProbe(api_, {.bytes = 1 << 20, .rounds = 2});
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[1].device, 1);
  EXPECT_EQ((*lines)[1].name, "Fake GPU 1");
  EXPECT_GT((*lines)[0].h2d_mib_s, 0);
  EXPECT_GT((*lines)[0].d2h_mib_s, 0);
  // A warm-up and two timed copies each way, per device.
  EXPECT_EQ(driver_.copies, 2 * 2 * 3);
  EXPECT_EQ(driver_.contexts, 0);
  EXPECT_TRUE(driver_.allocations.empty());
  EXPECT_EQ(driver_.pinned, 0);
}

TEST_F(GpuProbeTest, WithoutPinnedMemoryItUsesOrdinaryMemory) {
  api_.cuMemAllocHost = nullptr;
  api_.cuMemFreeHost = nullptr;
  auto lines = RunGpuProbe(api_, {.bytes = 4096, .rounds = 1});
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  EXPECT_EQ(lines->size(), 2u);
}

TEST_F(GpuProbeTest, ASlowBusLowersTheRate) {
  auto fast = RunGpuProbe(api_, {.bytes = 1 << 20, .rounds = 3});
  driver_.bus_mib_s = 100;
  auto slow = RunGpuProbe(api_, {.bytes = 1 << 20, .rounds = 1});
  ASSERT_TRUE(fast.ok() && slow.ok());
  // Each copy on the slow bus lasts at least 1 MiB / 100 MiB/s, and the probe times the copy.
  EXPECT_LE((*slow)[0].h2d_mib_s, 100.0);
  EXPECT_LE((*slow)[0].d2h_mib_s, 100.0);
  EXPECT_LT((*slow)[0].h2d_mib_s, (*fast)[0].h2d_mib_s);
}

TEST_F(GpuProbeTest, DriverErrorsAreReportedAndNameTheDevice) {
  driver_.fail_alloc_on_device = 1;
  auto failed = RunGpuProbe(api_, {.bytes = 4096, .rounds = 1});
  EXPECT_EQ(failed.status().message(), "device 1: cuMemAlloc failed: CUDA error 2");
  EXPECT_EQ(driver_.contexts, 0);

  driver_.init_rc = 100;  // CUDA_ERROR_NO_DEVICE
  EXPECT_EQ(RunGpuProbe(api_, {}).status().code(), StatusCode::kFailedPrecondition);
  driver_.init_rc = 0;
  driver_.devices = 0;
  EXPECT_EQ(RunGpuProbe(api_, {}).status().message(), "no CUDA devices visible");
}

TEST(GpuDriverTest, NoDriverIsNotFound) {
  auto api = LoadCudaDriver("libgpool-no-such-driver.so.1");
  EXPECT_EQ(api.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(api.status().message(), "no CUDA driver");
}

}  // namespace
}  // namespace gpool::probe
