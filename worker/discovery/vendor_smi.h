// Parsers for the accelerator vendors' management tools (issue 50): the
// devices of the node as `npu-smi info`, `xpu-smi`, `neuron-ls
// --json-output`, `mx-smi`, `efsmi`, `hy-smi ... --json` and `rocm-smi ...
// --json` print them (the command of each is its row's `tool` in
// vendor/vendor_profile.h). One parser per output layout, chosen by a table
// (vendor_smi.cc): rocm-smi's JSON serves AMD and Hygon's hy-smi, which is a
// rocm-smi derivative; the text tables share one "two lines per device"
// reader (vendor_smi_text.cc).
//
// What each gives (GpuInfo): index = the device's number in the tool (the
// family ordinal), uuid = "<family>-<serial or PCI bus id>", vendor = the
// name the scheduler keys on ("huawei", "kunlunxin", "aws", "metax",
// "enflame", "hygon", "amd"), model, memory_mib, healthy (only where the
// tool prints a health state: npu-smi's Health column, where "Critical"
// is unhealthy), cores (Neuron's nc_count). Neuron's JSON has no model: a
// device linked to two others is on a ring (Inferentia), more is the
// Trainium torus.
//
// The recorded outputs under discovery/testdata/vendors are synthesised from
// each tool's documented layout (the vendors publish samples in their
// manuals); a real tool whose layout differs fails the parse with
// InvalidArgument naming the tool and the line, rather than giving a
// half-read node.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/types.h"
#include "worker/vendor/vendor_profile.h"

namespace gpool::worker {

// The devices in `output` of `vendor`'s tool, by index. InvalidArgument when
// the output cannot be read, NotFound when it lists no device.
// FailedPrecondition for kNvidia (NVML, not a tool: nvml_probe.h).
Result<std::vector<GpuInfo>> ParseVendorTool(NodeVendor vendor, std::string_view output);

// The layouts, for the table and the tests.
Result<std::vector<GpuInfo>> ParseNpuSmi(std::string_view output);
Result<std::vector<GpuInfo>> ParseXpuSmi(std::string_view output);
Result<std::vector<GpuInfo>> ParseNeuronLs(std::string_view output);
Result<std::vector<GpuInfo>> ParseMxSmi(std::string_view output);
Result<std::vector<GpuInfo>> ParseEfsmi(std::string_view output);
// rocm-smi --json and hy-smi --json; `vendor` and `uuid_prefix` name the family.
Result<std::vector<GpuInfo>> ParseRocmSmiJson(std::string_view output, std::string_view vendor,
                                              std::string_view uuid_prefix);

}  // namespace gpool::worker
