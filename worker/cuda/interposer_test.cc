// The interposer end to end: gpool-cuda-check processes load it as
// "libcuda.so.1" from a task's library directory, in front of the fake
// driver, with the task's environment.
#include <dlfcn.h>
#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "worker/cuda/cuda_test_support.h"
#include "worker/cuda/ledger.h"

namespace gpool::cuda {
namespace {

using testing::CudaTask;
using testing::kAsanAnyOrder;
using testing::kAsIfLinked;

constexpr const char* kLimit64 = "GPOOL_GPU_MEMORY_MIB=64";

class EveryAllocationPath : public ::testing::TestWithParam<const char*> {};

// The whole share fits, the smallest allocation more does not, without
// reaching the driver; a free gives the share back.
TEST_P(EveryAllocationPath, FillsTheShareRefusesMoreAndCreditsFrees) {
  CudaTask task;
  const std::string kind = GetParam();
  const auto r = task.Run({kLimit64, "ledger"}, {"alloc", kind, "64M", "0",  //
                                                 "alloc", kind, "16", "2",   // CUDA_ERROR_OUT_OF_MEMORY
                                                 "reached", "1",             // the refusal never reached the driver
                                                 "free", "0", "0",           //
                                                 "alloc", kind, "64M", "0",  //
                                                 "reached", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Kinds, EveryAllocationPath,
                         ::testing::Values("v2", "managed", "pitch", "create", "async", "async_ptsz", "pool", "array",
                                           "array3d", "mipmap"));

TEST(CudaInterposer, CountsToTheByte) {
  CudaTask task;
  const auto r = task.Run({kLimit64}, {"alloc", "v2", "67108863", "0", "alloc", "v2", "1", "0", "alloc", "v2", "1", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CudaInterposer, MemoryQueriesReportTheShare) {
  CudaTask task;
  const auto r = task.Run({kLimit64, "ledger"}, {"meminfo", "64M", "64M", "totalmem", "64M",  //
                                                 "alloc", "v2", "16M", "0", "meminfo", "48M", "64M"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A share larger than what the device has free reports the device's free.
TEST(CudaInterposer, MemInfoNeverReportsMoreThanTheDeviceHasFree) {
  CudaTask task;
  const auto r = task.Run({"GPOOL_GPU_MEMORY_MIB=1024", "FAKE_CUDA_TOTAL_MIB=100"},
                          {"meminfo", "100M", "100M", "totalmem", "100M"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CudaInterposer, WithoutLimitsNothingIsRefused) {
  CudaTask task;
  const auto r = task.Run({}, {"alloc", "v2", "1G", "0", "alloc", "create", "2G", "0", "meminfo", "77G", "80G",
                               "totalmem", "80G", "reached", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The driver's own refusal still comes through, and is not counted.
TEST(CudaInterposer, TheDriversOwnRefusalIsNotCounted) {
  CudaTask task;
  const auto r = task.Run({kLimit64, "FAKE_CUDA_TOTAL_MIB=32"},
                          {"alloc", "v2", "48M", "2", "reached", "1", "alloc", "v2", "32M", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The driver pads pitched rows more than the 512 bytes reserved first: the
// count is trued up, and an allocation that no longer fits is undone.
TEST(CudaInterposer, PitchedAllocationsCountTheDriversPitch) {
  CudaTask task;
  // 4352 + the 512-aligned estimate of the row fits 64 MiB; the 4096-aligned pitch does not.
  const auto r = task.Run({kLimit64, "FAKE_CUDA_PITCH_ALIGN=4096"},
                          {"alloc", "v2", "4352", "0", "alloc", "pitch", "67104168", "2", "reached", "2",
                           "meminfo", "67104512", "64M", "alloc", "pitch", "1M", "0", "meminfo", "66055936", "64M"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Each device has its own share; cuMemCreate counts where it places memory.
TEST(CudaInterposer, EachDeviceHasItsOwnShare) {
  CudaTask task;
  const auto r = task.Run({kLimit64, "ledger", "FAKE_CUDA_DEVICES=2"},
                          {"alloc", "v2", "64M", "0", "device", "1", "meminfo", "64M", "64M", "alloc", "v2", "48M", "0",
                           "alloc", "managed", "16M", "0", "alloc", "v2", "16", "2", "device", "0", "alloc", "v2", "16",
                           "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const LedgerTotals totals = ReadLedger(task.ledger().c_str());
  EXPECT_EQ(totals.used_bytes[0], 0u);  // the process has exited
}

// The fake's cuMemAllocAsync_ptsz calls cuMemAllocAsync by name, which in
// a program linked with -lcuda is the interposer's: the allocation still
// counts once.
TEST(CudaInterposer, ADriverCallingItselfIsCountedOnce) {
  CudaTask task;
  const auto r = task.Run({kLimit64, kAsIfLinked, kAsanAnyOrder},
                          {"alloc", "async_ptsz", "64M", "0", "meminfo", "0", "64M", "free", "0", "0", "meminfo", "64M",
                           "64M"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Loaded under another name (preloaded by path) with the real driver's
// folder on the library path, the interposer still answers
// dlopen("libcuda.so.1"): it carries the driver's SONAME and was loaded
// first.
TEST(CudaInterposer, AnswersDlopenByTheDriversSoname) {
  CudaTask task;
  const std::string fake_dir = std::filesystem::path(GPOOL_FAKE_CUDA_PATH).parent_path();
  const auto r = task.Run({kLimit64, kAsIfLinked, kAsanAnyOrder, "LD_LIBRARY_PATH=" + fake_dir},
                          {"alloc", "v2", "64M", "0", "alloc", "v2", "16", "2", "meminfo", "0", "64M"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CudaInterposer, ProcessesOfOneTaskShareTheLedger) {
  CudaTask task;
  auto a = task.Start({kLimit64, "ledger"}, {"alloc", "v2", "48M", "0", "hold"});
  ASSERT_NE(a.ReadUntil("held").find("held"), std::string::npos);
  const auto b = task.Run({kLimit64, "ledger"},
                          {"alloc", "v2", "32M", "2", "meminfo", "16M", "64M", "alloc", "v2", "16M", "0"});
  EXPECT_EQ(b.exit_code, 0) << b.output;
  const LedgerTotals totals = ReadLedger(task.ledger().c_str());
  EXPECT_TRUE(totals.ok);
  EXPECT_EQ(totals.processes, 1);  // b has exited: only a is live
  EXPECT_EQ(totals.used_bytes[0], 48ull << 20);
  EXPECT_EQ(a.Finish().exit_code, 0);
}

TEST(CudaInterposer, AnotherTasksLedgerIsNotShared) {
  CudaTask task;
  CudaTask other;
  auto a = task.Start({kLimit64, "ledger"}, {"alloc", "v2", "48M", "0", "hold"});
  ASSERT_NE(a.ReadUntil("held").find("held"), std::string::npos);
  const auto b = other.Run({kLimit64, "ledger"}, {"alloc", "v2", "64M", "0"});
  EXPECT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(a.Finish().exit_code, 0);
}

TEST(CudaInterposer, AProcessThatExitsWithoutFreeingIsReclaimed) {
  CudaTask task;
  const auto a = task.Run({kLimit64, "ledger"}, {"alloc", "v2", "48M", "0", "crash"});
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const auto b = task.Run({kLimit64, "ledger"}, {"meminfo", "64M", "64M", "alloc", "v2", "64M", "0"});
  EXPECT_EQ(b.exit_code, 0) << b.output;
}

TEST(CudaInterposer, AKilledProcessIsReclaimed) {
  CudaTask task;
  auto a = task.Start({kLimit64, "ledger"}, {"alloc", "v2", "48M", "0", "hold"});
  ASSERT_NE(a.ReadUntil("held").find("held"), std::string::npos);
  EXPECT_EQ(task.Run({kLimit64, "ledger"}, {"alloc", "v2", "32M", "2"}).exit_code, 0);
  a.Kill();
  const auto b = task.Run({kLimit64, "ledger"}, {"alloc", "v2", "64M", "0"});
  EXPECT_EQ(b.exit_code, 0) << b.output;
}

// Contexts, modules, libraries and streams (object_hooks.cc). The fake
// driver holds device memory for each at FAKE_CUDA_OBJECT_COSTS, and
// "objects TOLERANCE" compares the share's use as cuMemGetInfo reports it
// with what the driver holds, as NVML would count it.
constexpr const char* kExactCosts = "context=300M,module=2M,stream=1M";

// Estimates equal to the driver's costs: the share matches the driver to
// the byte through creation and destruction of every kind, and a primary
// context counts once however often it is retained.
TEST(CudaInterposerObjects, TheShareMatchesWhatTheDriverHolds) {
  CudaTask task;
  const auto r = task.Run(
      {"GPOOL_GPU_MEMORY_MIB=4096", "ledger", std::string("GPOOL_CUDA_OBJECT_COSTS=") + kExactCosts,
       std::string("FAKE_CUDA_OBJECT_COSTS=") + kExactCosts},
      {"objects", "0", "ctx", "0", "ctx", "0", "module", "0", "library", "0", "stream", "0", "stream", "0",  //
       "objects", "0", "meminfo", std::to_string(4096 - 3 * 300 - 2 * 2 - 2) + "M", "4096M",                //
       "device", "0", "objects", "0",                                                                     // a second retain
       "destroy", "ctx", "1", "0", "destroy", "module", "0", "0", "destroy", "library", "0", "0",         //
       "destroy", "stream", "0", "0", "objects", "0",                                                     //
       "release", "0", "0", "objects", "0", "release", "0", "0", "objects", "0",                          // the last release credits
       "meminfo", std::to_string(4096 - 300 - 1) + "M", "4096M"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// HAMi-core's lesson: contexts created in a loop take the share; the one
// that does not fit is refused without reaching the driver, and each
// destruction gives its estimate back (a create-destroy loop leaks nothing).
TEST(CudaInterposerObjects, RepeatedContextsAreRefusedPastTheShare) {
  CudaTask task;
  std::vector<std::string> steps = {"ctx", "0", "ctx", "0", "ctx", "2", "objectcalls", "3",  // primary + 2; the 3rd refused
                                    "alloc", "v2", "124M", "0", "alloc", "v2", "1", "2", "free", "0", "0"};
  for (int i = 0; i < 20; ++i) {
    const std::vector<std::string> again = {"destroy", "ctx", std::to_string(i + 1), "0", "ctx", "0"};
    steps.insert(steps.end(), again.begin(), again.end());
  }
  const std::vector<std::string> last = {"ctx", "2", "objects", "0", "meminfo", "124M", "1024M"};
  steps.insert(steps.end(), last.begin(), last.end());
  const auto r = task.Run({"GPOOL_GPU_MEMORY_MIB=1024", "ledger", std::string("GPOOL_CUDA_OBJECT_COSTS=") + kExactCosts,
                           std::string("FAKE_CUDA_OBJECT_COSTS=") + kExactCosts},
                          steps);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The process has exited: its objects with it.
  EXPECT_EQ(ReadLedger(task.ledger().c_str()).used_bytes[0], 0u);
}

// The documented estimates (object_costs.h) against a driver whose objects
// cost somewhat more: within the tolerance the worker's NVML check allows
// (the larger of 64 MiB and 5 % of the share).
TEST(CudaInterposerObjects, TheDefaultEstimatesAreWithinTheDocumentedTolerance) {
  CudaTask task;
  const std::string tolerance = std::to_string(std::max<std::uint64_t>(64, 8192 / 20)) + "M";
  const auto r = task.Run({"GPOOL_GPU_MEMORY_MIB=8192", "ledger", "GPOOL_CUDA_OBJECT_COSTS=default",
                           "FAKE_CUDA_OBJECT_COSTS=context=600M,module=4M,stream=2M"},
                          {"ctx", "0", "ctx", "0", "module", "0", "module", "0", "library", "0", "stream", "0",
                           "stream", "0", "stream", "0", "stream", "0", "objects", tolerance});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A setting the interposer cannot read charges the estimates, not nothing:
// a 256 MiB share cannot hold the default context estimate, so the
// program's first context is refused.
TEST(CudaInterposerObjects, AnUnreadableSettingChargesTheDefaults) {
  CudaTask task;
  const auto r = task.Run({"GPOOL_GPU_MEMORY_MIB=256", "ledger", "GPOOL_CUDA_OBJECT_COSTS=context=lots"}, {});
  EXPECT_EQ(r.exit_code, 2) << r.output;  // "no CUDA device": cuDevicePrimaryCtxRetain answered out of memory
  const auto unset = task.Run({"GPOOL_GPU_MEMORY_MIB=256", "ledger"}, {"objects", "0"});
  EXPECT_EQ(unset.exit_code, 0) << "unset: objects are not charged, and the fake holds none " << unset.output;
}

TEST(CudaInterposer, GetProcAddressAnswersInterposedEntryPoints) {
  CudaTask task;
  const auto r = task.Run({kLimit64}, {
                                          "procaddr", "cuMemAlloc", "12000", "0", "ours:cuMemAlloc_v2",
                                          "procaddr", "cuMemGetInfo", "12000", "0", "ours:cuMemGetInfo_v2",
                                          "procaddr", "cuDeviceTotalMem", "11000", "0", "ours:cuDeviceTotalMem_v2",
                                          "procaddr", "cuMemFree", "12000", "2", "ours:cuMemFree_v2",
                                          "procaddr", "cuMemCreate", "12000", "0", "ours:cuMemCreate",
                                          "procaddr", "cuLaunchKernel", "12000", "0", "ours:cuLaunchKernel",
                                          "procaddr", "cuLaunchKernel", "12000", "2", "ours:cuLaunchKernel_ptsz",
                                          "procaddr", "cuMemAllocAsync", "12000", "2", "ours:cuMemAllocAsync_ptsz",
                                          "procaddr", "cuGraphLaunch", "12000", "2", "ours:cuGraphLaunch_ptsz",
                                          "procaddr", "cuGetProcAddress", "12000", "0", "ours:cuGetProcAddress_v2",
                                          "procaddr", "cuGetProcAddress", "11030", "0", "ours:cuGetProcAddress",
                                          "procaddr", "cuCtxCreate", "12000", "0", "ours:cuCtxCreate_v2",
                                          "procaddr", "cuStreamDestroy", "12000", "0", "ours:cuStreamDestroy_v2",
                                          "procaddr", "cuDevicePrimaryCtxRelease", "12000", "0",
                                          "ours:cuDevicePrimaryCtxRelease_v2",
                                          "procaddr", "cuModuleLoadData", "12000", "0", "ours:cuModuleLoadData",
                                      });
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CudaInterposer, GetProcAddressAnswersTheRealDriverForTheRest) {
  CudaTask task;
  const auto r = task.Run({kLimit64}, {"procaddr", "cuDeviceGetName", "12000", "0", "real:cuDeviceGetName",
                                       "procaddr", "cuCtxGetDevice", "12000", "0", "real:cuCtxGetDevice",
                                       "procaddr", "cuEventRecord", "12000", "2", "real:cuEventRecord_ptsz"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CudaInterposer, OtherCallsPassThroughToTheDriver) {
  CudaTask task;
  const auto r = task.Run({kLimit64, "FAKE_CUDA_DEVICES=2"}, {"passthrough", "name", "gpool fake GPU 0", "missing"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The trampolines' first call goes through the resolving slow path: stack
// and vector-register arguments must reach the driver intact both times.
TEST(CudaInterposer, ForwardersPassEveryArgumentUntouched) {
  CudaTask task;
  const auto r = task.Run({kLimit64}, {"abi"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CudaInterposer, VectorAddThroughTheInterposer) {
  CudaTask task;
  const auto r = task.Run({kLimit64, "ledger", "GPOOL_GPU_COMPUTE_PCT=50", "GPOOL_SHARING_QOS=fixed-share"},
                          {"vecadd", "100000", "meminfo", "64M", "64M"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CudaInterposer, RefusalsAreLoggedWhereAsked) {
  CudaTask task;
  const std::string log = task.dir() + "/cuda.log";
  const auto r = task.Run({kLimit64, "GPOOL_CUDA_LOG=" + log}, {"alloc", "v2", "65M", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("event=loaded"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("event=refused call=cuMemAlloc_v2 device=0 bytes=68157440"), std::string::npos)
      << text.str();
}

// The interposer stands in for the whole driver: every name of both lists
// is exported, as a function.
TEST(CudaInterposer, ExportsEveryDriverApiName) {
  constexpr const char* kNames[] = {
#define GPOOL_CUDA_FORWARD(name) #name,
#define GPOOL_CUDA_INTERCEPT(name) #name,
#include "worker/cuda/driver_symbols.inc"
#include "worker/cuda/intercepted_symbols.inc"
#undef GPOOL_CUDA_FORWARD
#undef GPOOL_CUDA_INTERCEPT
  };
  setenv("GPOOL_CUDA_REAL_DRIVER", GPOOL_FAKE_CUDA_PATH, 1);
  void* shim = dlopen(GPOOL_CUDA_INTERPOSER_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(shim, nullptr) << dlerror();
  EXPECT_GT(sizeof(kNames) / sizeof(kNames[0]), 600u);
  for (const char* name : kNames) {
    void* p = dlsym(shim, name);
    ASSERT_NE(p, nullptr) << name;
    Dl_info info{};
    ASSERT_NE(dladdr(p, &info), 0) << name;
    EXPECT_STREQ(info.dli_sname, name);
  }
  // Nothing of gpool's own leaks out as an export.
  EXPECT_EQ(dlsym(shim, "gpool_cuda_forward_slots"), nullptr);
  EXPECT_EQ(dlsym(shim, "gpool_cuda_resolve_forward"), nullptr);
  dlclose(shim);
}

TEST(CudaInterposer, AMissingRealDriverFailsCallsWithoutCrashing) {
  CudaTask task;
  const auto r = task.Run({"GPOOL_CUDA_REAL_DRIVER=/nonexistent/libcuda.so.1"}, {});
  // cuInit answers CUDA_ERROR_NOT_FOUND through its forwarder: "no CUDA device", exit 2.
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace gpool::cuda
