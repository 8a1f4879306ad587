// XidCatalogue: what an NVIDIA XID means for the hardware it was raised on.
//
// NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors, "Analyzing Xid
// Errors with the Xid Catalog") gives every XID an immediate-action
// "resolution bucket": restart the application, reset the GPU, reboot the
// node, or contact support / ignore. The health policy (policy.h) needs only
// the coarse answer: does this XID say the *device* is bad (fence it), or
// that a *program* misbehaved (record it, never fence)? This class holds the
// default table for the codes data-centre GPUs (Ampere and newer) raise in
// practice, and an operator's overrides from the config (policy_config.h).
//
// A pure value type: immutable after construction, safe to share between
// threads.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpool::health {

enum class XidClass : uint8_t {
  // Not in the table: recorded, never fences (a new driver's new code waits
  // for an operator to classify it with an override).
  kInformational,
  // A program's fault (bad memory access, a killed or preempted channel):
  // recorded, never fences hardware, whatever severity the worker gave it.
  kApplication,
  // The catalogue's RESET_GPU bucket: the device is unusable until reset.
  kResetGpu,
  // The catalogue's reboot bucket (RESTART_BM / RESTART_VM): the node must
  // be rebooted (a GPU fallen off the bus).
  kRebootNode,
  // Made fatal by the operator's `fatal` override list.
  kFatalOther,
};
std::string_view ToString(XidClass c);

// True for the classes that mark a device unhealthy: reset-gpu, reboot-node,
// fatal-other.
constexpr bool Fences(XidClass c) {
  return c == XidClass::kResetGpu || c == XidClass::kRebootNode || c == XidClass::kFatalOther;
}

// The operator's lists (policy_config.h, [health.xid]). A code may be in at
// most one list (the config parser refuses one in both).
struct XidOverrides {
  std::vector<int32_t> application;  // treated as application errors
  std::vector<int32_t> fatal;        // treated as fatal (reset/reboot kept if the table says so)
  bool operator==(const XidOverrides&) const = default;
};

class XidCatalogue {
 public:
  // The default table, no overrides.
  XidCatalogue();
  explicit XidCatalogue(const XidOverrides& overrides);

  // The class of `xid`. `remap_pending`: the same GPU has page retirement or
  // row remapping pending (conditions retired-pages-pending,
  // row-remap-pending, row-remap-failure). XIDs 63 and 64 (a page retired /
  // a row remapped, or the recording of it failed) need a reset only then:
  // without a pending remap they are informational. An override is
  // unconditional.
  XidClass Classify(int32_t xid, bool remap_pending) const;

  // The codes of the default table in each class, for docs and tests.
  static std::vector<int32_t> DefaultCodes(XidClass c);

 private:
  std::unordered_map<int32_t, XidClass> overrides_;
};

}  // namespace gpool::health
