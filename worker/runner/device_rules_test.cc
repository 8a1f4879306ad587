// Device rules (issue 31): which GPU nodes a task is denied, the v1 lines,
// and the v2 program, run here by a small interpreter of the instructions
// it uses so that its logic is checked without a kernel.
#include "worker/runner/device_rules.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

// Runs `prog` on a bpf_cgroup_dev_ctx; only the instructions
// V2DeviceProgram emits are understood (anything else fails the test).
int RunProgram(const std::vector<bpf_insn>& prog, bool block, uint32_t major_no, uint32_t minor_no) {
  const uint32_t ctx[3] = {static_cast<uint32_t>((BPF_DEVCG_ACC_READ << 16) | (block ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR)), major_no,
                           minor_no};
  uint64_t reg[11] = {};
  for (size_t pc = 0; pc < prog.size(); ++pc) {
    const bpf_insn& i = prog[pc];
    switch (i.code) {
      case BPF_LDX | BPF_MEM | BPF_W:
        EXPECT_EQ(i.src_reg, BPF_REG_1);
        reg[i.dst_reg] = ctx[i.off / 4];
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        reg[i.dst_reg] = static_cast<uint32_t>(reg[i.dst_reg]) & static_cast<uint32_t>(i.imm);
        break;
      case BPF_ALU64 | BPF_MOV | BPF_K:
        reg[i.dst_reg] = static_cast<uint64_t>(static_cast<int64_t>(i.imm));
        break;
      case BPF_JMP | BPF_JNE | BPF_K:
        if (reg[i.dst_reg] != static_cast<uint64_t>(static_cast<int64_t>(i.imm))) pc += i.off;
        break;
      case BPF_JMP | BPF_EXIT:
        return static_cast<int>(reg[0]);
      default:
        ADD_FAILURE() << "unexpected instruction code " << int(i.code) << " at " << pc;
        return -1;
    }
  }
  ADD_FAILURE() << "the program ran off its end";
  return -1;
}

TEST(DeviceRulesTest, TheProgramDeniesExactlyTheListedNodes) {
  const std::vector<DeviceRule> rules = {{.major = 195, .minor = 1}, {.major = 195, .minor = 3},
                                         {.block = true, .major = 8, .minor = 0}};
  const auto prog = V2DeviceProgram(rules);
  EXPECT_EQ(RunProgram(prog, false, 195, 1), 0) << "another task's GPU";
  EXPECT_EQ(RunProgram(prog, false, 195, 3), 0);
  EXPECT_EQ(RunProgram(prog, false, 195, 0), 1) << "the granted GPU";
  EXPECT_EQ(RunProgram(prog, false, 195, 255), 1) << "nvidiactl stays open";
  EXPECT_EQ(RunProgram(prog, false, 1, 3), 1) << "/dev/null";
  EXPECT_EQ(RunProgram(prog, true, 195, 1), 1) << "a block device of the same numbers is not the GPU";
  EXPECT_EQ(RunProgram(prog, true, 8, 0), 0);
  EXPECT_EQ(RunProgram(prog, false, 8, 0), 1);
  EXPECT_EQ(RunProgram(V2DeviceProgram({}), false, 195, 1), 1) << "no rules: everything the parent allows";
}

TEST(DeviceRulesTest, V1LinesNameEachDeniedNode) {
  EXPECT_EQ(V1DenyLines({{.major = 195, .minor = 1}, {.block = true, .major = 8, .minor = 16}}),
            (std::vector<std::string>{"c 195:1 rwm", "b 8:16 rwm"}));
}

TEST(DeviceRulesTest, PathsFromThePattern) {
  EXPECT_EQ(GpuDeviceNodePath("/dev/nvidia%u", 3), "/dev/nvidia3");
  EXPECT_EQ(GpuDeviceNodePath("/tmp/x/gpu%u-node", 12), "/tmp/x/gpu12-node");
  EXPECT_EQ(GpuDeviceNodePath("/dev/nvidia", 2), "/dev/nvidia2");
}

// The nodes a test makes itself (mknod needs root): every GPU not granted
// is denied by its real major:minor; a missing node or a plain file is not.
TEST(DeviceRulesTest, DenyRulesComeFromTheNodesOnDisk) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  testing::TempDir dir;
  ASSERT_EQ(mknod((dir.path() + "/gpu0").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  ASSERT_EQ(mknod((dir.path() + "/gpu1").c_str(), S_IFCHR | 0666, makedev(1, 8)), 0);
  ASSERT_EQ(mknod((dir.path() + "/gpu2").c_str(), S_IFCHR | 0666, makedev(240, 2)), 0);
  dir.Write("gpu3", "not a device");
  std::vector<GpuDeviceNode> gpus;
  for (uint32_t i = 0; i < 5; ++i) gpus.push_back({i, GpuDeviceNodePath(dir.path() + "/gpu%u", i)});
  EXPECT_EQ(DenyRulesFor(gpus, {0}),
            (std::vector<DeviceRule>{{.major = 1, .minor = 8}, {.major = 240, .minor = 2}}));
  EXPECT_EQ(DenyRulesFor(gpus, {1, 2}), (std::vector<DeviceRule>{{.major = 1, .minor = 7}}));
  EXPECT_TRUE(DenyRulesFor(gpus, {0, 1, 2}).empty());
  // Two GPUs that share a node (MIG-style): granted to one, never denied.
  gpus.push_back({5, dir.path() + "/gpu0"});
  EXPECT_EQ(DenyRulesFor(gpus, {5}), (std::vector<DeviceRule>{{.major = 1, .minor = 8}, {.major = 240, .minor = 2}}));
}

}  // namespace
}  // namespace gpool::worker
