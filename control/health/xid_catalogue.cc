#include "control/health/xid_catalogue.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace gpool::health {
namespace {

// The default table: the immediate-action bucket of NVIDIA's XID catalogue
// for the codes data-centre GPUs raise, reduced to what the policy needs.
// Codes not listed are informational. Kept sorted by code.
//   application  13 graphics engine exception, 31 MMU fault (an invalid
//                address), 43 channel reset after a program fault, 45
//                preemptive channel removal (a killed process), 68 video
//                decoder exception, 109 context-switch timeout
//   reset GPU    46 GPU stopped processing, 48 double-bit ECC, 62 internal
//                micro-controller halt, 63/64 page retirement or row remap
//                (only with a remap pending), 74 NVLink error, 92 high
//                single-bit ECC rate, 94/95 contained / uncontained ECC
//                error, 119/120 GSP RPC timeout / GSP error, 140 unrecovered
//                ECC error, 144-150 NVLink errors (Hopper and newer), 154
//                the driver's recovery action changed (reset or reboot)
//   reboot node  79 GPU fallen off the bus
constexpr std::pair<int32_t, XidClass> kTable[] = {
    {13, XidClass::kApplication},  {31, XidClass::kApplication},  {43, XidClass::kApplication},
    {45, XidClass::kApplication},  {46, XidClass::kResetGpu},     {48, XidClass::kResetGpu},
    {62, XidClass::kResetGpu},     {63, XidClass::kResetGpu},     {64, XidClass::kResetGpu},
    {68, XidClass::kApplication},  {74, XidClass::kResetGpu},     {79, XidClass::kRebootNode},
    {92, XidClass::kResetGpu},     {94, XidClass::kResetGpu},     {95, XidClass::kResetGpu},
    {109, XidClass::kApplication}, {119, XidClass::kResetGpu},    {120, XidClass::kResetGpu},
    {140, XidClass::kResetGpu},    {144, XidClass::kResetGpu},    {145, XidClass::kResetGpu},
    {146, XidClass::kResetGpu},    {147, XidClass::kResetGpu},    {148, XidClass::kResetGpu},
    {149, XidClass::kResetGpu},    {150, XidClass::kResetGpu},    {154, XidClass::kResetGpu},
};

static_assert(std::is_sorted(std::begin(kTable), std::end(kTable),
                             [](const auto& a, const auto& b) { return a.first < b.first; }),
              "the XID table is searched by binary search");

// Fatal only when the GPU also has a retirement or remap pending.
constexpr bool NeedsPendingRemap(int32_t xid) { return xid == 63 || xid == 64; }

XidClass Lookup(int32_t xid) {
  const auto* end = std::end(kTable);
  const auto* it = std::lower_bound(std::begin(kTable), end, xid,
                                   [](const auto& entry, int32_t code) { return entry.first < code; });
  if (it == end || it->first != xid) return XidClass::kInformational;
  return it->second;
}

}  // namespace

std::string_view ToString(XidClass c) {
  switch (c) {
    case XidClass::kInformational: return "informational";
    case XidClass::kApplication: return "application";
    case XidClass::kResetGpu: return "reset-gpu";
    case XidClass::kRebootNode: return "reboot-node";
    case XidClass::kFatalOther: return "fatal";
  }
  return "informational";
}

XidCatalogue::XidCatalogue() = default;

XidCatalogue::XidCatalogue(const XidOverrides& overrides) {
  for (int32_t xid : overrides.application) overrides_[xid] = XidClass::kApplication;
  for (int32_t xid : overrides.fatal) {
    // Keep the table's more specific bucket when it already says fatal.
    const XidClass table = Lookup(xid);
    overrides_[xid] = Fences(table) ? table : XidClass::kFatalOther;
  }
}

XidClass XidCatalogue::Classify(int32_t xid, bool remap_pending) const {
  if (auto it = overrides_.find(xid); it != overrides_.end()) return it->second;
  const XidClass c = Lookup(xid);
  if (NeedsPendingRemap(xid) && !remap_pending) return XidClass::kInformational;
  return c;
}

std::vector<int32_t> XidCatalogue::DefaultCodes(XidClass c) {
  std::vector<int32_t> codes;
  for (const auto& [code, cls] : kTable) {
    if (cls == c) codes.push_back(code);
  }
  return codes;
}

}  // namespace gpool::health
