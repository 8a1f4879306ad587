#include "client/job_spec_file.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <system_error>
#include <limits>
#include <vector>

#include "client/yaml_fields.h"
#include "protocol/base/text.h"
#include "protocol/validate.h"
#include "topology/quantity.h"

namespace gpool {
namespace {

using u128 = unsigned __int128;

// --- Paths and errors ---------------------------------------------------------

using yaml_fields::FieldError;
using yaml_fields::Join;
using yaml_fields::Quote;

// Keys are matched case-insensitively for the hint ("GPUS" suggests "gpus"),
// and even a short key gets one when it is within 2 edits.
std::string JobKeyHint(std::string_view key, const std::vector<std::string>& allowed) {
  return yaml_fields::NearestOf(AsciiLower(key), allowed, 3);
}

// Checks that `node` is a map whose keys are all scalars, unique and in
// `allowed`. `path` names the map ("" for the top level).
Status CheckKeys(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed) {
  return yaml_fields::CheckKeys(node, path, allowed, "job spec", JobKeyHint);
}

// --- Scalar readers -------------------------------------------------------------

Result<std::string> ReadString(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) return FieldError(path, "expected a string, got " + Quote(node));
  return node.Scalar();
}

Result<uint64_t> ParseUnsigned(const YAML::Node& node, const std::string& path, uint64_t max) {
  std::string error = "expected a non-negative integer, got " + Quote(node);
  if (!node.IsScalar()) return FieldError(path, error);
  std::string_view s = TrimSpace(node.Scalar());
  if (s.empty() || s.size() > 20) return FieldError(path, error);
  u128 v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return FieldError(path, error);
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > max) return FieldError(path, "must be at most " + std::to_string(max) + ", got " + Quote(node));
  return static_cast<uint64_t>(v);
}

Result<int32_t> ParseInt32(const YAML::Node& node, const std::string& path) {
  std::string error = "expected an integer, got " + Quote(node);
  if (!node.IsScalar()) return FieldError(path, error);
  std::string_view s = TrimSpace(node.Scalar());
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 11) return FieldError(path, error);
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return FieldError(path, error);
    v = v * 10 + (c - '0');
  }
  if (negative) v = -v;
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return FieldError(path, "out of range, got " + Quote(node));
  }
  return static_cast<int32_t>(v);
}

// A quantity with units (cpus, memory). The unit parsers' errors do not
// name the field, so they get `path` here; `expected` says what a list or a
// map should have been.
// A request's sizes round up: a task gets at least what it asked for.
Result<uint64_t> RequestMib(std::string_view text) { return topology::ParseMemoryMib(text, topology::Rounding::kUp); }
Result<uint64_t> CpuMilli(std::string_view text) { return topology::ParseCpuMilli(text); }

Result<uint64_t> ReadQuantity(const YAML::Node& node, const std::string& path, const std::string& expected,
                              Result<uint64_t> (*parse)(std::string_view)) {
  if (!node.IsScalar()) return FieldError(path, "expected " + expected + ", got " + Quote(node));
  auto value = parse(node.Scalar());
  if (!value.ok()) return FieldError(path, value.status().message());
  return value;
}

// --- Structure ------------------------------------------------------------------

// The same names as the wire's JobSpec, TaskGroupSpec and Resources
// (docs/protocol.md 6.1-6.3), except cpus/memory, which take units.
const std::vector<std::string> kJobKeys = {"name",           "queue",         "priority",    "priority_class",
                                           "pool",           "user",          "node_selector", "prefer_labels",
                                           "tolerations",    "numa_policy",   "node_policy",   "gpu_policy",   "network_mode", "network_tier", "gpu_uuid_allow", "gpu_uuid_deny", "restart", "grace_period", "max_runtime", "tasks",       "command",     "replicas",
                                           "min_replicas",   "resources",     "env",          "scale"};
const std::vector<std::string> kGroupKeys = {"name", "replicas", "min_replicas", "network_tier", "command", "env",
                                             "resources", "scale"};
const std::vector<std::string> kScaleKeys = {"cooldown", "rules"};
const std::vector<std::string> kScaleRuleKeys = {"trigger", "grow_above", "shrink_below", "queue", "window", "step"};
const std::vector<std::string> kResourceKeys = {"gpus",           "cpus",           "memory",      "gpu_model",
                                                "gpu_memory",     "gpu_memory_pct", "gpu_compute", "sharing_qos",
                                                "mig_profile",    "cores",          "exclusive_cores"};
// Group keys that may sit directly under the job (a one-group job).
const std::vector<std::string> kShorthandKeys = {"command", "replicas", "min_replicas", "resources", "env", "scale"};

Status ReadResources(const YAML::Node& node, const std::string& path, Resources* out) {
  GPOOL_RETURN_IF_ERROR(CheckKeys(node, path, kResourceKeys));
  if (auto n = node["gpus"]) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t gpus, ParseUnsigned(n, path + ".gpus", std::numeric_limits<uint32_t>::max()));
    out->gpus = static_cast<uint32_t>(gpus);
  }
  if (auto n = node["cpus"]) {
    GPOOL_ASSIGN_OR_RETURN(out->cpu_milli, ReadQuantity(n, path + ".cpus", "a number of cores", CpuMilli));
  }
  if (auto n = node["memory"]) {
    GPOOL_ASSIGN_OR_RETURN(out->memory_mib, ReadQuantity(n, path + ".memory", "a size like 4Gi", RequestMib));
  }
  if (auto n = node["gpu_model"]) {
    GPOOL_ASSIGN_OR_RETURN(out->gpu_model, ReadString(n, path + ".gpu_model"));
  }
  if (auto n = node["gpu_memory"]) {
    GPOOL_ASSIGN_OR_RETURN(out->gpu_memory_mib,
                           ReadQuantity(n, path + ".gpu_memory", "a size like 10Gi", RequestMib));
  }
  if (auto n = node["gpu_memory_pct"]) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t pct, ParseUnsigned(n, path + ".gpu_memory_pct", 100));
    out->gpu_memory_pct = static_cast<uint32_t>(pct);
  }
  if (auto n = node["gpu_compute"]) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t pct, ParseUnsigned(n, path + ".gpu_compute", 100));
    out->gpu_compute_pct = static_cast<uint32_t>(pct);
  }
  if (auto n = node["sharing_qos"]) {
    GPOOL_ASSIGN_OR_RETURN(out->sharing_qos, ReadString(n, path + ".sharing_qos"));
  }
  if (auto n = node["mig_profile"]) {
    GPOOL_ASSIGN_OR_RETURN(out->mig_profile, ReadString(n, path + ".mig_profile"));
  }
  if (auto n = node["cores"]) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t cores, ParseUnsigned(n, path + ".cores", 1024));
    out->cores = static_cast<uint32_t>(cores);
  }
  if (auto n = node["exclusive_cores"]) {
    const std::string text = n.IsScalar() ? n.Scalar() : "";
    if (text != "true" && text != "false") {
      return FieldError(path + ".exclusive_cores", "expected true or false, got " + Quote(n));
    }
    out->exclusive_cores = text == "true";
  }
  return Status::Ok();
}

Status ReadCommand(const YAML::Node& node, const std::string& path, std::vector<std::string>* out) {
  out->clear();
  if (node.IsScalar()) {
    if (TrimSpace(node.Scalar()).empty()) return FieldError(path, "must not be empty");
    *out = {"sh", "-c", node.Scalar()};
    return Status::Ok();
  }
  if (!node.IsSequence()) return FieldError(path, "expected a list of strings or one string, got " + Quote(node));
  for (size_t i = 0; i < node.size(); ++i) {
    GPOOL_ASSIGN_OR_RETURN(std::string arg, ReadString(node[i], path + "[" + std::to_string(i) + "]"));
    out->push_back(std::move(arg));
  }
  if (out->empty()) return FieldError(path, "must name a program to run");
  return Status::Ok();
}

// A map of string to string: env (`what` "NAME"), node_selector and
// prefer_labels ("KEY"). Values are taken as written (numbers, true).
Status ReadStringMap(const YAML::Node& node, const std::string& path, const std::string& what,
                     std::map<std::string, std::string>* out) {
  if (!node.IsMap()) return FieldError(path, "expected a map of " + what + ": value, got " + Quote(node));
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return FieldError(path, "keys must be plain strings");
    const std::string& key = kv.first.Scalar();
    if (out->count(key)) return FieldError(path + "." + key, "duplicate key");
    GPOOL_ASSIGN_OR_RETURN(std::string value, ReadString(kv.second, path + "." + key));
    (*out)[key] = std::move(value);
  }
  return Status::Ok();
}

Status ReadStringList(const YAML::Node& node, const std::string& path, std::vector<std::string>* out) {
  if (!node.IsSequence()) return FieldError(path, "expected a list of strings, got " + Quote(node));
  for (size_t i = 0; i < node.size(); ++i) {
    GPOOL_ASSIGN_OR_RETURN(std::string item, ReadString(node[i], path + "[" + std::to_string(i) + "]"));
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

// The job-level fields of the policy engine: class, pool, user, placement.
Status ReadPolicyFields(const YAML::Node& root, JobSpec* spec) {
  if (auto n = root["priority_class"]) {
    GPOOL_ASSIGN_OR_RETURN(spec->priority_class, ReadString(n, "priority_class"));
  }
  if (auto n = root["pool"]) {
    GPOOL_ASSIGN_OR_RETURN(spec->pool, ReadString(n, "pool"));
  }
  if (auto n = root["user"]) {
    GPOOL_ASSIGN_OR_RETURN(spec->user, ReadString(n, "user"));
  }
  if (auto n = root["node_selector"]) {
    GPOOL_RETURN_IF_ERROR(ReadStringMap(n, "node_selector", "KEY", &spec->node_selector));
  }
  if (auto n = root["prefer_labels"]) {
    GPOOL_RETURN_IF_ERROR(ReadStringMap(n, "prefer_labels", "KEY", &spec->prefer_labels));
  }
  if (auto n = root["tolerations"]) GPOOL_RETURN_IF_ERROR(ReadStringList(n, "tolerations", &spec->tolerations));
  if (auto n = root["numa_policy"]) {
    GPOOL_ASSIGN_OR_RETURN(spec->numa_policy, ReadString(n, "numa_policy"));
  }
  if (auto n = root["network_mode"]) {
    GPOOL_ASSIGN_OR_RETURN(spec->network_mode, ReadString(n, "network_mode"));
  }
  if (auto n = root["node_policy"]) {
    GPOOL_ASSIGN_OR_RETURN(spec->node_policy, ReadString(n, "node_policy"));
    if (!PlacementPolicyFromString(spec->node_policy)) {
      return NotOneOf<PlacementPolicy>("node_policy", spec->node_policy);
    }
  }
  if (auto n = root["gpu_policy"]) {
    GPOOL_ASSIGN_OR_RETURN(spec->gpu_policy, ReadString(n, "gpu_policy"));
    if (!PlacementPolicyFromString(spec->gpu_policy)) {
      return NotOneOf<PlacementPolicy>("gpu_policy", spec->gpu_policy);
    }
  }
  if (auto n = root["network_tier"]) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t tier, ParseUnsigned(n, "network_tier", 8));
    spec->network_tier = static_cast<uint32_t>(tier);
  }
  if (auto n = root["gpu_uuid_allow"]) GPOOL_RETURN_IF_ERROR(ReadStringList(n, "gpu_uuid_allow", &spec->gpu_uuid_allow));
  if (auto n = root["gpu_uuid_deny"]) GPOOL_RETURN_IF_ERROR(ReadStringList(n, "gpu_uuid_deny", &spec->gpu_uuid_deny));
  if (auto n = root["grace_period"]) {
    GPOOL_ASSIGN_OR_RETURN(std::string text, ReadString(n, "grace_period"));
    auto ms = topology::ParseDurationMs(text);
    if (!ms.ok() || *ms > UINT32_MAX) {
      return Status::InvalidArgument("grace_period: " + (ms.ok() ? "'" + text + "' is too long" : ms.status().message()));
    }
    spec->grace_period_ms = static_cast<uint32_t>(*ms);
  }
  if (auto n = root["max_runtime"]) {
    GPOOL_ASSIGN_OR_RETURN(std::string text, ReadString(n, "max_runtime"));
    auto ms = topology::ParseDurationMs(text);
    if (!ms.ok()) return Status::InvalidArgument("max_runtime: " + ms.status().message());
    spec->max_runtime_ms = *ms;
  }
  if (auto n = root["restart"]) {
    GPOOL_RETURN_IF_ERROR(CheckKeys(n, "restart", {"policy", "max_attempts"}));
    if (auto p = n["policy"]) {
      GPOOL_ASSIGN_OR_RETURN(spec->restart.policy, ReadString(p, "restart.policy"));
    }
    if (auto m = n["max_attempts"]) {
      GPOOL_ASSIGN_OR_RETURN(uint64_t attempts, ParseUnsigned(m, "restart.max_attempts", 100));
      spec->restart.max_attempts = static_cast<uint32_t>(attempts);
    }
  }
  return Status::Ok();
}

// A group's scale rules (protocol/scale_rule.h): `cooldown` takes a
// duration ("90s"); the coordinator checks the rest.
Status ReadScale(const YAML::Node& node, const std::string& path, ScaleSpec* out) {
  GPOOL_RETURN_IF_ERROR(CheckKeys(node, path, kScaleKeys));
  if (auto n = node["cooldown"]) {
    GPOOL_ASSIGN_OR_RETURN(std::string text, ReadString(n, path + ".cooldown"));
    auto ms = topology::ParseDurationMs(text);
    if (!ms.ok()) return Status::InvalidArgument(path + ".cooldown: " + ms.status().message());
    out->cooldown_ms = *ms;
  }
  const YAML::Node rules = node["rules"];
  if (!rules) return FieldError(path + ".rules", "required");
  if (!rules.IsSequence()) return FieldError(path + ".rules", "expected a list of rules, got " + Quote(rules));
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string at = path + ".rules[" + std::to_string(i) + "]";
    GPOOL_RETURN_IF_ERROR(CheckKeys(rules[i], at, kScaleRuleKeys));
    ScaleRule rule;
    if (auto n = rules[i]["trigger"]) {
      GPOOL_ASSIGN_OR_RETURN(rule.trigger, ReadString(n, at + ".trigger"));
    } else {
      return FieldError(at + ".trigger", "required");
    }
    if (auto n = rules[i]["grow_above"]) {
      GPOOL_ASSIGN_OR_RETURN(rule.grow_above, ParseUnsigned(n, at + ".grow_above", UINT32_MAX));
    }
    if (auto n = rules[i]["shrink_below"]) {
      GPOOL_ASSIGN_OR_RETURN(rule.shrink_below, ParseUnsigned(n, at + ".shrink_below", UINT32_MAX));
    }
    if (auto n = rules[i]["queue"]) {
      GPOOL_ASSIGN_OR_RETURN(rule.queue, ReadString(n, at + ".queue"));
    }
    if (auto n = rules[i]["window"]) {
      GPOOL_ASSIGN_OR_RETURN(rule.window, ReadString(n, at + ".window"));
    }
    if (auto n = rules[i]["step"]) {
      GPOOL_ASSIGN_OR_RETURN(uint64_t step, ParseUnsigned(n, at + ".step", UINT32_MAX));
      rule.step = static_cast<uint32_t>(step);
    }
    out->rules.push_back(std::move(rule));
  }
  return Status::Ok();
}

// Reads the group fields present in `node` (a task entry, or the job itself
// for the shorthand). Keys were checked by the caller.
Status ReadGroupFields(const YAML::Node& node, const std::string& path, TaskGroupSpec* group) {
  if (auto n = node["replicas"]) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t replicas,
                           ParseUnsigned(n, Join(path, "replicas"), std::numeric_limits<uint32_t>::max()));
    group->replicas = static_cast<uint32_t>(replicas);
  }
  if (auto n = node["command"]) {
    GPOOL_RETURN_IF_ERROR(ReadCommand(n, Join(path, "command"), &group->command));
  } else {
    return FieldError(Join(path, "command"), "required");
  }
  if (auto n = node["min_replicas"]) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t min_replicas,
                           ParseUnsigned(n, Join(path, "min_replicas"), std::numeric_limits<uint32_t>::max()));
    group->min_replicas = static_cast<uint32_t>(min_replicas);
  }
  if (auto n = node["network_tier"]) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t tier, ParseUnsigned(n, Join(path, "network_tier"), 8));
    group->network_tier = static_cast<uint32_t>(tier);
  }
  if (auto n = node["env"]) GPOOL_RETURN_IF_ERROR(ReadStringMap(n, Join(path, "env"), "NAME", &group->env));
  if (auto n = node["resources"]) GPOOL_RETURN_IF_ERROR(ReadResources(n, Join(path, "resources"), &group->resources));
  if (auto n = node["scale"]) GPOOL_RETURN_IF_ERROR(ReadScale(n, Join(path, "scale"), &group->scale));
  return Status::Ok();
}

Result<JobSpec> ReadJob(const YAML::Node& root) {
  if (!root || root.IsNull()) return Status::InvalidArgument("job spec is empty");
  GPOOL_RETURN_IF_ERROR(CheckKeys(root, "", kJobKeys));
  JobSpec spec;
  if (auto n = root["name"]) {
    GPOOL_ASSIGN_OR_RETURN(spec.name, ReadString(n, "name"));
  } else {
    return FieldError("name", "required");
  }
  if (auto n = root["queue"]) {
    GPOOL_ASSIGN_OR_RETURN(spec.queue, ReadString(n, "queue"));
  }
  if (auto n = root["priority"]) {
    GPOOL_ASSIGN_OR_RETURN(spec.priority, ParseInt32(n, "priority"));
  }
  GPOOL_RETURN_IF_ERROR(ReadPolicyFields(root, &spec));

  bool shorthand = false;
  for (const std::string& key : kShorthandKeys) {
    if (root[key]) {
      if (root["tasks"]) {
        return FieldError(key, "cannot be combined with 'tasks'; use either a tasks list or the single-group "
                               "shorthand (command/replicas/min_replicas/resources/env under the job)");
      }
      shorthand = true;
    }
  }
  if (shorthand) {
    TaskGroupSpec group;
    GPOOL_RETURN_IF_ERROR(ReadGroupFields(root, "", &group));
    spec.tasks.push_back(std::move(group));
    return spec;
  }

  const YAML::Node tasks = root["tasks"];
  if (!tasks) return FieldError("tasks", "required (or give 'command' directly under the job for one task group)");
  if (!tasks.IsSequence()) return FieldError("tasks", "expected a list of task groups, got " + Quote(tasks));
  if (tasks.size() == 0) return FieldError("tasks", "at least one task group is required");
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string path = "tasks[" + std::to_string(i) + "]";
    const YAML::Node entry = tasks[i];
    GPOOL_RETURN_IF_ERROR(CheckKeys(entry, path, kGroupKeys));
    TaskGroupSpec group;
    group.name = tasks.size() == 1 ? "task" : "task-" + std::to_string(i);
    if (auto n = entry["name"]) {
      GPOOL_ASSIGN_OR_RETURN(group.name, ReadString(n, path + ".name"));
    }
    GPOOL_RETURN_IF_ERROR(ReadGroupFields(entry, path, &group));
    spec.tasks.push_back(std::move(group));
  }
  return spec;
}

// ValidateJobSpec's errors get the same source prefix as the parser's.
Result<JobSpec> ReadValidJob(const YAML::Node& root) {
  GPOOL_ASSIGN_OR_RETURN(JobSpec spec, ReadJob(root));
  GPOOL_RETURN_IF_ERROR(ValidateJobSpec(spec));
  return spec;
}

}  // namespace

Result<JobSpec> ParseJobSpec(std::string_view text, std::string_view source) {
  return yaml_fields::ReadYamlDocument(text, source, ReadValidJob);
}

Status CheckSpecFileSize(uint64_t bytes, std::string_view source) {
  if (bytes <= kMaxSpecFileBytes) return Status::Ok();
  return Status::ResourceExhausted(std::string(source) + ": the job spec is " + std::to_string(bytes) +
                                   " bytes; spec files are limited to " + std::to_string(kMaxSpecFileBytes) +
                                   " bytes (the coordinator accepts specs of up to --max-spec-bytes, 1048576 by "
                                   "default)");
}

Result<JobSpec> LoadJobSpecFile(const std::string& path) {
  // Refused before reading: parsing a 16 MiB file alone takes seconds.
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec) GPOOL_RETURN_IF_ERROR(CheckSpecFileSize(size, path));
  GPOOL_ASSIGN_OR_RETURN(const std::string text, yaml_fields::ReadUserFile(path, "job spec file"));
  return ParseJobSpec(text, path);
}

}  // namespace gpool
