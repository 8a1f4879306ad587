#include "topology/node_spec_file.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "protocol/validate.h"
#include "topology/cpulist.h"
#include "topology/quantity.h"
#include "topology/yaml_budget.h"

namespace gpool::topology {
namespace {

constexpr uint32_t kMaxGpuCount = 4096;
constexpr uint64_t kMaxComputeUnits = 1 << 20;
constexpr uint64_t kMaxCoresPerDevice = 256;
constexpr uint64_t kMaxMigStart = 64;
constexpr size_t kMaxEchoedValue = 64;

std::string Clip(const std::string& s) {
  return s.size() <= kMaxEchoedValue ? s : s.substr(0, kMaxEchoedValue) + "...";
}

std::string KindName(const YAML::Node& n) {
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  if (n.IsNull()) return "nothing";
  return "a value";
}

std::string Index(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }
std::string Member(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

// Walks a parsed document; every error carries the source and field path.
class SpecParser {
 public:
  SpecParser(std::string source, const NodeSpecFileOptions& options) : source_(std::move(source)), options_(options) {}

  Result<NodeSpec> Parse(const YAML::Node& root);

 private:
  Status Fail(const std::string& field, const std::string& message) const {
    return Status::InvalidArgument(source_ + ": " + field + ": " + message);
  }

  static YAML::Node Get(const YAML::Node& map, std::string_view key) {
    const YAML::Node& const_map = map;
    return const_map[std::string(key)];
  }
  static bool Has(const YAML::Node& map, std::string_view key) {
    YAML::Node n = Get(map, key);
    return n.IsDefined() && !n.IsNull();
  }

  Status CheckMap(const YAML::Node& n, const std::string& field, std::initializer_list<std::string_view> known) const;
  Result<std::string> Scalar(const YAML::Node& n, const std::string& field) const;
  Result<uint64_t> Uint(const YAML::Node& n, const std::string& field, uint64_t max) const;
  Result<int64_t> Int(const YAML::Node& n, const std::string& field, int64_t min, int64_t max) const;
  Result<bool> Bool(const YAML::Node& n, const std::string& field) const;
  // Reads `cores_key` (cores) or `milli_key` (milli-CPU); 0 when both are absent.
  Result<uint64_t> Cpu(const YAML::Node& map, const std::string& prefix, std::string_view cores_key,
                       std::string_view milli_key) const;
  // Reads `size_key` (a memory size) or `mib_key` (integer MiB); 0 when both are absent.
  Result<uint64_t> Memory(const YAML::Node& map, const std::string& prefix, std::string_view size_key,
                          std::string_view mib_key) const;

  Status ParseLabels(const YAML::Node& n, NodeSpec* spec) const;
  Status ParseNuma(const YAML::Node& n, NodeSpec* spec) const;
  Status ParseGpuList(const YAML::Node& n, NodeSpec* spec) const;
  // compute_units, link_group, cores, mig_mode: shared by a list entry and the shorthand.
  Status ParseGpuExtras(const YAML::Node& item, const std::string& field, GpuInfo* gpu) const;
  Status ParseMigMode(const YAML::Node& item, const std::string& field, GpuInfo* gpu) const;
  Status ParseMigInstances(const YAML::Node& n, const std::string& field, GpuInfo* gpu) const;
  Status ParseGpuCount(const YAML::Node& n, NodeSpec* spec) const;
  Status ParseNics(const YAML::Node& n, NodeSpec* spec) const;

  std::string source_;
  const NodeSpecFileOptions& options_;
};

Status SpecParser::CheckMap(const YAML::Node& n, const std::string& field,
                            std::initializer_list<std::string_view> known) const {
  if (!n.IsMap()) return Fail(field.empty() ? "document" : field, "expected a map, got " + KindName(n));
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) return Fail(field.empty() ? "document" : field, "keys must be plain names");
    const std::string& key = it->first.Scalar();
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return Fail(Member(field, Clip(key)), "unknown field (known fields: " + list + ")");
    }
  }
  return Status::Ok();
}

Result<std::string> SpecParser::Scalar(const YAML::Node& n, const std::string& field) const {
  if (!n.IsScalar()) return Fail(field, "expected a single value, got " + KindName(n));
  return n.Scalar();
}

Result<uint64_t> SpecParser::Uint(const YAML::Node& n, const std::string& field, uint64_t max) const {
  GPOOL_ASSIGN_OR_RETURN(std::string text, Scalar(n, field));
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Fail(field, "'" + Clip(text) + "' is not a non-negative integer");
  }
  if (value > max) return Fail(field, std::to_string(value) + " is larger than " + std::to_string(max));
  return value;
}

Result<int64_t> SpecParser::Int(const YAML::Node& n, const std::string& field, int64_t min, int64_t max) const {
  GPOOL_ASSIGN_OR_RETURN(std::string text, Scalar(n, field));
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Fail(field, "'" + Clip(text) + "' is not an integer");
  }
  if (value < min || value > max) {
    return Fail(field, std::to_string(value) + " is outside " + std::to_string(min) + ".." + std::to_string(max));
  }
  return value;
}

Result<bool> SpecParser::Bool(const YAML::Node& n, const std::string& field) const {
  GPOOL_ASSIGN_OR_RETURN(std::string text, Scalar(n, field));
  if (text == "true" || text == "True" || text == "yes") return true;
  if (text == "false" || text == "False" || text == "no") return false;
  return Fail(field, "'" + Clip(text) + "' is not true or false");
}

Result<uint64_t> SpecParser::Cpu(const YAML::Node& map, const std::string& prefix, std::string_view cores_key,
                                 std::string_view milli_key) const {
  const bool has_cores = Has(map, cores_key);
  const bool has_milli = Has(map, milli_key);
  if (has_cores && has_milli) {
    return Fail(Member(prefix, cores_key),
                "give either " + std::string(cores_key) + " or " + std::string(milli_key) + ", not both");
  }
  if (has_milli) return Uint(Get(map, milli_key), Member(prefix, milli_key), 1ull << 40);
  if (!has_cores) return uint64_t{0};
  const std::string field = Member(prefix, cores_key);
  GPOOL_ASSIGN_OR_RETURN(std::string text, Scalar(Get(map, cores_key), field));
  auto milli = ParseCpuMilli(text);
  if (!milli.ok()) return Fail(field, milli.status().message());
  return *milli;
}

Result<uint64_t> SpecParser::Memory(const YAML::Node& map, const std::string& prefix, std::string_view size_key,
                                    std::string_view mib_key) const {
  const bool has_size = Has(map, size_key);
  const bool has_mib = Has(map, mib_key);
  if (has_size && has_mib) {
    return Fail(Member(prefix, size_key),
                "give either " + std::string(size_key) + " or " + std::string(mib_key) + ", not both");
  }
  if (has_mib) return Uint(Get(map, mib_key), Member(prefix, mib_key), 1ull << 40);
  if (!has_size) return uint64_t{0};
  const std::string field = Member(prefix, size_key);
  GPOOL_ASSIGN_OR_RETURN(std::string text, Scalar(Get(map, size_key), field));
  // A machine's memory: never claim more than it has.
  auto mib = ParseMemoryMib(text, Rounding::kDown);
  if (!mib.ok()) return Fail(field, mib.status().message());
  return *mib;
}

Status SpecParser::ParseLabels(const YAML::Node& n, NodeSpec* spec) const {
  if (!n.IsMap()) return Fail("labels", "expected a map of name: value, got " + KindName(n));
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar().empty()) return Fail("labels", "label names must be plain names");
    const std::string key = it->first.Scalar();
    GPOOL_ASSIGN_OR_RETURN(std::string value, Scalar(it->second, "labels." + Clip(key)));
    spec->labels[key] = value;
  }
  return Status::Ok();
}

Status SpecParser::ParseNuma(const YAML::Node& n, NodeSpec* spec) const {
  if (!n.IsSequence()) return Fail("numa", "expected a list of NUMA nodes, got " + KindName(n));
  std::set<int32_t> ids;
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node item = n[i];
    const std::string field = Index("numa", i);
    GPOOL_RETURN_IF_ERROR(CheckMap(item, field, {"id", "cpus", "cpu_milli", "cpulist", "memory", "memory_mib"}));
    NumaInfo numa;
    numa.id = static_cast<int32_t>(i);
    if (Has(item, "id")) {
      GPOOL_ASSIGN_OR_RETURN(int64_t id, Int(Get(item, "id"), field + ".id", 0, 4095));
      numa.id = static_cast<int32_t>(id);
    }
    if (!ids.insert(numa.id).second) return Fail(field + ".id", std::to_string(numa.id) + " is used twice");
    GPOOL_ASSIGN_OR_RETURN(numa.cpu_milli, Cpu(item, field, "cpus", "cpu_milli"));
    if (Has(item, "cpulist")) {
      GPOOL_ASSIGN_OR_RETURN(std::string list, Scalar(Get(item, "cpulist"), field + ".cpulist"));
      auto ids = ParseCpuList(list);
      if (!ids) {
        return Fail(field + ".cpulist", "'" + Clip(list) + "' is not a Linux cpulist (like 0-31,64-95)");
      }
      numa.cpus = FormatCpuList(*ids);
      // The CPUs are the allocatable amount unless cpus/cpu_milli says less.
      if (!Has(item, "cpus") && !Has(item, "cpu_milli")) numa.cpu_milli = ids->size() * 1000;
    }
    GPOOL_ASSIGN_OR_RETURN(numa.memory_mib, Memory(item, field, "memory", "memory_mib"));
    spec->numa.push_back(numa);
  }
  return Status::Ok();
}

Status SpecParser::ParseGpuList(const YAML::Node& n, NodeSpec* spec) const {
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node item = n[i];
    const std::string field = Index("gpus", i);
    GPOOL_RETURN_IF_ERROR(CheckMap(
        item, field,
        {"index", "uuid", "model", "vendor", "memory", "memory_mib", "numa", "nvlink_peers", "healthy",
         "compute_units", "link_group", "cores", "mig_mode", "mig_instances", "time_slices"}));
    GpuInfo gpu;
    gpu.index = static_cast<uint32_t>(i);
    if (Has(item, "index")) {
      GPOOL_ASSIGN_OR_RETURN(uint64_t index, Uint(Get(item, "index"), field + ".index", kMaxGpuCount - 1));
      gpu.index = static_cast<uint32_t>(index);
    }
    if (!Has(item, "uuid")) return Fail(field + ".uuid", "is required");
    GPOOL_ASSIGN_OR_RETURN(gpu.uuid, Scalar(Get(item, "uuid"), field + ".uuid"));
    if (Has(item, "model")) {
      GPOOL_ASSIGN_OR_RETURN(gpu.model, Scalar(Get(item, "model"), field + ".model"));
    }
    if (Has(item, "vendor")) {
      GPOOL_ASSIGN_OR_RETURN(gpu.vendor, Scalar(Get(item, "vendor"), field + ".vendor"));
    }
    GPOOL_ASSIGN_OR_RETURN(gpu.memory_mib, Memory(item, field, "memory", "memory_mib"));
    if (Has(item, "numa")) {
      GPOOL_ASSIGN_OR_RETURN(int64_t numa, Int(Get(item, "numa"), field + ".numa", -1, 4095));
      gpu.numa = static_cast<int32_t>(numa);
    }
    if (Has(item, "healthy")) {
      GPOOL_ASSIGN_OR_RETURN(gpu.healthy, Bool(Get(item, "healthy"), field + ".healthy"));
    }
    if (Has(item, "nvlink_peers")) {
      const YAML::Node peers = Get(item, "nvlink_peers");
      if (!peers.IsSequence()) return Fail(field + ".nvlink_peers", "expected a list of GPU indices");
      for (size_t p = 0; p < peers.size(); ++p) {
        GPOOL_ASSIGN_OR_RETURN(uint64_t peer, Uint(peers[p], Index(field + ".nvlink_peers", p), kMaxGpuCount - 1));
        gpu.nvlink_peers.push_back(static_cast<uint32_t>(peer));
      }
    }
    GPOOL_RETURN_IF_ERROR(ParseGpuExtras(item, field, &gpu));
    if (Has(item, "mig_instances")) {
      // Listing instances is what static MIG is; saying so is optional.
      if (!Has(item, "mig_mode")) gpu.mig_mode = "static";
      if (gpu.mig_mode != "static") {
        return Fail(field + ".mig_instances", "listed, but mig_mode is " + gpu.mig_mode +
                                                  " (instances exist only with static MIG)");
      }
      GPOOL_RETURN_IF_ERROR(ParseMigInstances(Get(item, "mig_instances"), field + ".mig_instances", &gpu));
    }
    spec->gpus.push_back(std::move(gpu));
  }
  return Status::Ok();
}

Status SpecParser::ParseGpuExtras(const YAML::Node& item, const std::string& field, GpuInfo* gpu) const {
  if (Has(item, "compute_units")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t units,
                           Uint(Get(item, "compute_units"), field + ".compute_units", kMaxComputeUnits));
    gpu->compute_units = static_cast<uint32_t>(units);
  }
  if (Has(item, "link_group")) {
    GPOOL_ASSIGN_OR_RETURN(int64_t group, Int(Get(item, "link_group"), field + ".link_group", -1, kMaxGpuCount - 1));
    gpu->link_group = static_cast<int32_t>(group);
  }
  if (Has(item, "cores")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t cores, Uint(Get(item, "cores"), field + ".cores", kMaxCoresPerDevice));
    gpu->cores = static_cast<uint32_t>(cores);
  }
  if (Has(item, "time_slices")) {
    // Oversubscription for best-effort work: more replicas than this make
    // each one's turn on the device too short to be worth scheduling.
    GPOOL_ASSIGN_OR_RETURN(uint64_t slices, Uint(Get(item, "time_slices"), field + ".time_slices", 64));
    gpu->time_slices = static_cast<uint32_t>(slices);
  }
  return ParseMigMode(item, field, gpu);
}

Status SpecParser::ParseMigMode(const YAML::Node& item, const std::string& field, GpuInfo* gpu) const {
  if (!Has(item, "mig_mode")) return Status::Ok();
  GPOOL_ASSIGN_OR_RETURN(std::string mode, Scalar(Get(item, "mig_mode"), field + ".mig_mode"));
  if (mode == "none" || mode == "off") mode.clear();
  if (!mode.empty() && mode != "static" && mode != "dynamic") {
    return Fail(field + ".mig_mode", "'" + Clip(mode) + "' is not static, dynamic or none");
  }
  gpu->mig_mode = mode;
  return Status::Ok();
}

Status SpecParser::ParseMigInstances(const YAML::Node& n, const std::string& field, GpuInfo* gpu) const {
  if (!n.IsSequence()) return Fail(field, "expected a list of {profile, start, uuid}, got " + KindName(n));
  std::set<uint32_t> starts;
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node item = n[i];
    const std::string at = Index(field, i);
    GPOOL_RETURN_IF_ERROR(CheckMap(item, at, {"profile", "start", "uuid"}));
    MigDeviceInfo instance;
    if (!Has(item, "profile")) return Fail(at + ".profile", "is required (like 1g.10gb)");
    GPOOL_ASSIGN_OR_RETURN(instance.profile, Scalar(Get(item, "profile"), at + ".profile"));
    if (Has(item, "start")) {
      GPOOL_ASSIGN_OR_RETURN(uint64_t start, Uint(Get(item, "start"), at + ".start", kMaxMigStart));
      instance.start = static_cast<uint32_t>(start);
    }
    if (!starts.insert(instance.start).second) {
      return Fail(at + ".start", std::to_string(instance.start) + " is used twice on this GPU");
    }
    if (Has(item, "uuid")) {
      GPOOL_ASSIGN_OR_RETURN(instance.uuid, Scalar(Get(item, "uuid"), at + ".uuid"));
    } else {
      // Simulated nodes need no real uuids; the same form as dynamic MIG's.
      instance.uuid = "MIG-" + gpu->uuid + "-" + instance.profile + "-" + std::to_string(instance.start);
    }
    gpu->mig_instances.push_back(std::move(instance));
  }
  return Status::Ok();
}

Status SpecParser::ParseGpuCount(const YAML::Node& n, NodeSpec* spec) const {
  GPOOL_RETURN_IF_ERROR(
      CheckMap(n, "gpus", {"count", "model", "vendor", "memory", "memory_mib", "nvlink", "numa_split", "link_groups",
                           "compute_units", "cores", "mig_mode", "time_slices"}));
  if (!Has(n, "count")) return Fail("gpus.count", "is required (or give gpus as a list)");
  GPOOL_ASSIGN_OR_RETURN(uint64_t count, Uint(Get(n, "count"), "gpus.count", kMaxGpuCount));
  GpuInfo proto;
  if (Has(n, "model")) {
    GPOOL_ASSIGN_OR_RETURN(proto.model, Scalar(Get(n, "model"), "gpus.model"));
  }
  if (Has(n, "vendor")) {
    GPOOL_ASSIGN_OR_RETURN(proto.vendor, Scalar(Get(n, "vendor"), "gpus.vendor"));
  }
  GPOOL_ASSIGN_OR_RETURN(proto.memory_mib, Memory(n, "gpus", "memory", "memory_mib"));
  GPOOL_RETURN_IF_ERROR(ParseGpuExtras(n, "gpus", &proto));
  if (proto.mig_mode == "static") {
    return Fail("gpus.mig_mode", "static MIG needs each GPU's mig_instances; list the GPUs under gpus instead "
                                 "of the count shorthand (or use dynamic)");
  }
  uint64_t link_groups = 0;
  if (Has(n, "link_groups")) {
    GPOOL_ASSIGN_OR_RETURN(link_groups, Uint(Get(n, "link_groups"), "gpus.link_groups", kMaxGpuCount));
    if (link_groups == 0) return Fail("gpus.link_groups", "must be at least 1");
    if (count > 0 && link_groups > count) return Fail("gpus.link_groups", "is larger than gpus.count");
  }
  bool nvlink_all = false;
  if (Has(n, "nvlink")) {
    GPOOL_ASSIGN_OR_RETURN(std::string mode, Scalar(Get(n, "nvlink"), "gpus.nvlink"));
    if (mode == "all") {
      nvlink_all = true;
    } else if (mode != "none") {
      return Fail("gpus.nvlink", "'" + Clip(mode) + "' is not all or none");
    }
  }
  // NUMA placement: GPU i goes to group i*split/count of the NUMA ids.
  std::vector<int32_t> numa_ids;
  for (const auto& numa : spec->numa) numa_ids.push_back(numa.id);
  uint64_t split = numa_ids.size();
  if (Has(n, "numa_split")) {
    GPOOL_ASSIGN_OR_RETURN(split, Uint(Get(n, "numa_split"), "gpus.numa_split", 4096));
    if (split == 0) return Fail("gpus.numa_split", "must be at least 1");
    if (count > 0 && split > count) return Fail("gpus.numa_split", "is larger than gpus.count");
    if (!numa_ids.empty() && split != numa_ids.size()) {
      return Fail("gpus.numa_split", std::to_string(split) + " does not match the " +
                                         std::to_string(numa_ids.size()) + " NUMA nodes listed under numa");
    }
    if (numa_ids.empty()) {
      for (uint64_t i = 0; i < split; ++i) numa_ids.push_back(static_cast<int32_t>(i));
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    GpuInfo gpu = proto;
    gpu.index = i;
    gpu.uuid = "GPU-" + spec->name + "-" + std::to_string(i);
    if (split > 0) gpu.numa = numa_ids[i * split / count];
    if (link_groups > 0) gpu.link_group = static_cast<int32_t>(i * link_groups / count);
    if (nvlink_all) {
      for (uint32_t p = 0; p < count; ++p) {
        if (p != i) gpu.nvlink_peers.push_back(p);
      }
    }
    spec->gpus.push_back(std::move(gpu));
  }
  return Status::Ok();
}

Status SpecParser::ParseNics(const YAML::Node& n, NodeSpec* spec) const {
  if (!n.IsSequence()) return Fail("nics", "expected a list of NICs, got " + KindName(n));
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node item = n[i];
    const std::string field = Index("nics", i);
    GPOOL_RETURN_IF_ERROR(CheckMap(item, field, {"name", "leaf_switch", "speed_gbps"}));
    NicInfo nic;
    if (!Has(item, "name")) return Fail(field + ".name", "is required");
    GPOOL_ASSIGN_OR_RETURN(nic.name, Scalar(Get(item, "name"), field + ".name"));
    if (Has(item, "leaf_switch")) {
      GPOOL_ASSIGN_OR_RETURN(nic.leaf_switch, Scalar(Get(item, "leaf_switch"), field + ".leaf_switch"));
    }
    if (Has(item, "speed_gbps")) {
      GPOOL_ASSIGN_OR_RETURN(uint64_t speed, Uint(Get(item, "speed_gbps"), field + ".speed_gbps", 1'000'000));
      nic.speed_gbps = static_cast<uint32_t>(speed);
    }
    spec->nics.push_back(std::move(nic));
  }
  return Status::Ok();
}

Result<NodeSpec> SpecParser::Parse(const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull()) return Status::InvalidArgument(source_ + ": the file is empty");
  GPOOL_RETURN_IF_ERROR(CheckMap(root, "", {"name", "hostname", "labels", "cpus", "cpu_milli", "memory",
                                            "memory_mib", "numa", "gpus", "nics", "pool", "pool_queue"}));
  NodeSpec spec;
  if (!options_.name_override.empty()) {
    spec.name = options_.name_override;
  } else if (Has(root, "name")) {
    GPOOL_ASSIGN_OR_RETURN(spec.name, Scalar(Get(root, "name"), "name"));
  } else {
    spec.name = options_.default_name;
  }
  if (spec.name.empty()) return Fail("name", "is required (no --node-name and no hostname to default to)");
  if (Has(root, "hostname")) {
    GPOOL_ASSIGN_OR_RETURN(spec.hostname, Scalar(Get(root, "hostname"), "hostname"));
  } else {
    spec.hostname = options_.default_hostname.empty() ? spec.name : options_.default_hostname;
  }
  if (Has(root, "labels")) GPOOL_RETURN_IF_ERROR(ParseLabels(Get(root, "labels"), &spec));
  if (Has(root, "pool")) {
    GPOOL_ASSIGN_OR_RETURN(spec.pool, Scalar(Get(root, "pool"), "pool"));
  }
  if (Has(root, "pool_queue")) {
    GPOOL_ASSIGN_OR_RETURN(spec.pool_queue, Scalar(Get(root, "pool_queue"), "pool_queue"));
  }
  if (Has(root, "numa")) GPOOL_RETURN_IF_ERROR(ParseNuma(Get(root, "numa"), &spec));
  GPOOL_ASSIGN_OR_RETURN(spec.cpu_milli, Cpu(root, "", "cpus", "cpu_milli"));
  GPOOL_ASSIGN_OR_RETURN(spec.memory_mib, Memory(root, "", "memory", "memory_mib"));
  if (!Has(root, "cpus") && !Has(root, "cpu_milli")) {
    for (const auto& numa : spec.numa) spec.cpu_milli += numa.cpu_milli;
  }
  if (!Has(root, "memory") && !Has(root, "memory_mib")) {
    for (const auto& numa : spec.numa) spec.memory_mib += numa.memory_mib;
  }
  if (spec.cpu_milli == 0) return Fail("cpus", "is required and must be above 0 (or give numa[].cpus)");
  if (spec.memory_mib == 0) return Fail("memory", "is required and must be above 0 (or give numa[].memory)");
  if (Has(root, "gpus")) {
    const YAML::Node gpus = Get(root, "gpus");
    if (gpus.IsSequence()) {
      GPOOL_RETURN_IF_ERROR(ParseGpuList(gpus, &spec));
    } else if (gpus.IsMap()) {
      GPOOL_RETURN_IF_ERROR(ParseGpuCount(gpus, &spec));
    } else {
      return Fail("gpus", "expected a list of GPUs or a map with count, got " + KindName(gpus));
    }
  }
  if (Has(root, "nics")) GPOOL_RETURN_IF_ERROR(ParseNics(Get(root, "nics"), &spec));
  std::set<int32_t> numa_ids;
  for (const auto& numa : spec.numa) numa_ids.insert(numa.id);
  for (size_t i = 0; i < spec.gpus.size(); ++i) {
    const int32_t numa = spec.gpus[i].numa;
    if (numa >= 0 && !numa_ids.empty() && !numa_ids.count(numa)) {
      return Fail(Index("gpus", i) + ".numa", "NUMA node " + std::to_string(numa) + " is not listed under numa");
    }
  }
  Status valid = ValidateNodeSpec(spec);
  if (!valid.ok()) return valid.WithContext(source_);
  return spec;
}

}  // namespace

Result<NodeSpec> ParseNodeSpec(std::string_view text, const std::string& source, const NodeSpecFileOptions& options) {
  YAML::Node root;
  try {
    // Before loading, and before the parser copies an alias once per use
    // (topology/yaml_budget.h).
    GPOOL_RETURN_IF_ERROR(CheckYamlBudget(text, YamlBudget::ForText(text.size()), source));
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    // e.mark is 0-based; people count lines from 1.
    std::string where = source;
    if (!e.mark.is_null()) where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    return Status::InvalidArgument(where + ": not valid YAML or JSON: " + e.msg);
  }
  try {
    return SpecParser(source, options).Parse(root);
  } catch (const YAML::Exception& e) {
    // The parser checks node kinds before reading them; this is a safety net.
    return Status::InvalidArgument(source + ": " + e.msg);
  }
}

Result<NodeSpec> LoadNodeSpecFile(const std::string& path, const NodeSpecFileOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    std::string message = path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? Status::NotFound(message) : Status::IoError(message);
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": read failed");
  return ParseNodeSpec(buffer.str(), path, options);
}

}  // namespace gpool::topology
