#include "worker/runner/numa_apply.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "topology/cpulist.h"

namespace gpool::worker {
namespace {

// From <linux/mempolicy.h>; spelled out so no kernel header or libnuma is needed.
constexpr int kMpolPreferred = 1;
constexpr int kMpolBind = 2;
constexpr unsigned long kMpolFMemsAllowed = 1 << 2;

constexpr size_t kBitsPerWord = sizeof(unsigned long) * CHAR_BIT;
constexpr size_t kCpuSetBits = topology::kMaxCpuId + 1;

// The nodes this process may allocate from; empty when the kernel will not
// say (seccomp, no NUMA support), and then nothing is filtered.
std::vector<unsigned long> AllowedNodes() {
  std::vector<unsigned long> mask(PreparedPinning::kMaxNodes / kBitsPerWord, 0);
  int mode = 0;
  if (syscall(SYS_get_mempolicy, &mode, mask.data(), static_cast<unsigned long>(PreparedPinning::kMaxNodes),
              nullptr, kMpolFMemsAllowed) != 0) {
    return {};
  }
  return mask;
}

bool TestBit(const std::vector<unsigned long>& mask, size_t bit) {
  return (mask[bit / kBitsPerWord] >> (bit % kBitsPerWord)) & 1UL;
}

std::string JoinNodes(const std::vector<int32_t>& nodes) {
  std::string out;
  for (int32_t n : nodes) {
    if (!out.empty()) out += ',';
    out += std::to_string(n);
  }
  return out;
}

}  // namespace

PreparedPinning PreparedPinning::Prepare(const NumaPinning& pinning, std::vector<std::string>* notes) {
  PreparedPinning p;
  if (pinning.empty()) return p;

  cpu_set_t* allowed = CPU_ALLOC(kCpuSetBits);
  const size_t bytes = CPU_ALLOC_SIZE(kCpuSetBits);
  CPU_ZERO_S(bytes, allowed);
  const bool known = sched_getaffinity(0, bytes, allowed) == 0;
  std::vector<uint32_t> usable;
  for (uint32_t cpu : pinning.cpus) {
    if (cpu < kCpuSetBits && (!known || CPU_ISSET_S(cpu, bytes, allowed))) usable.push_back(cpu);
  }
  CPU_FREE(allowed);
  if (usable.empty()) {
    notes->push_back("none of the CPUs " + topology::FormatCpuList(pinning.cpus) + " of NUMA nodes " +
                     JoinNodes(pinning.nodes) +
                     " is usable on this machine (a simulated node spec?); the task is not pinned");
    return p;
  }
  if (usable.size() < pinning.cpus.size()) {
    notes->push_back("CPUs " + topology::FormatCpuList(pinning.cpus) + " of NUMA nodes " + JoinNodes(pinning.nodes) +
                     " are only partly usable here; pinning to " + topology::FormatCpuList(usable));
  }
  p.cpus_ = CPU_ALLOC(kCpuSetBits);
  p.cpus_bytes_ = bytes;
  CPU_ZERO_S(bytes, p.cpus_);
  for (uint32_t cpu : usable) CPU_SET_S(cpu, bytes, p.cpus_);
  p.cpu_list_ = topology::FormatCpuList(usable);

  const std::vector<unsigned long> mems = AllowedNodes();
  std::vector<int32_t> nodes;
  for (int32_t node : pinning.nodes) {
    if (node >= 0 && static_cast<uint32_t>(node) < kMaxNodes &&
        (mems.empty() || TestBit(mems, static_cast<size_t>(node)))) {
      nodes.push_back(node);
    }
  }
  if (nodes.empty()) {
    notes->push_back("NUMA nodes " + JoinNodes(pinning.nodes) +
                     " are not memory nodes this worker may use; no memory policy");
    return p;
  }
  if (!pinning.strict && nodes.size() > 1) return p;  // local allocation follows the CPUs (see header)
  p.mode_ = pinning.strict ? kMpolBind : kMpolPreferred;
  p.nodes_.assign(kMaxNodes / kBitsPerWord, 0);
  for (int32_t node : nodes) p.nodes_[node / kBitsPerWord] |= 1UL << (node % kBitsPerWord);
  p.node_list_ = JoinNodes(nodes);
  return p;
}

PreparedPinning::PreparedPinning(PreparedPinning&& other) noexcept
    : cpus_(std::exchange(other.cpus_, nullptr)),
      cpus_bytes_(other.cpus_bytes_),
      mode_(std::exchange(other.mode_, 0)),
      nodes_(std::move(other.nodes_)),
      cpu_list_(std::move(other.cpu_list_)),
      node_list_(std::move(other.node_list_)) {}

PreparedPinning::~PreparedPinning() {
  if (cpus_ != nullptr) CPU_FREE(cpus_);
}

int PreparedPinning::ApplyCpus() const {
  if (cpus_ == nullptr) return 0;
  return sched_setaffinity(0, cpus_bytes_, cpus_) == 0 ? 0 : errno;
}

int PreparedPinning::ApplyMemory() const {
  if (mode_ == 0) return 0;
  // maxnode counts one past the last bit the kernel reads.
  const long rc = syscall(SYS_set_mempolicy, mode_, nodes_.data(), static_cast<unsigned long>(kMaxNodes) + 1);
  return rc == 0 ? 0 : errno;
}

const char* PreparedPinning::mode_name() const {
  return mode_ == kMpolBind ? "bind" : mode_ == kMpolPreferred ? "preferred" : "none";
}

}  // namespace gpool::worker
