#include "worker/discovery/host_probe.h"

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(HostProbeTest, CountCpuList) {
  EXPECT_EQ(CountCpuList("0-3"), 4);
  EXPECT_EQ(CountCpuList("0-3,8,10-11\n"), 7);
  EXPECT_EQ(CountCpuList("5"), 1);
  EXPECT_EQ(CountCpuList(""), 0);
  EXPECT_EQ(CountCpuList("3-1"), -1);
  EXPECT_EQ(CountCpuList("a-b"), -1);
}

TEST(HostProbeTest, ReadsFakeTree) {
  testing::TempDir root;
  root.Write("sys/devices/system/cpu/online", "0-63\n");
  root.Write("proc/meminfo", "MemTotal:       131891436 kB\nMemFree:        1 kB\n");
  root.Write("sys/devices/system/node/node0/cpulist", "0-31\n");
  root.Write("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       65945718 kB\n");
  root.Write("sys/devices/system/node/node1/cpulist", "32-47,96-111\n");
  root.Write("sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:       65945718 kB\n");
  root.Write("sys/devices/system/node/possible", "0-1\n");  // not a node directory
  root.Write("sys/class/net/ib0/device/vendor", "0x15b3\n");
  root.Write("sys/class/net/ib0/speed", "200000\n");
  root.Write("sys/class/net/lo/speed", "0\n");  // no device link: virtual
  HostProbeOptions options;
  options.proc_root = root.path() + "/proc";
  options.sys_root = root.path() + "/sys";
  auto host = ProbeHost(options);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ(host->cpu_milli, 64000u);
  EXPECT_EQ(host->memory_mib, 131891436u / 1024);
  ASSERT_EQ(host->numa.size(), 2u);
  EXPECT_EQ(host->numa[0].id, 0);
  EXPECT_EQ(host->numa[1].id, 1);
  EXPECT_EQ(host->numa[1].cpu_milli, 32000u);
  EXPECT_EQ(host->numa[0].cpus, "0-31");
  EXPECT_EQ(host->numa[1].cpus, "32-47,96-111");
  EXPECT_EQ(host->numa[1].memory_mib, 65945718u / 1024);
  ASSERT_EQ(host->nics.size(), 1u);
  EXPECT_EQ(host->nics[0].name, "ib0");
  EXPECT_EQ(host->nics[0].speed_gbps, 200u);
  EXPECT_FALSE(host->hostname.empty());
}

TEST(HostProbeTest, NumaNodeWithoutCpusOrWithABadListHasNoCpus) {
  testing::TempDir root;
  root.Write("sys/devices/system/cpu/online", "0-3\n");
  root.Write("proc/meminfo", "MemTotal:       1048576 kB\n");
  root.Write("sys/devices/system/node/node0/cpulist", "0-3\n");
  root.Write("sys/devices/system/node/node1/cpulist", "\n");  // memory-only node (CXL, HBM)
  root.Write("sys/devices/system/node/node2/cpulist", "3-1\n");
  HostProbeOptions options;
  options.proc_root = root.path() + "/proc";
  options.sys_root = root.path() + "/sys";
  auto host = ProbeHost(options);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  ASSERT_EQ(host->numa.size(), 3u);
  EXPECT_EQ(host->numa[0].cpus, "0-3");
  EXPECT_EQ(host->numa[1].cpus, "");
  EXPECT_EQ(host->numa[2].cpus, "");
}

TEST(HostProbeTest, MissingMeminfoIsAnError) {
  testing::TempDir root;
  HostProbeOptions options;
  options.proc_root = root.path() + "/proc";
  options.sys_root = root.path() + "/sys";
  EXPECT_EQ(ProbeHost(options).status().code(), StatusCode::kIoError);
}

TEST(HostProbeTest, RealHostHasCpusAndMemory) {
  auto host = ProbeHost();
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_GT(host->cpu_milli, 0u);
  EXPECT_GT(host->memory_mib, 0u);
}

}  // namespace
}  // namespace gpool::worker
