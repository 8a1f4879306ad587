// Discovery of non-NVIDIA accelerators through their vendors' tools (issue
// 50): each family's tool (vendor/vendor_profile.h) is run in table order
// and its output parsed (vendor_smi.h); the first family whose tool lists
// devices is the node's. A tool that is not installed, fails or lists no
// device is skipped (its reason goes into the NotFound); one that runs but
// prints what its parser cannot read is an error, never a half-read node.
//
// Tools run through a VendorToolRunner, so tests hand in recorded outputs.
// The real one (RunVendorTool) execs the tool without a shell, reads its
// stdout until it exits or the deadline passes, and kills it then.
//
// Thread-safety: ProbeVendorGpus and RunVendorTool may be called from any
// thread; the runner given must be callable from the caller's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/types.h"
#include "worker/vendor/vendor_profile.h"

namespace gpool::worker {

// argv -> stdout. NotFound when the tool is not installed; Unavailable when
// it fails (exit status) or DeadlineExceeded when it overruns.
using VendorToolRunner = std::function<Result<std::string>(const std::vector<std::string>& argv)>;

Result<std::string> RunVendorTool(const std::vector<std::string>& argv, int64_t timeout_ms);

struct VendorProbeOptions {
  VendorToolRunner runner;   // nullptr: RunVendorTool with timeout_ms
  int64_t timeout_ms = 10'000;
};

// The runner `options` names, or the real one.
VendorToolRunner VendorRunnerOf(const VendorProbeOptions& options);

struct VendorProbeResult {
  NodeVendor vendor = NodeVendor::kNvidia;
  std::vector<GpuInfo> gpus;
};

// NotFound when no family's tool is installed or lists a device; the parse
// error of a tool that printed something unreadable.
Result<VendorProbeResult> ProbeVendorGpus(const VendorProbeOptions& options);

}  // namespace gpool::worker
