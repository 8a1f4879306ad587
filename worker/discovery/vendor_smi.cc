// The JSON layouts (neuron-ls, rocm-smi / hy-smi) and the table that picks
// a parser per family. The text tables are vendor_smi_text.cc's.
#include "worker/discovery/vendor_smi.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace gpool::worker {
namespace {

using VendorToolParser = std::function<Result<std::vector<GpuInfo>>(std::string_view)>;

struct VendorToolLayout {
  NodeVendor vendor;
  VendorToolParser parse;
};

const std::vector<VendorToolLayout>& VendorToolLayouts() {
  static const std::vector<VendorToolLayout> layouts = {
      {NodeVendor::kAscend, ParseNpuSmi},
      {NodeVendor::kKunlun, ParseXpuSmi},
      {NodeVendor::kNeuron, ParseNeuronLs},
      {NodeVendor::kMetax, ParseMxSmi},
      {NodeVendor::kEnflame, ParseEfsmi},
      {NodeVendor::kHygonDcu, [](std::string_view out) { return ParseRocmSmiJson(out, "hygon", "hygon-dcu"); }},
      {NodeVendor::kAmd, [](std::string_view out) { return ParseRocmSmiJson(out, "amd", "amd"); }},
  };
  return layouts;
}

std::string VendorLowerKey(const std::string& key) {
  std::string out = key;
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// rocm-smi spells its keys differently across releases ("Card series",
// "Card Series"): look them up case-insensitively.
const nlohmann::json* FieldNoCase(const nlohmann::json& object, std::string_view name) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (VendorLowerKey(it.key()) == name) return &it.value();
  }
  return nullptr;
}

std::string VendorTextOf(const nlohmann::json* value) {
  if (value == nullptr) return "";
  if (value->is_string()) return value->get<std::string>();
  if (value->is_number()) return value->dump();
  return "";
}

// Parses without exceptions (a tool's garbage is an error value, not a throw).
Status ParseToolJson(std::string_view output, std::string_view tool, nlohmann::json& doc) {
  doc = nlohmann::json::parse(output.begin(), output.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::InvalidArgument(std::string(tool) + " output is not JSON");
  return Status::Ok();
}

}  // namespace

Result<std::vector<GpuInfo>> ParseVendorTool(NodeVendor vendor, std::string_view output) {
  for (const VendorToolLayout& layout : VendorToolLayouts()) {
    if (layout.vendor == vendor) return layout.parse(output);
  }
  return Status::FailedPrecondition(std::string(ProfileOf(vendor).display) +
                                    "s are discovered through NVML, not a vendor tool");
}

Result<std::vector<GpuInfo>> ParseNeuronLs(std::string_view output) {
  nlohmann::json doc;
  GPOOL_RETURN_IF_ERROR(ParseToolJson(output, "neuron-ls --json-output", doc));
  if (!doc.is_array()) return Status::InvalidArgument("neuron-ls --json-output: expected an array of devices");
  std::vector<GpuInfo> gpus;
  for (const nlohmann::json& d : doc) {
    if (!d.is_object() || !d.contains("neuron_device") || !d["neuron_device"].is_number_unsigned()) {
      return Status::InvalidArgument("neuron-ls --json-output: a device without a neuron_device number: " +
                                     d.dump().substr(0, 120));
    }
    GpuInfo gpu;
    gpu.index = d["neuron_device"].get<uint32_t>();
    gpu.vendor = "aws";
    const size_t links = d.contains("connected_to") && d["connected_to"].is_array() ? d["connected_to"].size() : 0;
    // Inferentia's devices form a ring (two neighbours); Trainium's a torus.
    gpu.model = links <= 2 ? "inferentia" : "trainium";
    gpu.uuid = "neuron-" + (d.contains("bdf") && d["bdf"].is_string() ? d["bdf"].get<std::string>()
                                                                      : std::to_string(gpu.index));
    if (d.contains("memory_size") && d["memory_size"].is_number_unsigned()) {
      gpu.memory_mib = d["memory_size"].get<uint64_t>() >> 20;
    }
    if (d.contains("nc_count") && d["nc_count"].is_number_unsigned()) gpu.cores = d["nc_count"].get<uint32_t>();
    gpus.push_back(std::move(gpu));
  }
  if (gpus.empty()) return Status::NotFound("neuron-ls lists no Neuron device");
  std::sort(gpus.begin(), gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.index < b.index; });
  return gpus;
}

Result<std::vector<GpuInfo>> ParseRocmSmiJson(std::string_view output, std::string_view vendor,
                                              std::string_view uuid_prefix) {
  const std::string tool = vendor == "amd" ? "rocm-smi --json" : "hy-smi --json";
  nlohmann::json doc;
  GPOOL_RETURN_IF_ERROR(ParseToolJson(output, tool, doc));
  if (!doc.is_object()) return Status::InvalidArgument(tool + ": expected an object of cards");
  std::vector<GpuInfo> gpus;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    // "card0".."cardN"; "system" and other entries are not devices.
    if (key.rfind("card", 0) != 0 || key.size() == 4 ||
        !std::all_of(key.begin() + 4, key.end(), [](unsigned char c) { return std::isdigit(c); })) {
      continue;
    }
    const nlohmann::json& card = it.value();
    if (!card.is_object()) return Status::InvalidArgument(tool + ": " + key + " is not an object");
    GpuInfo gpu;
    gpu.index = static_cast<uint32_t>(std::stoul(key.substr(4)));
    gpu.vendor = std::string(vendor);
    gpu.model = VendorTextOf(FieldNoCase(card, "card series"));
    if (gpu.model.empty()) gpu.model = VendorTextOf(FieldNoCase(card, "card model"));
    const std::string unique = VendorTextOf(FieldNoCase(card, "unique id"));
    gpu.uuid = std::string(uuid_prefix) + "-" + (unique.empty() ? key : unique);
    const std::string bytes = VendorTextOf(FieldNoCase(card, "vram total memory (b)"));
    if (!bytes.empty()) {
      if (!std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return std::isdigit(c); })) {
        return Status::InvalidArgument(tool + ": " + key + " VRAM Total Memory (B) is not a number: " + bytes);
      }
      gpu.memory_mib = std::stoull(bytes) >> 20;
    }
    gpus.push_back(std::move(gpu));
  }
  if (gpus.empty()) return Status::NotFound(tool + " lists no card");
  std::sort(gpus.begin(), gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.index < b.index; });
  return gpus;
}

}  // namespace gpool::worker
