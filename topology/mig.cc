#include "topology/mig.h"

#include <algorithm>
#include <cctype>

#include "protocol/base/text.h"

namespace gpool::topology {

namespace {

// ---------------------------------------------------------------------------
// Tables
//
// Geometry (compute slices, memory slices, allowed starts) is NVIDIA's, from
// the MIG user guide ("Supported MIG Profiles") and `nvidia-smi mig -lgipp`:
// on every 7-compute / 8-memory-slice part the same seven shapes exist, only
// the memory behind a slice differs. A 1g with two memory slices (1g.20gb on
// an 80 GB part) starts on even slices only; the 7g takes all eight memory
// slices, so the last memory slice is reachable only through 1g.*x2 at 6, 3g
// at 4 or 7g.
//
// Memory is the per-instance size NVML reports for the profile
// (`nvidia-smi mig -lgip`, printed in GiB with two decimals; as MiB it is a
// multiple of 64, which makes the conversion exact). Drivers differ slightly;
// where two were seen the smaller is used so a placement never promises
// memory a node may not have.

// Per-instance memory of a 7/8-slice part by how many memory slices the
// instance spans (1, 2, 4, 8), and the profile names of its shapes.
struct SevenSliceSizes {
  uint64_t mib1 = 0, mib2 = 0, mib4 = 0, mib8 = 0;
  std::string g1, g1x2, g2, g3, g4, g7;
};

std::vector<uint32_t> Starts(uint32_t first, uint32_t step, uint32_t last) {
  std::vector<uint32_t> starts;
  for (uint32_t s = first; s <= last; s += step) starts.push_back(s);
  return starts;
}

MigModel SevenSlice(std::string name, const SevenSliceSizes& s) {
  MigModel model{.name = std::move(name), .compute_slices = 7, .memory_slices = 8};
  model.profiles = {
      {.name = s.g1, .compute_slices = 1, .memory_slices = 1, .memory_mib = s.mib1, .starts = Starts(0, 1, 6)},
      {.name = s.g1 + "+me", .compute_slices = 1, .memory_slices = 1, .memory_mib = s.mib1,
       .starts = Starts(0, 1, 6), .media = true},
      {.name = s.g1x2, .compute_slices = 1, .memory_slices = 2, .memory_mib = s.mib2, .starts = Starts(0, 2, 6)},
      {.name = s.g2, .compute_slices = 2, .memory_slices = 2, .memory_mib = s.mib2, .starts = Starts(0, 2, 4)},
      {.name = s.g3, .compute_slices = 3, .memory_slices = 4, .memory_mib = s.mib4, .starts = Starts(0, 4, 4)},
      {.name = s.g4, .compute_slices = 4, .memory_slices = 4, .memory_mib = s.mib4, .starts = {0}},
      {.name = s.g7, .compute_slices = 7, .memory_slices = 8, .memory_mib = s.mib8, .starts = {0}},
  };
  return model;
}

// A30: four compute and four memory slices; -lgip 5.81 / 11.69 GiB, and 23.44
// or 23.50 GiB for the 4g (the smaller taken). The 2g+me placements are
// assumed equal to the 2g's (R525+ drivers).
MigModel A30() {
  MigModel model{.name = "A30-24GB", .compute_slices = 4, .memory_slices = 4};
  model.profiles = {
      {.name = "1g.6gb", .compute_slices = 1, .memory_slices = 1, .memory_mib = 5952, .starts = Starts(0, 1, 3)},
      {.name = "1g.6gb+me", .compute_slices = 1, .memory_slices = 1, .memory_mib = 5952,
       .starts = Starts(0, 1, 3), .media = true},
      {.name = "2g.12gb", .compute_slices = 2, .memory_slices = 2, .memory_mib = 11968, .starts = {0, 2}},
      {.name = "2g.12gb+me", .compute_slices = 2, .memory_slices = 2, .memory_mib = 11968, .starts = {0, 2},
       .media = true},
      {.name = "4g.24gb", .compute_slices = 4, .memory_slices = 4, .memory_mib = 24000, .starts = {0}},
  };
  return model;
}

std::vector<MigModel> BuildTables() {
  std::vector<MigModel> tables;
  tables.push_back(A30());
  // -lgip 4.75 / 9.62 / 19.50 / 39.25 GiB; NVML's memorySizeMB agrees.
  tables.push_back(SevenSlice("A100-40GB", {4864, 9856, 19968, 40192,  //
                                            "1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}));
  // -lgip 9.50 / 19.50 / 39.25 / 79.00 GiB.
  tables.push_back(SevenSlice("A100-80GB", {9728, 19968, 40192, 80896,  //
                                            "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}));
  // H100 PCIe/SXM5 80 GB: -lgip 9.75 / 19.62 / 39.50 / 79.25 GiB.
  tables.push_back(SevenSlice("H100-80GB", {9984, 20096, 40448, 81152,  //
                                            "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}));
  // H100 NVL / 94 GB: -lgip 10.62 / 21.50 / 46.12 / 92.62 GiB on one driver,
  // 10.75 / 21.62 / 46.38 / 93.12 (11008 / 22144 / 47488 MiB) on 560.35; the
  // smaller taken.
  tables.push_back(SevenSlice("H100-94GB", {10880, 22016, 47232, 94848,  //
                                            "1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"}));
  // H100 on GH200, 96 GB: -lgip 11.00 / 23.00 / 46.50 / 93.00 GiB.
  tables.push_back(SevenSlice("H100-96GB", {11264, 23552, 47616, 95232,  //
                                            "1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"}));
  // H200 141 GB: -lgip 16.00 / 32.50 / 140.00 GiB for 1g.18gb, 2g.35gb and
  // 7g.141gb. ESTIMATE: no -lgip figure was found for the four-slice
  // profiles (3g.71gb, 4g.71gb); 71424 MiB is half the 7g's less 256 MiB, as
  // on the other Hopper parts (within ~0.5 %).
  tables.push_back(SevenSlice("H200-141GB", {16384, 33280, 71424, 143360,  //
                                             "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}));
  // H20 96 GB: profile names from NVIDIA's vGPU docs (the same as H100 on
  // GH200). ESTIMATE: no -lgip figures found; the 96 GB GH200 ones are used.
  tables.push_back(SevenSlice("H20-96GB", {11264, 23552, 47616, 95232,  //
                                           "1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"}));
  // H20 141 GB ("H20-3e"): profile names as the H200's (NVIDIA's vGPU docs).
  // ESTIMATE: memory taken from the H200 table.
  tables.push_back(SevenSlice("H20-141GB", {16384, 33280, 71424, 143360,  //
                                            "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}));
  return tables;
}

const std::vector<MigModel>& Tables() {
  static const std::vector<MigModel> tables = BuildTables();
  return tables;
}

// ---------------------------------------------------------------------------
// Model names
//
// NVML, nvidia-smi, cloud images and hand-written spec files spell one model
// many ways ("NVIDIA A100-SXM4-80GB", "A100 80GB PCIe", "a100-80gb"), so the
// name is cut into alphanumeric tokens and matched by family token; the size
// comes from the device's memory, else from the name.

enum class Family { kNone, kA30, kA100, kH100, kH200, kH20 };

struct Variant {
  Family family;
  uint32_t gb;                // the size a name spells ("80GB")
  uint64_t min_mib, max_mib;  // device totals nvidia-smi reports for it
  std::string_view hint;      // a name token that picks it without a size ("NVL"), or ""
  bool plain;                 // what the bare family name means
  std::string_view model;     // table name
};

constexpr Variant kVariants[] = {
    {Family::kA30, 24, 20480, 28672, "", true, "A30-24GB"},
    {Family::kA100, 40, 36864, 49152, "", false, "A100-40GB"},
    {Family::kA100, 80, 73728, 90112, "", false, "A100-80GB"},
    {Family::kH100, 80, 73728, 88063, "", false, "H100-80GB"},      // reports 81559
    {Family::kH100, 94, 88064, 96767, "NVL", false, "H100-94GB"},   // reports 95830
    {Family::kH100, 96, 96768, 106496, "", false, "H100-96GB"},     // GH200: 97871
    {Family::kH200, 141, 135168, 153600, "", true, "H200-141GB"},   // reports 143771
    {Family::kH20, 96, 90112, 106496, "", true, "H20-96GB"},        // reports 97871
    {Family::kH20, 141, 135168, 153600, "3E", false, "H20-141GB"},  // "H20-3e"
};

std::vector<std::string> UpperTokens(std::string_view text) {
  std::vector<std::string> tokens;
  std::string current;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      current.push_back(static_cast<char>(std::toupper(u)));
    } else if (!current.empty()) {
      tokens.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

// `token` names `family` if it is the family name, possibly followed by
// letters ("H100NVL"), never by digits: "A1000" is no A100, "H200" no H20.
bool NamesFamily(std::string_view token, std::string_view family) {
  if (!token.starts_with(family)) return false;
  return token.size() == family.size() || !std::isdigit(static_cast<unsigned char>(token[family.size()]));
}

Family FamilyOf(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens) {
    if (NamesFamily(t, "A100") || NamesFamily(t, "A800")) return Family::kA100;
    if (NamesFamily(t, "A30")) return Family::kA30;
    if (NamesFamily(t, "H100") || NamesFamily(t, "H800") || NamesFamily(t, "GH200")) return Family::kH100;
    if (NamesFamily(t, "H200")) return Family::kH200;
    if (NamesFamily(t, "H20")) return Family::kH20;
  }
  return Family::kNone;
}

// "80GB" -> 80; 0 when the token is no size.
uint32_t SizeGb(std::string_view token) {
  if (token.size() < 3 || token.size() > 6 || !token.ends_with("GB")) return 0;
  uint32_t gb = 0;
  for (char c : token.substr(0, token.size() - 2)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
    gb = gb * 10 + static_cast<uint32_t>(c - '0');
  }
  return gb;
}

const Variant* VariantByMemory(Family family, uint64_t memory_mib) {
  for (const auto& v : kVariants) {
    if (v.family == family && memory_mib >= v.min_mib && memory_mib <= v.max_mib) return &v;
  }
  return nullptr;
}

// The hint as a token of its own ("H100 NVL") or run into the family's
// ("H100NVL").
bool HasHint(std::string_view token, std::string_view hint) {
  if (hint.empty()) return false;
  return token == hint || (token.ends_with(hint) && FamilyOf({std::string(token)}) != Family::kNone);
}

const Variant* VariantByName(Family family, const std::vector<std::string>& tokens) {
  for (const auto& t : tokens) {
    for (const auto& v : kVariants) {
      if (v.family == family && (SizeGb(t) == v.gb || HasHint(t, v.hint))) return &v;
    }
  }
  for (const auto& v : kVariants) {
    if (v.family == family && v.plain) return &v;
  }
  return nullptr;
}

const MigModel* ModelByName(std::string_view name) {
  for (const auto& model : Tables()) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Layout

// What instances already take on a GPU.
struct Occupancy {
  std::vector<bool> slice_used;  // per memory slice
  uint32_t compute = 0;
  bool media = false;
};

// nullopt when an instance names a profile the model does not have.
std::optional<Occupancy> Occupy(const MigModel& model, const std::vector<MigInstance>& used) {
  Occupancy occupancy{std::vector<bool>(model.memory_slices, false)};
  for (const auto& instance : used) {
    const MigProfile* profile = FindProfile(model, instance.profile);
    if (profile == nullptr) return std::nullopt;
    occupancy.compute += profile->compute_slices;
    occupancy.media = occupancy.media || profile->media;
    const uint64_t end = std::min<uint64_t>(uint64_t{instance.start} + profile->memory_slices, model.memory_slices);
    for (uint64_t s = instance.start; s < end; ++s) occupancy.slice_used[s] = true;
  }
  return occupancy;
}

bool RangeFree(const Occupancy& occupancy, uint32_t start, uint32_t count) {
  const uint64_t end = uint64_t{start} + count;
  if (end > occupancy.slice_used.size()) return false;
  for (uint64_t s = start; s < end; ++s) {
    if (occupancy.slice_used[s]) return false;
  }
  return true;
}

std::optional<uint32_t> StartIn(const MigModel& model, const Occupancy& occupancy, const MigProfile& profile) {
  if (occupancy.compute + profile.compute_slices > model.compute_slices) return std::nullopt;
  if (profile.media && occupancy.media) return std::nullopt;
  std::optional<uint32_t> best;
  for (uint32_t start : profile.starts) {
    if (RangeFree(occupancy, start, profile.memory_slices) && (!best || start < *best)) best = start;
  }
  return best;
}

// "instance 2 (3g.40gb at 2)"
std::string Label(size_t index, const MigInstance& instance) {
  return "instance " + std::to_string(index) + " (" + instance.profile + " at " + std::to_string(instance.start) + ")";
}

// "(0, 4)"
std::string StartList(const std::vector<uint32_t>& starts) {
  std::string out = "(";
  for (size_t i = 0; i < starts.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(starts[i]);
  }
  return out + ")";
}

// "memory slices 0-3" / "memory slice 6"
std::string SliceRange(uint32_t start, uint32_t count) {
  if (count == 1) return "memory slice " + std::to_string(start);
  return "memory slices " + std::to_string(start) + "-" + std::to_string(start + count - 1);
}

// The first problem of one instance against those before it (owner: which
// earlier instance holds each memory slice, -1 none), recording it if none.
std::optional<std::string> Claim(const MigModel& model, const std::vector<MigInstance>& layout, size_t index,
                                 std::vector<int>& owner, uint32_t& compute, std::optional<size_t>& media) {
  const MigInstance& instance = layout[index];
  const MigProfile* profile = FindProfile(model, instance.profile);
  if (profile == nullptr) return Label(index, instance) + ": unknown profile on " + model.name;
  const auto& starts = profile->starts;
  if (std::find(starts.begin(), starts.end(), instance.start) == starts.end()) {
    return Label(index, instance) + ": start not allowed " + StartList(starts);
  }
  const uint64_t end = uint64_t{instance.start} + profile->memory_slices;
  if (end > model.memory_slices) {
    return Label(index, instance) + ": runs past the GPU's " + std::to_string(model.memory_slices) + " memory slices";
  }
  for (uint64_t s = instance.start; s < end; ++s) {
    if (owner[s] >= 0) {
      const auto other = static_cast<size_t>(owner[s]);
      return Label(index, instance) + ": " + SliceRange(instance.start, profile->memory_slices) +
             (profile->memory_slices == 1 ? " overlaps " : " overlap ") + Label(other, layout[other]);
    }
  }
  compute += profile->compute_slices;
  if (compute > model.compute_slices) {
    return Label(index, instance) + ": " + std::to_string(compute) + " compute slices in use, the GPU has " +
           std::to_string(model.compute_slices);
  }
  if (profile->media) {
    if (media) {
      return Label(index, instance) + ": a second media-extension instance after " + Label(*media, layout[*media]);
    }
    media = index;
  }
  for (uint64_t s = instance.start; s < end; ++s) owner[s] = static_cast<int>(index);
  return std::nullopt;
}

}  // namespace

const MigModel* FindMigModel(std::string_view gpu_model, uint64_t memory_mib) {
  const auto tokens = UpperTokens(gpu_model);
  const Family family = FamilyOf(tokens);
  if (family == Family::kNone) return nullptr;
  const Variant* variant = memory_mib > 0 ? VariantByMemory(family, memory_mib) : VariantByName(family, tokens);
  return variant == nullptr ? nullptr : ModelByName(variant->model);
}

const MigProfile* FindProfile(const MigModel& model, std::string_view profile_name) {
  std::string name = AsciiLower(TrimSpace(profile_name));
  if (name.starts_with("mig ") || name.starts_with("mig-")) name = std::string(TrimSpace(std::string_view(name).substr(4)));
  if (name.empty()) return nullptr;
  for (const auto& profile : model.profiles) {
    if (AsciiLower(profile.name) == name) return &profile;
  }
  return nullptr;
}

uint32_t MigComputePct(const MigModel& model, const MigProfile& profile) {
  if (model.compute_slices == 0) return 0;
  return static_cast<uint32_t>(uint64_t{profile.compute_slices} * 100 / model.compute_slices);
}

std::optional<uint32_t> FindMigStart(const MigModel& model, const MigProfile& profile,
                                     const std::vector<MigInstance>& used) {
  const auto occupancy = Occupy(model, used);
  if (!occupancy) return std::nullopt;
  return StartIn(model, *occupancy, profile);
}

std::optional<MigChoice> BestFitMig(const MigModel& model, uint64_t memory_mib, uint32_t compute_pct,
                                    const std::vector<MigInstance>& used) {
  const auto occupancy = Occupy(model, used);
  if (!occupancy) return std::nullopt;
  for (const auto& profile : model.profiles) {
    if (profile.media || profile.memory_mib < memory_mib || MigComputePct(model, profile) < compute_pct) continue;
    if (auto start = StartIn(model, *occupancy, profile)) return MigChoice{&profile, *start};
  }
  return std::nullopt;
}

std::optional<std::string> CheckMigLayout(const MigModel& model, const std::vector<MigInstance>& layout) {
  std::vector<int> owner(model.memory_slices, -1);
  uint32_t compute = 0;
  std::optional<size_t> media;
  for (size_t i = 0; i < layout.size(); ++i) {
    if (auto problem = Claim(model, layout, i, owner, compute, media)) return problem;
  }
  return std::nullopt;
}

std::vector<std::string> MigModelNames() {
  std::vector<std::string> names;
  for (const auto& model : Tables()) names.push_back(model.name);
  return names;
}

}  // namespace gpool::topology
