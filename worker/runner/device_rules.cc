#include "worker/runner/device_rules.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gpool::worker {
namespace {

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn insn{};
  insn.code = code;
  insn.dst_reg = dst;
  insn.src_reg = src;
  insn.off = off;
  insn.imm = imm;
  return insn;
}

// BPF_DEVCG_DEV_CHAR / BPF_DEVCG_DEV_BLOCK, the low 16 bits of access_type.
int32_t DevType(bool block) { return block ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR; }

}  // namespace

std::string GpuDeviceNodePath(const std::string& pattern, uint32_t index) {
  const size_t at = pattern.find("%u");
  if (at == std::string::npos) return pattern + std::to_string(index);
  return pattern.substr(0, at) + std::to_string(index) + pattern.substr(at + 2);
}

std::vector<DeviceRule> DenyRulesForNodes(const std::vector<DeviceNodeAccess>& nodes) {
  std::vector<DeviceRule> allowed, denied;
  for (const DeviceNodeAccess& node : nodes) {
    struct stat st {};
    if (stat(node.path.c_str(), &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) continue;
    const DeviceRule rule{.block = S_ISBLK(st.st_mode), .major = major(st.st_rdev), .minor = minor(st.st_rdev)};
    (node.granted ? allowed : denied).push_back(rule);
  }
  std::erase_if(denied, [&](const DeviceRule& r) { return std::find(allowed.begin(), allowed.end(), r) != allowed.end(); });
  std::sort(denied.begin(), denied.end());
  denied.erase(std::unique(denied.begin(), denied.end()), denied.end());
  return denied;
}

std::vector<DeviceRule> DenyRulesFor(const std::vector<GpuDeviceNode>& gpus, const std::vector<uint32_t>& granted) {
  std::vector<DeviceNodeAccess> nodes;
  for (const GpuDeviceNode& gpu : gpus) {
    nodes.push_back({gpu.path, std::find(granted.begin(), granted.end(), gpu.index) != granted.end()});
  }
  return DenyRulesForNodes(nodes);
}

std::vector<std::string> V1DenyLines(const std::vector<DeviceRule>& rules) {
  std::vector<std::string> lines;
  for (const DeviceRule& r : rules) {
    lines.push_back(std::string(r.block ? "b " : "c ") + std::to_string(r.major) + ":" + std::to_string(r.minor) + " rwm");
  }
  return lines;
}

std::vector<bpf_insn> V2DeviceProgram(const std::vector<DeviceRule>& rules) {
  // r1 = struct bpf_cgroup_dev_ctx *: {u32 access_type; u32 major; u32 minor}
  std::vector<bpf_insn> prog;
  prog.push_back(Insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0));  // r2 = access_type
  prog.push_back(Insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff));     // r2 &= 0xffff: the type
  prog.push_back(Insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 4, 0));  // r3 = major
  prog.push_back(Insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 8, 0));  // r4 = minor
  for (const DeviceRule& r : rules) {
    // Each rule: three tests that skip past it on a mismatch, then deny.
    prog.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 4, DevType(r.block)));
    prog.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 3, static_cast<int32_t>(r.major)));
    prog.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 2, static_cast<int32_t>(r.minor)));
    prog.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0));
    prog.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  }
  prog.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1));
  prog.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  return prog;
}

Status AttachV2DeviceProgram(const std::string& cgroup_dir, const std::vector<bpf_insn>& program) {
  static const char kLicense[] = "Apache-2.0";
  char log[4096] = {};
  union bpf_attr load {};
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insns = reinterpret_cast<uint64_t>(program.data());
  load.insn_cnt = static_cast<uint32_t>(program.size());
  load.license = reinterpret_cast<uint64_t>(kLicense);
  load.log_buf = reinterpret_cast<uint64_t>(log);
  load.log_size = sizeof(log);
  load.log_level = 1;
  const int prog_fd = static_cast<int>(syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load)));
  if (prog_fd < 0) {
    return Status::Unavailable(std::string("cannot load the device program: ") + std::strerror(errno) +
                               (log[0] != 0 ? std::string(" (") + log + ")" : ""));
  }
  const int cgroup_fd = open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup_fd < 0) {
    const int err = errno;
    close(prog_fd);
    return Status::Unavailable("cannot open cgroup " + cgroup_dir + ": " + std::strerror(err));
  }
  union bpf_attr attach {};
  attach.target_fd = static_cast<uint32_t>(cgroup_fd);
  attach.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  const long r = syscall(SYS_bpf, BPF_PROG_ATTACH, &attach, sizeof(attach));
  const int err = errno;
  close(cgroup_fd);
  close(prog_fd);  // the attachment keeps the program
  if (r != 0) {
    return Status::Unavailable("cannot attach the device program to " + cgroup_dir + ": " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace gpool::worker
