// `gpool submit`: a job spec from a file, stdin or flags, the job-level flags
// over it, then Submit (and with --wait, WaitForJob from cli_jobs.cc).
#include "client/cli_internal.h"

#include <algorithm>
#include <sstream>

#include "client/format.h"
#include "client/job_spec_file.h"
#include "protocol/types.h"
#include "protocol/validate.h"
#include "topology/quantity.h"

namespace gpool::cli {
namespace {

// A job name from a program path: "/usr/bin/python3" -> "python3".
std::string NameFromCommand(const std::string& program) {
  std::string base = program.substr(program.find_last_of('/') + 1);
  std::string name;
  for (char c : base) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.';
    name += ok ? c : '-';
  }
  if (name.size() > 64) name.resize(64);
  return name.empty() ? "job" : name;
}

}  // namespace

// --gpu-memory SIZE|N%, --gpu-compute PCT, --sharing-qos, --mig PROFILE|auto,
// --cores N. A share or MIG request without --gpus asks for one GPU.
Status ReadShareFlags(const cxxopts::ParseResult& f, Resources& res) {
  if (f.count("gpu-memory")) {
    const std::string value = f["gpu-memory"].as<std::string>();
    if (!value.empty() && value.back() == '%') {
      GPOOL_ASSIGN_OR_RETURN(uint64_t pct, ParseUnsignedFlag("--gpu-memory", value.substr(0, value.size() - 1), 100));
      if (pct == 0) return Status::InvalidArgument("--gpu-memory: a percentage is 1% to 100%");
      res.gpu_memory_pct = static_cast<uint32_t>(pct);
    } else {
      auto mem = topology::ParseMemoryMib(value, topology::Rounding::kUp);
      if (!mem.ok()) return mem.status().WithContext("--gpu-memory");
      res.gpu_memory_mib = *mem;
    }
  }
  if (f.count("gpu-compute")) {
    std::string value = f["gpu-compute"].as<std::string>();
    if (!value.empty() && value.back() == '%') value.pop_back();
    GPOOL_ASSIGN_OR_RETURN(uint64_t pct, ParseUnsignedFlag("--gpu-compute", value, 100));
    res.gpu_compute_pct = static_cast<uint32_t>(pct);
  }
  if (f.count("sharing-qos")) res.sharing_qos = f["sharing-qos"].as<std::string>();
  if (f.count("mig")) res.mig_profile = f["mig"].as<std::string>();
  if (f.count("cores")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t cores, ParseUnsignedFlag("--cores", f["cores"].as<std::string>(), 1024));
    res.cores = static_cast<uint32_t>(cores);
  }
  const bool device_part = f.count("gpu-memory") || f.count("gpu-compute") || f.count("mig");
  if (device_part && res.gpus == 0) res.gpus = 1;
  return Status::Ok();
}

namespace {

Result<JobSpec> SpecFromFlags(const Invocation& inv) {
  const auto& f = inv.flags;
  TaskGroupSpec group;
  group.command = inv.trailing;
  if (f.count("replicas")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t replicas,
                           ParseUnsignedFlag("--replicas", f["replicas"].as<std::string>(), UINT32_MAX));
    group.replicas = static_cast<uint32_t>(replicas);
  }
  if (f.count("gpus")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t gpus, ParseUnsignedFlag("--gpus", f["gpus"].as<std::string>(), UINT32_MAX));
    group.resources.gpus = static_cast<uint32_t>(gpus);
  }
  if (f.count("cpus")) {
    auto cpu = topology::ParseCpuMilli(f["cpus"].as<std::string>());
    if (!cpu.ok()) return cpu.status().WithContext("--cpus");
    group.resources.cpu_milli = *cpu;
  }
  if (f.count("mem")) {
    auto mem = topology::ParseMemoryMib(f["mem"].as<std::string>(), topology::Rounding::kUp);
    if (!mem.ok()) return mem.status().WithContext("--mem");
    group.resources.memory_mib = *mem;
  }
  if (f.count("min-replicas")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t min_replicas,
                           ParseUnsignedFlag("--min-replicas", f["min-replicas"].as<std::string>(), UINT32_MAX));
    if (min_replicas > group.replicas) {
      return Status::InvalidArgument("--min-replicas: " + std::to_string(min_replicas) + " is more than the " +
                                     std::to_string(group.replicas) + " replicas (--replicas)");
    }
    group.min_replicas = static_cast<uint32_t>(min_replicas);
  }
  GPOOL_RETURN_IF_ERROR(ReadShareFlags(f, group.resources));
  if (f.count("gpu-model")) {
    group.resources.gpu_model = f["gpu-model"].as<std::string>();
    if (group.resources.gpus == 0) {
      return Status::InvalidArgument("--gpu-model: needs --gpus (the task asks for no GPUs)");
    }
  }
  for (const auto& kv : inv.env_flags) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--env: expected NAME=VALUE, got '" + kv + "'");
    }
    group.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  JobSpec spec;
  spec.name = f.count("name") ? f["name"].as<std::string>() : NameFromCommand(group.command[0]);
  spec.tasks.push_back(std::move(group));
  return spec;
}

// Flags that belong to a task group, so only to 'submit -- CMD'; with a
// FILE they belong in the file.
constexpr const char* kGroupFlags[] = {"gpus",        "cpus",        "mem", "replicas", "min-replicas", "gpu-model",
                                       "gpu-memory",  "gpu-compute", "sharing-qos", "mig", "cores"};

// --selector/--prefer: "K=V", repeatable or comma-separated; they add to
// (and override keys of) what the spec file has.
Status AddLabelFlags(const Invocation& inv, const char* name, std::map<std::string, std::string>& out) {
  if (!inv.flags.count(name)) return Status::Ok();
  const std::string flag = std::string("--") + name;
  std::map<std::string, std::string> given;
  for (const auto& item : inv.flags[name].as<std::vector<std::string>>()) {
    if (item.find('=') == std::string::npos) {
      return Status::InvalidArgument(flag + ": expected KEY=VALUE, got '" + item + "'");
    }
    GPOOL_RETURN_IF_ERROR(AddKeyValue(flag, "label", item, given));
  }
  for (auto& [key, value] : given) out[key] = std::move(value);
  return Status::Ok();
}

// --toleration: "KEY" or "KEY=VALUE", repeatable or comma-separated; added
// to the file's tolerations.
Status AddTolerationFlags(const Invocation& inv, std::vector<std::string>& out) {
  if (!inv.flags.count("toleration")) return Status::Ok();
  for (const auto& item : inv.flags["toleration"].as<std::vector<std::string>>()) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    GPOOL_RETURN_IF_ERROR(CheckLabelKey("--toleration", "taint", item, key));
    if (eq != std::string::npos) GPOOL_RETURN_IF_ERROR(CheckLabelValue("--toleration", key, item.substr(eq + 1)));
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  return Status::Ok();
}

// The coordinator's rule for JobSpec.user (part of ValidateJobSpec), alone.
Status CheckUser(const std::string& user) {
  JobSpec probe;
  probe.name = "probe";
  probe.tasks.push_back(TaskGroupSpec{.command = {"true"}});
  probe.user = user;
  return ValidateJobSpec(probe);
}

// The job-level flags, for a spec from flags or from a FILE: class, pool,
// user, placement. Checked here so that errors name the flag.
Status ApplyJobFlags(const Invocation& inv, const CliEnv& env, JobSpec& spec) {
  const auto& f = inv.flags;
  if (f.count("class")) {
    spec.priority_class = f["class"].as<std::string>();
    if (!PriorityClassFromString(spec.priority_class)) return NotOneOf<PriorityClass>("--class", spec.priority_class);
  }
  if (f.count("pool")) {
    spec.pool = f["pool"].as<std::string>();
    if (!NodePoolFromString(spec.pool)) return NotOneOf<NodePool>("--pool", spec.pool);
  }
  if (f.count("grace-period")) {
    auto ms = ParseWaitTimeout(f["grace-period"].as<std::string>());
    if (!ms.ok()) return ms.status().WithContext("--grace-period");
    if (*ms > UINT32_MAX) return Status::InvalidArgument("--grace-period: too long");
    spec.grace_period_ms = static_cast<uint32_t>(*ms);
  }
  if (f.count("max-runtime")) {
    auto ms = ParseWaitTimeout(f["max-runtime"].as<std::string>());
    if (!ms.ok()) return ms.status().WithContext("--max-runtime");
    spec.max_runtime_ms = *ms;
  }
  if (f.count("numa")) {
    spec.numa_policy = f["numa"].as<std::string>();
    if (!NumaPolicyFromString(spec.numa_policy)) return NotOneOf<NumaPolicy>("--numa", spec.numa_policy);
  }
  if (f.count("node-policy")) {
    spec.node_policy = f["node-policy"].as<std::string>();
    if (!PlacementPolicyFromString(spec.node_policy)) {
      return NotOneOf<PlacementPolicy>("--node-policy", spec.node_policy);
    }
  }
  if (f.count("gpu-policy")) {
    spec.gpu_policy = f["gpu-policy"].as<std::string>();
    if (!PlacementPolicyFromString(spec.gpu_policy)) return NotOneOf<PlacementPolicy>("--gpu-policy", spec.gpu_policy);
  }
  if (f.count("network")) {
    spec.network_mode = f["network"].as<std::string>();
    if (!NetworkModeFromString(spec.network_mode)) return NotOneOf<NetworkMode>("--network", spec.network_mode);
  }
  if (f.count("network-tier")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t tier, ParseUnsignedFlag("--network-tier", f["network-tier"].as<std::string>(), 8));
    if (tier == 0) return Status::InvalidArgument("--network-tier: tiers count from 1 (the leaf switch)");
    spec.network_tier = static_cast<uint32_t>(tier);
  }
  if (f.count("restart")) {
    spec.restart.policy = f["restart"].as<std::string>();
    if (!RestartPolicyFromString(spec.restart.policy)) return NotOneOf<RestartPolicy>("--restart", spec.restart.policy);
  }
  if (f.count("max-attempts")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t attempts,
                           ParseUnsignedFlag("--max-attempts", f["max-attempts"].as<std::string>(), 100));
    spec.restart.max_attempts = static_cast<uint32_t>(attempts);
  }
  GPOOL_RETURN_IF_ERROR(AddLabelFlags(inv, "selector", spec.node_selector));
  GPOOL_RETURN_IF_ERROR(AddLabelFlags(inv, "prefer", spec.prefer_labels));
  GPOOL_RETURN_IF_ERROR(AddTolerationFlags(inv, spec.tolerations));
  for (const char* name : {"gpu-uuid", "not-gpu-uuid"}) {
    if (!f.count(name)) continue;
    auto& list = std::string_view(name) == "gpu-uuid" ? spec.gpu_uuid_allow : spec.gpu_uuid_deny;
    for (const auto& item : f[name].as<std::vector<std::string>>()) {
      if (item.empty()) return Status::InvalidArgument(std::string("--") + name + ": empty UUID");
      if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
    }
  }
  if (f.count("user")) {
    spec.user = f["user"].as<std::string>();
  } else if (spec.user.empty() && env.getenv) {
    // Fairness between the users of a queue needs a user; the login name is
    // the natural one. A name the coordinator would refuse is reported with
    // the way out rather than sent or silently dropped.
    spec.user = env.getenv("USER").value_or("");
    if (Status valid = CheckUser(spec.user); !valid.ok()) {
      return Status::InvalidArgument("$USER is not a valid gpool user (" + valid.message() +
                                     "); give one with --user NAME");
    }
  }
  return Status::Ok();
}

int RunSubmit(Session& s, const Invocation& inv) {
  const auto& f = inv.flags;
  JobSpec spec;
  if (!inv.trailing.empty()) {
    if (!inv.positionals.empty()) {
      return s.Usage("submit: give either a spec FILE or -- CMD ARGS..., not both (got '" + inv.positionals[0] + "')");
    }
    auto built = SpecFromFlags(inv);
    if (!built.ok()) return s.Fail(built.status());
    spec = std::move(built).value();
  } else {
    if (inv.positionals.size() != 1) return s.Usage("submit: expected a spec FILE, or -- CMD ARGS...");
    for (const char* flag : kGroupFlags) {
      if (f.count(flag)) {
        return s.Usage(std::string("--") + flag + " only applies to 'submit -- CMD'; set resources in the spec file");
      }
    }
    if (!inv.env_flags.empty()) return s.Usage("--env only applies to 'submit -- CMD'; set env in the spec file");
    const std::string& file = inv.positionals[0];
    Result<JobSpec> loaded = Status::Internal("unset");
    if (file == "-") {
      if (s.env.in == nullptr) return s.Usage("submit: no standard input to read the spec from");
      std::ostringstream text;
      text << s.env.in->rdbuf();
      Status size = CheckSpecFileSize(text.str().size(), "<stdin>");
      loaded = size.ok() ? ParseJobSpec(text.str(), "<stdin>") : Result<JobSpec>(size);
    } else {
      loaded = LoadJobSpecFile(file);
    }
    if (!loaded.ok()) return s.Fail(loaded.status());
    spec = std::move(loaded).value();
    if (f.count("name")) spec.name = f["name"].as<std::string>();
  }
  if (f.count("queue")) spec.queue = f["queue"].as<std::string>();
  if (f.count("priority")) {
    auto priority = ParseInt32Flag("--priority", f["priority"].as<std::string>());
    if (!priority.ok()) return s.Fail(priority.status());
    spec.priority = *priority;
  }
  if (Status applied = ApplyJobFlags(inv, s.env, spec); !applied.ok()) return s.Fail(applied);
  if (Status valid = ValidateJobSpec(spec); !valid.ok()) return s.Fail(valid);

  int64_t wait_timeout_ms = 0;
  if (f.count("timeout")) {
    auto t = ParseWaitTimeout(f["timeout"].as<std::string>());
    if (!t.ok()) return s.Fail(t.status().WithContext("--timeout"));
    wait_timeout_ms = *t;
  }

  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  // Chosen here, not left to the client, so that it is the same for every
  // resend of this submission.
  std::string key = f.count("idempotency-key") ? f["idempotency-key"].as<std::string>() : Client::NewIdempotencyKey();
  auto reply = (*client)->Submit(spec, key);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else {
    s.out << "job " << reply->job_id << " submitted";
    if (reply->duplicate) s.out << " (already submitted earlier with this idempotency key)";
    s.out << "\n";
  }
  if (f["wait"].as<bool>()) return WaitForJob(s, JobId(reply->job_id), wait_timeout_ms);
  return kExitOk;
}

void SubmitOptions(cxxopts::Options& o) {
  o.add_options("submit")
      ("gpus", "GPUs per task (default 0)", cxxopts::value<std::string>(), "N")
      ("cpus", "CPU cores per task: 2, 0.5 or 500m (default 0)", cxxopts::value<std::string>(), "C")
      ("mem", "memory per task: 4Gi, 512Mi, or a number of MiB (default 0)", cxxopts::value<std::string>(), "M")
      ("replicas", "number of tasks (default 1)", cxxopts::value<std::string>(), "R")
      ("e,env", "environment variable for the tasks; repeatable", cxxopts::value<std::string>(), "K=V")
      ("name", "job name (default: the program's name, or the spec's name)", cxxopts::value<std::string>(), "NAME")
      ("queue", "queue (default \"default\")", cxxopts::value<std::string>(), "Q")
      ("priority", "priority within the class; higher runs first (default 0)", cxxopts::value<std::string>(), "P")
      ("class", "priority class: high (may preempt low jobs of its queue), medium (default) or low (preemptible)",
       cxxopts::value<std::string>(), "CLASS")
      ("pool", "node pool to run in: public (default), pooled or exclusive", cxxopts::value<std::string>(), "POOL")
      ("grace-period", "SIGTERM to SIGKILL when the coordinator stops its tasks (eviction, drain): 30s, 5m "
       "(default: the coordinator's --preempt-grace-ms)", cxxopts::value<std::string>(), "S")
      ("max-runtime", "stop each task once it has run this long (SIGTERM, the grace period, SIGKILL; reason "
       "\"time limit\"): 90m, 2h; a job with one may run on nodes held for a starving job when it ends first",
       cxxopts::value<std::string>(), "D")
      ("restart", "when to requeue: on-node-loss (default: tasks lost with their node), on-failure (also "
                  "non-zero exits) or never", cxxopts::value<std::string>(), "POLICY")
      ("max-attempts", "requeues allowed by --restart before the job fails (default 3, at most 100)",
       cxxopts::value<std::string>(), "N")
      ("network", "switch placement: none (default), best-effort (the fewest switches) or single-switch "
                  "(under one switch of --network-tier, or wait)", cxxopts::value<std::string>(), "MODE")
      ("network-tier", "with --network: the highest switch tier it may span, 1 = leaf (default 1)",
       cxxopts::value<std::string>(), "N")
      ("numa", "where a task's GPUs sit: none (default), best-effort (one NUMA node if possible) or "
               "single-numa-node (one NUMA node or not on that node)", cxxopts::value<std::string>(), "POLICY")
      ("node-policy", "which node each task goes to: default (the cluster's strategy), binpack (fullest node "
                      "first) or spread (emptiest node first)", cxxopts::value<std::string>(), "POLICY")
      ("gpu-policy", "which device a GPU share, MIG instance or vendor share (vXPU, sGPU, vGCU, vNPU) goes to: "
                     "default, binpack (fullest device with room) or spread (emptiest device); whole-device vendor "
                     "picks keep their topology rules", cxxopts::value<std::string>(), "POLICY")
      ("user", "user, for fairness inside the queue (default: $USER, or the spec's user)",
       cxxopts::value<std::string>(), "USER")
      ("selector", "run only on nodes with this label; repeatable or comma-separated",
       cxxopts::value<std::vector<std::string>>(), "K=V")
      ("prefer", "prefer nodes with this label; repeatable or comma-separated",
       cxxopts::value<std::vector<std::string>>(), "K=V")
      ("toleration", "accept nodes with this taint; repeatable or comma-separated",
       cxxopts::value<std::vector<std::string>>(), "KEY[=VALUE]")
      ("min-replicas", "start once this many tasks fit; the rest grow into idle GPUs (default: all)",
       cxxopts::value<std::string>(), "N")
      ("gpu-model", "every GPU of a task must be this model, e.g. A100 (needs --gpus)",
       cxxopts::value<std::string>(), "MODEL")
      ("gpu-memory", "a share of each GPU instead of the whole device: memory as a size (10Gi) or a "
                     "percentage of the device (25%); --gpus defaults to 1", cxxopts::value<std::string>(), "SIZE|P%")
      ("gpu-compute", "compute of each GPU share in percent, 1-100 (default: none reserved)",
       cxxopts::value<std::string>(), "PCT")
      ("sharing-qos", "how shares of a GPU split compute: best-effort (default), fixed-share (capped at "
                      "--gpu-compute) or burst-share (guaranteed, may use idle compute)",
       cxxopts::value<std::string>(), "QOS")
      ("mig", "a MIG instance: a profile (1g.10gb), or auto (the smallest that holds --gpu-memory/--gpu-compute)",
       cxxopts::value<std::string>(), "PROFILE")
      ("cores", "core-level request on devices with addressable cores (AWS NeuronCores), instead of --gpus",
       cxxopts::value<std::string>(), "N")
      ("gpu-uuid", "only these devices; repeatable or comma-separated", cxxopts::value<std::vector<std::string>>(),
       "UUID")
      ("not-gpu-uuid", "never these devices; repeatable or comma-separated",
       cxxopts::value<std::vector<std::string>>(), "UUID")
      ("wait", "then wait for the job to finish, like 'gpool wait'",
       cxxopts::value<bool>()->default_value("false"))
      ("timeout", "with --wait: give up after this long (90, 90s, 5m, 2h)", cxxopts::value<std::string>(), "S")
      ("idempotency-key", "deduplication key (default: a random one)", cxxopts::value<std::string>(), "KEY");
}

// --env values may contain commas, which cxxopts would split; take them out
// before it parses the rest.
std::optional<int> PrepareSubmit(Session& s, Invocation& inv, std::vector<std::string>& rest) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    if (a == "--env" || a == "-e") {
      if (i + 1 >= rest.size()) return s.Usage(a + ": expected NAME=VALUE");
      inv.env_flags.push_back(rest[++i]);
    } else if (a.rfind("--env=", 0) == 0) {
      inv.env_flags.push_back(a.substr(6));
    } else {
      kept.push_back(a);
    }
  }
  rest = std::move(kept);
  return std::nullopt;
}

}  // namespace

const CommandDef kSubmitCommand = {
    .name = "submit",
    .synopsis = "FILE | [flags] -- CMD ARGS...",
    .summary = "submit a job from a spec file (YAML or JSON; - reads stdin) or from flags",
    .min_args = 0,
    .max_args = 1,
    .add_options = SubmitOptions,
    .run = RunSubmit,
    .prepare = PrepareSubmit,
    .takes_trailing_command = true,
};

}  // namespace gpool::cli
