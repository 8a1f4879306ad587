// VendorRules (vendor_rules.h): which family a device is, and the public
// checks and picks, which dispatch to the family's rule in
// vendor_<family>.cc.
#include "control/scheduler/vendor_rules.h"

#include "control/scheduler/vendor_common.h"
#include "protocol/base/text.h"

namespace gpool::scheduler {
namespace {

// This file's own helpers stay here; what the families share is in
// vendor_common.h.

bool Has(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// What every family refuses: a request for nothing, or a share above the whole device.
std::optional<std::string> CheckShares(const VendorRequest& r) {
  if (r.count == 0 && r.cores == 0) return "request names no devices";
  if (r.memory_pct > 100) return "memory share above 100%";
  if (r.compute_pct > 100) return "compute share above 100%";
  return std::nullopt;
}

}  // namespace

DeviceFamily FamilyOf(std::string_view vendor_in, std::string_view model_in) {
  const std::string vendor = AsciiLower(vendor_in);
  const std::string model = AsciiLower(model_in);
  if (Has(vendor, "huawei") || Has(vendor, "ascend") || Has(model, "ascend")) {
    if (Has(model, "910c") || Has(model, "910_93") || Has(model, "91093")) return DeviceFamily::kAscend910C;
    if (Has(model, "910b")) return DeviceFamily::kAscend910B;
    if (Has(model, "910")) return DeviceFamily::kAscend910;
    return DeviceFamily::kGeneric;  // 310P and others: no rule here
  }
  if (Has(vendor, "kunlun") || Has(vendor, "baidu") || Has(model, "kunlun")) return DeviceFamily::kKunlun;
  if (Has(vendor, "aws") || Has(vendor, "amazon") || Has(vendor, "neuron") || Has(model, "trainium") ||
      Has(model, "inferentia")) {
    if (Has(model, "inf")) return DeviceFamily::kNeuronRing;
    return DeviceFamily::kNeuron;
  }
  if (Has(vendor, "metax") || Has(model, "metax")) return DeviceFamily::kMetax;
  if (Has(vendor, "enflame") || Has(model, "enflame")) return DeviceFamily::kEnflame;
  return DeviceFamily::kGeneric;
}

std::string_view FamilyName(DeviceFamily family) {
  switch (family) {
    case DeviceFamily::kGeneric:
      return "generic";
    case DeviceFamily::kAscend910:
      return "ascend-910";
    case DeviceFamily::kAscend910B:
      return "ascend-910b";
    case DeviceFamily::kAscend910C:
      return "ascend-910c";
    case DeviceFamily::kKunlun:
      return "kunlun";
    case DeviceFamily::kNeuron:
      return "neuron-trainium";
    case DeviceFamily::kNeuronRing:
      return "neuron-inferentia";
    case DeviceFamily::kMetax:
      return "metax";
    case DeviceFamily::kEnflame:
      return "enflame";
  }
  return "unknown";
}

std::optional<std::string> CheckVendorRequest(DeviceFamily family, const VendorRequest& request) {
  if (family == DeviceFamily::kGeneric) return std::nullopt;
  if (auto e = CheckShares(request)) return e;
  switch (family) {
    case DeviceFamily::kAscend910:
    case DeviceFamily::kAscend910B:
    case DeviceFamily::kAscend910C:
      return vendor::CheckAscend(family, request);
    case DeviceFamily::kKunlun:
      return vendor::CheckKunlun(request);
    case DeviceFamily::kNeuron:
    case DeviceFamily::kNeuronRing:
      return vendor::CheckNeuron(family, request);
    case DeviceFamily::kMetax:
    case DeviceFamily::kEnflame:
      if (request.cores > 0) return std::string(FamilyName(family)) + " has no core-level requests";
      if (family == DeviceFamily::kEnflame && vendor::WantsShare(request) && request.count != 1) {
        return "Enflame shares a GCU only for single-device requests";
      }
      return vendor::NotAbove(FamilyName(family), request.count, request.node_devices);
    case DeviceFamily::kGeneric:
      break;
  }
  return std::nullopt;
}

std::optional<VendorPick> PickVendorDevices(DeviceFamily family, const std::vector<VendorDevice>& devices,
                                            const VendorRequest& request, std::string* why) {
  if (family == DeviceFamily::kGeneric) return vendor::Refuse(why, "no vendor rule");
  VendorRequest r = request;
  if (r.node_devices == 0) r.node_devices = static_cast<uint32_t>(devices.size());
  if (r.device_cores == 0) r.device_cores = vendor::DeviceCores(devices, r);
  if (auto invalid = CheckVendorRequest(family, r)) return vendor::Refuse(why, *invalid);
  switch (family) {
    case DeviceFamily::kAscend910:
      return vendor::PickAscend910(devices, r, why);
    case DeviceFamily::kAscend910B:
      return vendor::PickAscend910B(devices, r, why);
    case DeviceFamily::kAscend910C:
      return vendor::PickAscend910C(devices, r, why);
    case DeviceFamily::kKunlun:
      return vendor::PickKunlun(devices, r, why);
    case DeviceFamily::kNeuron:
    case DeviceFamily::kNeuronRing:
      return vendor::PickNeuron(family, devices, r, why);
    case DeviceFamily::kMetax:
      return vendor::PickMetax(devices, r, why);
    case DeviceFamily::kEnflame:
      return vendor::PickEnflame(devices, r, why);
    case DeviceFamily::kGeneric:
      break;
  }
  return vendor::Refuse(why, "no vendor rule");
}

}  // namespace gpool::scheduler
