#include "client/cli.h"

#include <cxxopts.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <span>
#include <sstream>
#include <thread>

#include "client/format.h"
#include "client/job_spec_file.h"
#include "client/topology_file.h"
#include "client/ufm_convert.h"
#include "protocol/envelope.h"
#include "protocol/types.h"
#include "protocol/validate.h"
#include "topology/quantity.h"

#ifndef GPOOL_VERSION
#define GPOOL_VERSION "0.0.0"
#endif

namespace gpool {
namespace {

constexpr char kDefaultCoordinator[] = "tcp://127.0.0.1:7400";
constexpr int64_t kWaitPollMs = 200;
// The wire decoder accepts strings up to 8 MiB (wire::DecodeLimits).
constexpr uint64_t kMaxLogBytes = 8 * 1024 * 1024;

// --- Small parsers -------------------------------------------------------------

Result<uint64_t> ParseUnsignedText(std::string_view text, uint64_t max) {
  if (text.empty() || text.size() > 20) return Status::InvalidArgument("");
  unsigned __int128 v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Status::InvalidArgument("");
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > max) return Status::InvalidArgument("");
  return static_cast<uint64_t>(v);
}

Result<uint64_t> ParseUnsignedFlag(std::string_view flag, const std::string& text, uint64_t max) {
  auto v = ParseUnsignedText(text, max);
  if (!v.ok()) {
    return Status::InvalidArgument(std::string(flag) + ": expected an integer from 0 to " + std::to_string(max) +
                                   ", got '" + text + "'");
  }
  return v;
}

Result<int32_t> ParseInt32Flag(std::string_view flag, const std::string& text) {
  std::string_view digits = text;
  bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.remove_prefix(1);
  auto v = ParseUnsignedText(digits, static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) + (negative ? 1 : 0));
  if (!v.ok()) return Status::InvalidArgument(std::string(flag) + ": expected an integer, got '" + text + "'");
  return static_cast<int32_t>(negative ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v));
}

// A replica id: a positive decimal integer.
Result<uint64_t> ParseReplicaId(std::string_view text) {
  auto v = ParseUnsignedText(text, std::numeric_limits<uint64_t>::max());
  if (!v.ok() || *v == 0) {
    return Status::InvalidArgument("expected a replica ID (a positive integer), got '" + std::string(text) + "'");
  }
  return v;
}

// An endpoint other replicas or clients connect to: tcp://HOST:PORT (PORT
// 1-65535; not the bind-only wildcard host '*'), ipc://PATH or inproc://NAME.
Status CheckEndpoint(std::string_view flag, const std::string& text) {
  const Status error = Status::InvalidArgument(std::string(flag) +
                                               ": expected tcp://HOST:PORT, ipc://PATH or inproc://NAME, got '" +
                                               text + "'");
  for (char c : text) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return error;
  }
  for (std::string_view scheme : {"ipc://", "inproc://"}) {
    if (text.rfind(scheme, 0) == 0) return text.size() > scheme.size() ? Status::Ok() : error;
  }
  if (text.rfind("tcp://", 0) != 0) return error;
  std::string_view rest = std::string_view(text).substr(6);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return error;
  auto port = ParseUnsignedText(rest.substr(colon + 1), 65535);
  if (!port.ok() || *port == 0) return error;
  if (rest.substr(0, colon) == "*") {
    return Status::InvalidArgument(std::string(flag) + ": '" + text +
                                   "' is a bind address; give one that others can connect to");
  }
  return Status::Ok();
}

std::string JoinIds(const std::vector<uint64_t>& ids) {
  std::string out;
  for (uint64_t id : ids) {
    if (!out.empty()) out += ", ";
    out += std::to_string(id);
  }
  return out.empty() ? "none" : out;
}

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

// --- Labels and taints -------------------------------------------------------------

constexpr size_t kMaxLabelLength = 63;

bool IsLabelChar(char c, std::string_view extra) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         extra.find(c) != std::string_view::npos;
}

// Labels, taints, node selectors and tolerations share the coordinator's
// label rules (protocol/validate.h); these checks name the command or flag
// (`context`, e.g. "node taint" or "--selector") and what the key is for
// (`kind`: "label" or "taint"), so the message says where to look.

// 1-63 of [A-Za-z0-9._/-].
Status CheckLabelKey(std::string_view context, std::string_view kind, const std::string& arg,
                     const std::string& key) {
  const std::string where = std::string(context) + ": ";
  if (key.empty()) return Status::InvalidArgument(where + "'" + arg + "': the " + std::string(kind) + " key is empty");
  if (key.size() > kMaxLabelLength) {
    return Status::InvalidArgument(where + std::string(kind) + " key '" + key + "' is longer than 63 characters");
  }
  for (char c : key) {
    if (!IsLabelChar(c, "._/-")) {
      return Status::InvalidArgument(where + std::string(kind) + " key '" + key +
                                     "' may only contain letters, digits, '.', '_', '/' and '-'");
    }
  }
  return Status::Ok();
}

// At most 63 of [A-Za-z0-9._-]; may be empty.
Status CheckLabelValue(std::string_view context, const std::string& key, const std::string& value) {
  const std::string where = std::string(context) + ": ";
  if (value.size() > kMaxLabelLength) {
    return Status::InvalidArgument(where + "the value of " + key + " is longer than 63 characters");
  }
  for (char c : value) {
    if (!IsLabelChar(c, "._-")) {
      return Status::InvalidArgument(where + "the value of " + key + " ('" + value +
                                     "') may only contain letters, digits, '.', '_' and '-'");
    }
  }
  return Status::Ok();
}

// "KEY=VALUE" into `out`; a key given twice must keep its value.
Status AddKeyValue(std::string_view context, std::string_view kind, const std::string& arg,
                   std::map<std::string, std::string>& out) {
  const size_t eq = arg.find('=');
  std::string key = arg.substr(0, eq);
  std::string value = arg.substr(eq + 1);
  GPOOL_RETURN_IF_ERROR(CheckLabelKey(context, kind, arg, key));
  GPOOL_RETURN_IF_ERROR(CheckLabelValue(context, key, value));
  auto [it, inserted] = out.emplace(key, value);
  if (!inserted && it->second != value) {
    return Status::InvalidArgument(std::string(context) + ": " + key + " is set twice ('" + it->second + "' and '" +
                                   value + "')");
  }
  return Status::Ok();
}

// kubectl style: "team=vision" sets team, "team-" removes it. `kind` is
// "label" or "taint"; `context` is "node label" or "node taint".
Status ParseKeyValueArgs(std::string_view context, std::string_view kind, std::span<const std::string> args,
                         std::map<std::string, std::string>& set, std::vector<std::string>& remove) {
  for (const std::string& arg : args) {
    if (arg.find('=') != std::string::npos) {
      GPOOL_RETURN_IF_ERROR(AddKeyValue(context, kind, arg, set));
    } else if (!arg.empty() && arg.back() == '-') {
      std::string key = arg.substr(0, arg.size() - 1);
      GPOOL_RETURN_IF_ERROR(CheckLabelKey(context, kind, arg, key));
      if (std::find(remove.begin(), remove.end(), key) == remove.end()) remove.push_back(std::move(key));
    } else {
      return Status::InvalidArgument(std::string(context) + ": '" + arg + "' is neither KEY=VALUE (set a " +
                                     std::string(kind) + ") nor KEY- (remove one)");
    }
  }
  for (const auto& key : remove) {
    if (set.count(key)) return Status::InvalidArgument(std::string(context) + ": " + key + " is both set and removed");
  }
  return Status::Ok();
}

// --- One run of the CLI ------------------------------------------------------------

// A parsed command line.
struct Invocation {
  std::string command;
  cxxopts::ParseResult flags;
  std::vector<std::string> positionals;
  std::vector<std::string> trailing;   // after "--" (submit's command)
  std::vector<std::string> env_flags;  // --env K=V, in order
};

class Session {
 public:
  Session(std::ostream& out, std::ostream& err, const ClientFactory& factory, const CliEnv& env)
      : out(out), err(err), env(env), factory_(factory) {}

  std::ostream& out;
  std::ostream& err;
  const CliEnv& env;
  ClientOptions options;
  bool json = false;

  // The client, created on first use.
  Result<Client*> client() {
    if (!client_) {
      if (!factory_) return Status::Internal("no client factory");
      GPOOL_ASSIGN_OR_RETURN(client_, factory_(options));
      if (!client_) return Status::Internal("client factory returned nothing");
    }
    return client_.get();
  }

  int Fail(const Status& status) {
    err << "gpool: " << status.ToString() << "\n";
    return ExitCodeFor(status);
  }

  int Usage(const std::string& message) {
    err << "gpool: " << Status::InvalidArgument(message).ToString() << "\n"
        << "Run 'gpool --help' for usage.\n";
    return kExitUsage;
  }

  int64_t WallMs() const { return env.clock->WallMs(); }

 private:
  const ClientFactory& factory_;
  std::unique_ptr<Client> client_;
};

// --- Commands ------------------------------------------------------------------------

int WaitForJob(Session& s, JobId job, int64_t timeout_ms) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  const int64_t start = s.env.clock->MonoMs();
  while (true) {
    auto reply = (*client)->GetJob(job);
    if (!reply.ok()) return s.Fail(reply.status());
    const JobSummary& summary = reply->summary;
    auto state = JobStateFromString(summary.state);
    if (state && IsTerminal(*state)) {
      if (s.json) {
        s.out << ToJson(summary) << "\n";
      } else {
        s.out << "job " << job.value() << " " << summary.state;
        if (*state != JobState::kSucceeded && !summary.reason.empty()) s.out << ": " << summary.reason;
        s.out << "\n";
      }
      return *state == JobState::kSucceeded ? kExitOk : kExitJobUnsuccessful;
    }
    const int64_t waited = s.env.clock->MonoMs() - start;
    if (timeout_ms > 0 && waited >= timeout_ms) {
      return s.Fail(Status::DeadlineExceeded("job " + std::to_string(job.value()) + " is still " + summary.state +
                                             " after " + FormatDuration(waited)));
    }
    int64_t pause = kWaitPollMs;
    if (timeout_ms > 0) pause = std::min(pause, timeout_ms - waited);
    s.env.sleep_ms(pause);
  }
}

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
    if (!IsPriorityClass(spec.priority_class)) {
      return Status::InvalidArgument("--class: '" + spec.priority_class + "' is not high, medium or low");
    }
  }
  if (f.count("pool")) {
    spec.pool = f["pool"].as<std::string>();
    if (!IsNodePool(spec.pool)) {
      return Status::InvalidArgument("--pool: '" + spec.pool + "' is not public, pooled or exclusive");
    }
  }
  if (f.count("numa")) {
    spec.numa_policy = f["numa"].as<std::string>();
    if (spec.numa_policy != "none" && spec.numa_policy != "best-effort" && spec.numa_policy != "single-numa-node") {
      return Status::InvalidArgument("--numa: '" + spec.numa_policy + "' is not none, best-effort or single-numa-node");
    }
  }
  if (f.count("network")) {
    spec.network_mode = f["network"].as<std::string>();
    if (spec.network_mode != "none" && spec.network_mode != "best-effort" && spec.network_mode != "single-switch") {
      return Status::InvalidArgument("--network: '" + spec.network_mode +
                                     "' is not none, best-effort or single-switch");
    }
  }
  if (f.count("network-tier")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t tier, ParseUnsignedFlag("--network-tier", f["network-tier"].as<std::string>(), 8));
    if (tier == 0) return Status::InvalidArgument("--network-tier: tiers count from 1 (the leaf switch)");
    spec.network_tier = static_cast<uint32_t>(tier);
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
      loaded = ParseJobSpec(text.str(), "<stdin>");
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

int RunJobs(Session& s, const Invocation& inv) {
  auto limit = ParseUnsignedFlag("--limit", inv.flags["limit"].as<std::string>(), UINT32_MAX);
  if (!limit.ok()) return s.Fail(limit.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListJobs(inv.flags["all"].as<bool>(), static_cast<uint32_t>(*limit));
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatJobsTable(*reply, s.WallMs()));
  return kExitOk;
}

int RunJob(Session& s, const Invocation& inv) {
  auto job = ParseJobId(inv.positionals[0]);
  if (!job.ok()) return s.Fail(job.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->GetJob(*job);
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatJobDetail(*reply, s.WallMs()));
  return kExitOk;
}

int RunCancel(Session& s, const Invocation& inv) {
  auto job = ParseJobId(inv.positionals[0]);
  if (!job.ok()) return s.Fail(job.status());
  auto grace = ParseWaitTimeout(inv.flags["grace"].as<std::string>());
  if (!grace.ok()) return s.Fail(grace.status().WithContext("--grace"));
  if (*grace > UINT32_MAX) return s.Fail(Status::InvalidArgument("--grace: too long"));
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->CancelJob(*job, static_cast<uint32_t>(*grace));
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) : "job " + std::to_string(reply->job_id) + " " + reply->state) << "\n";
  return kExitOk;
}

int RunLogs(Session& s, const Invocation& inv) {
  auto task = ParseTaskRef(inv.positionals[0]);
  if (!task.ok()) return s.Fail(task.status());
  auto bytes = ParseUnsignedFlag("--bytes", inv.flags["bytes"].as<std::string>(), kMaxLogBytes);
  if (!bytes.ok()) return s.Fail(bytes.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->GetTaskLog(task->job, task->index, static_cast<uint32_t>(*bytes));
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << LogToJson(task->job, task->index, *reply) << "\n";
    return kExitOk;
  }
  s.out << reply->data;
  s.out.flush();
  if (reply->truncated) {
    s.err << "(showing the last " << reply->data.size() << " of " << reply->size
          << " bytes; --bytes N shows more)\n";
  }
  return kExitOk;
}

int RunWait(Session& s, const Invocation& inv) {
  auto job = ParseJobId(inv.positionals[0]);
  if (!job.ok()) return s.Fail(job.status());
  int64_t timeout_ms = 0;
  if (inv.flags.count("timeout")) {
    auto t = ParseWaitTimeout(inv.flags["timeout"].as<std::string>());
    if (!t.ok()) return s.Fail(t.status().WithContext("--timeout"));
    timeout_ms = *t;
  }
  return WaitForJob(s, *job, timeout_ms);
}

int RunNodes(Session& s, const Invocation& inv) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListNodes(inv.flags.count("devices") > 0);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
    return kExitOk;
  }
  s.out << FormatNodesTable(*reply, s.WallMs());
  if (inv.flags["devices"].as<bool>()) s.out << FormatNodeDevices(*reply);
  return kExitOk;
}

int RunStatus(Session& s, const Invocation&) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ClusterStatus();
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatClusterStatus(*reply));
  return kExitOk;
}

constexpr char kReplicaAddUsage[] =
    "admin replica add ID --peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT]";
constexpr char kReplicaRemoveUsage[] = "admin replica remove ID";
constexpr char kReplicaListUsage[] = "admin replica list";

int RunReplicaChange(Session& s, const Invocation& inv, const std::string& op) {
  const auto& f = inv.flags;
  const bool add = op == "add";
  if (inv.positionals.size() != 3) {
    return s.Usage("usage: gpool " + std::string(add ? kReplicaAddUsage : kReplicaRemoveUsage));
  }
  if (!add) {
    for (const char* flag : {"peer-addr", "client-addr", "worker-addr"}) {
      if (f.count(flag)) return s.Usage(std::string("--") + flag + " only applies to 'admin replica add'");
    }
  } else if (!f.count("peer-addr")) {
    return s.Usage("admin replica add: --peer-addr is required (usage: gpool " + std::string(kReplicaAddUsage) + ")");
  }
  auto id = ParseReplicaId(inv.positionals[2]);
  if (!id.ok()) return s.Fail(id.status());
  gpool::ChangeReplicas request;
  request.op = op;
  request.replica_id = *id;
  if (add) {
    request.peer_address = f["peer-addr"].as<std::string>();
    if (Status valid = CheckEndpoint("--peer-addr", request.peer_address); !valid.ok()) return s.Fail(valid);
    if (f.count("client-addr")) {
      request.client_address = f["client-addr"].as<std::string>();
      if (Status valid = CheckEndpoint("--client-addr", request.client_address); !valid.ok()) return s.Fail(valid);
    }
    if (f.count("worker-addr")) {
      request.worker_address = f["worker-addr"].as<std::string>();
      if (Status valid = CheckEndpoint("--worker-addr", request.worker_address); !valid.ok()) return s.Fail(valid);
    }
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ChangeReplicas(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else {
    s.out << "replica " << *id << (add ? " added" : " removed") << "; voters now " << JoinIds(reply->voters)
          << " (committed at index " << reply->index << ")\n";
  }
  return kExitOk;
}

int RunReplicaList(Session& s, const Invocation& inv) {
  if (inv.positionals.size() != 2) return s.Usage("usage: gpool " + std::string(kReplicaListUsage));
  for (const char* flag : {"peer-addr", "client-addr", "worker-addr"}) {
    if (inv.flags.count(flag)) return s.Usage(std::string("--") + flag + " only applies to 'admin replica add'");
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ClusterStatus();
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatReplicasTable(*reply));
  return kExitOk;
}

int RunAdmin(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.empty()) return s.Usage("admin: expected a subcommand: replica add|remove|list");
  if (p[0] != "replica") return s.Usage("admin: unknown subcommand '" + p[0] + "'; expected 'replica'");
  if (p.size() < 2) return s.Usage("admin replica: expected add, remove or list");
  if (p[1] == "add" || p[1] == "remove") return RunReplicaChange(s, inv, p[1]);
  if (p[1] == "list") return RunReplicaList(s, inv);
  return s.Usage("admin replica: unknown subcommand '" + p[1] + "'; expected add, remove or list");
}

// --- node -----------------------------------------------------------------------------

constexpr char kNodeShowUsage[] = "node show NAME";
constexpr char kNodeCordonUsage[] = "node cordon NAME";
constexpr char kNodeUncordonUsage[] = "node uncordon NAME";
constexpr char kNodeLabelUsage[] = "node label NAME KEY=VALUE... KEY-...";
constexpr char kNodePoolUsage[] = "node pool NAME public|pooled|exclusive";
constexpr char kNodeTaintUsage[] = "node taint NAME KEY=VALUE... KEY-...";

std::string JoinLabels(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    if (!out.empty()) out += ", ";
    out += key + "=" + value;
  }
  return out.empty() ? "none" : out;
}

// `node show NAME`: the node's entry of ListNodes (there is no request for one node).
int RunNodeShow(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  const std::string usage_hint = " (usage: gpool " + std::string(kNodeShowUsage) + ")";
  if (p.size() < 2) return s.Usage("node show: missing the node NAME" + usage_hint);
  if (p.size() > 2) {
    return s.Usage("node show: expected one node NAME, got " + std::to_string(p.size() - 1) + " arguments" +
                   usage_hint);
  }
  const std::string& name = p[1];
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListNodes(/*devices=*/true);
  if (!reply.ok()) return s.Fail(reply.status());
  auto it = std::find_if(reply->nodes.begin(), reply->nodes.end(),
                         [&](const NodeSummary& node) { return node.name == name; });
  if (it == reply->nodes.end()) return s.Fail(Status::NotFound("node " + name + " is not registered"));
  s.out << (s.json ? ToJson(*it) + "\n" : FormatNodeDetail(*it, s.WallMs()));
  return kExitOk;
}

int RunNode(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.empty()) return s.Usage("node: expected a subcommand: show, cordon, uncordon, label, pool or taint");
  const std::string& op = p[0];
  if (op == "show") return RunNodeShow(s, inv);
  const char* usage = nullptr;
  if (op == "cordon") {
    usage = kNodeCordonUsage;
  } else if (op == "uncordon") {
    usage = kNodeUncordonUsage;
  } else if (op == "label") {
    usage = kNodeLabelUsage;
  } else if (op == "pool") {
    usage = kNodePoolUsage;
  } else if (op == "taint") {
    usage = kNodeTaintUsage;
  } else {
    return s.Usage("node: unknown subcommand '" + op + "'; expected show, cordon, uncordon, label, pool or taint");
  }
  const std::string usage_hint = " (usage: gpool " + std::string(usage) + ")";
  if (p.size() < 2) return s.Usage("node " + op + ": missing the node NAME" + usage_hint);

  gpool::UpdateNode request;
  request.node = p[1];
  request.op = op;
  if (op == "cordon" || op == "uncordon") {
    if (p.size() > 2) return s.Usage("node " + op + ": expected one node NAME, got " + std::to_string(p.size() - 1) +
                                     " arguments" + usage_hint);
  } else if (op == "label" || op == "taint") {
    if (p.size() < 3) {
      return s.Usage("node " + op + ": expected at least one KEY=VALUE (set) or KEY- (remove)" + usage_hint);
    }
    const auto args = std::span<const std::string>(p).subspan(2);
    Status parsed = op == "label"
                        ? ParseKeyValueArgs("node label", "label", args, request.labels, request.remove_labels)
                        : ParseKeyValueArgs("node taint", "taint", args, request.taints, request.remove_taints);
    if (!parsed.ok()) return s.Fail(parsed);
  } else {  // pool
    if (p.size() != 3) return s.Usage("node pool: expected a node NAME and a POOL" + usage_hint);
    request.pool = p[2];
    if (!IsNodePool(request.pool)) {
      return s.Fail(Status::InvalidArgument("node pool: unknown pool '" + request.pool +
                                            "'; expected public, pooled or exclusive"));
    }
  }
  // What the coordinator checks too (the node name, the label rules), before anything is sent.
  if (Status valid = ValidateUpdateNode(request); !valid.ok()) return s.Fail(valid);

  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->UpdateNode(request);
  if (!reply.ok()) return s.Fail(reply.status());
  const NodeSummary& node = reply->node;
  const std::string name = node.name.empty() ? request.node : node.name;
  // Operator labels overlay the node's own (its worker's); removing one
  // brings back the node's value rather than deleting the key.
  for (const auto& key : request.remove_labels) {
    auto still = node.labels.find(key);
    if (still != node.labels.end()) {
      s.err << "gpool: note: " << key << " is still " << key << "=" << still->second << ": it comes from node "
            << name << "'s own labels, which 'node label' can override but not remove\n";
    }
  }
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (op == "cordon" || op == "uncordon") {
    s.out << "node " << name << (node.cordoned ? " cordoned" : " uncordoned") << "\n";
  } else if (op == "label") {
    s.out << "node " << name << " labels: " << JoinLabels(node.labels) << "\n";
  } else if (op == "taint") {
    s.out << "node " << name << " taints: " << JoinLabels(node.taints) << "\n";
  } else {
    s.out << "node " << name << " moved to pool " << (node.pool.empty() ? request.pool : node.pool) << "\n";
  }
  return kExitOk;
}

// --- queue ----------------------------------------------------------------------------

constexpr char kQueueCreateUsage[] =
    "queue create NAME [--parent P] [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]";
constexpr char kQueueUpdateUsage[] = "queue update NAME [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]";
constexpr char kQueueDeleteUsage[] = "queue delete NAME";
constexpr char kQueueTreeUsage[] = "queue tree";
constexpr const char* kQuotaFlags[] = {"capability", "deserved", "guarantee"};

// The quota flags given, parsed into `spec`; the others are left as they are.
Status ApplyQuotaFlags(const Invocation& inv, QueueSpec& spec) {
  const auto& f = inv.flags;
  if (f.count("capability")) {
    GPOOL_ASSIGN_OR_RETURN(spec.capability, ParseQuota("--capability", f["capability"].as<std::string>()));
  }
  if (f.count("deserved")) {
    GPOOL_ASSIGN_OR_RETURN(spec.deserved, ParseQuota("--deserved", f["deserved"].as<std::string>()));
  }
  if (f.count("guarantee")) {
    GPOOL_ASSIGN_OR_RETURN(spec.guarantee, ParseQuota("--guarantee", f["guarantee"].as<std::string>()));
  }
  return Status::Ok();
}

bool AnyQuotaFlag(const Invocation& inv) {
  return std::any_of(std::begin(kQuotaFlags), std::end(kQuotaFlags),
                     [&](const char* flag) { return inv.flags.count(flag) > 0; });
}

// "capability gpu=16,cpu=64; deserved gpu=8; guarantee none"
std::string QuotasText(const QueueSpec& spec) {
  return "capability " + FormatQuota(spec.capability) + "; deserved " + FormatQuota(spec.deserved) +
         "; guarantee " + FormatQuota(spec.guarantee);
}

// Rejects flags that do not apply to `op` (a usage error, before anything is sent).
std::optional<std::string> MisplacedQueueFlag(const Invocation& inv, const std::string& op) {
  if (op != "create" && inv.flags.count("parent")) return "--parent only applies to 'queue create'";
  if (op == "delete" || op == "tree") {
    for (const char* flag : kQuotaFlags) {
      if (inv.flags.count(flag)) return std::string("--") + flag + " only applies to 'queue create' and 'queue update'";
    }
  }
  return std::nullopt;
}

int RunQueueTree(Session& s) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListQueues();
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatQueueTree(*reply));
  return kExitOk;
}

// The queue as it is now, for an update to overlay its flags on.
Result<QueueSpec> CurrentQueueSpec(Client& client, const std::string& name) {
  GPOOL_ASSIGN_OR_RETURN(ListQueuesReply queues, client.ListQueues());
  for (const auto& queue : queues.queues) {
    if (queue.spec.name == name) return queue.spec;
  }
  return Status::NotFound("queue '" + name + "' does not exist");
}

int RunQueue(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.empty()) return s.Usage("queue: expected a subcommand: create, update, delete or tree");
  const std::string& op = p[0];
  const char* usage = nullptr;
  if (op == "create") {
    usage = kQueueCreateUsage;
  } else if (op == "update") {
    usage = kQueueUpdateUsage;
  } else if (op == "delete") {
    usage = kQueueDeleteUsage;
  } else if (op == "tree") {
    usage = kQueueTreeUsage;
  } else {
    return s.Usage("queue: unknown subcommand '" + op + "'; expected create, update, delete or tree");
  }
  const std::string usage_hint = " (usage: gpool " + std::string(usage) + ")";
  if (auto misplaced = MisplacedQueueFlag(inv, op)) return s.Usage(*misplaced);
  if (op == "tree") {
    if (p.size() != 1) return s.Usage("queue tree: takes no arguments" + usage_hint);
    return RunQueueTree(s);
  }
  if (p.size() != 2) {
    return s.Usage("queue " + op + ": expected one queue NAME, got " + std::to_string(p.size() - 1) + " arguments" +
                   usage_hint);
  }
  if (op == "update" && !AnyQuotaFlag(inv)) {
    return s.Usage("queue update: nothing to change; give --capability, --deserved or --guarantee" + usage_hint);
  }

  gpool::UpdateQueue request;
  request.op = op;
  request.spec.name = p[1];
  if (inv.flags.count("parent")) request.spec.parent = inv.flags["parent"].as<std::string>();
  if (Status parsed = ApplyQuotaFlags(inv, request.spec); !parsed.ok()) return s.Fail(parsed);
  // What the coordinator checks on its own (names, resources, quota order),
  // before anything is sent. For an update this covers the flags given; the
  // queue's other quotas are checked once they are known, below.
  if (Status valid = ValidateUpdateQueue(request); !valid.ok()) return s.Fail(valid);

  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  if (op == "update") {
    // UpdateQueue replaces all three quotas: start from the queue as it is,
    // so the quotas not named on the command line stay.
    auto current = CurrentQueueSpec(**client, request.spec.name);
    if (!current.ok()) return s.Fail(current.status());
    request.spec = std::move(current).value();
    // Parsed once already, above; it cannot fail now.
    if (Status parsed = ApplyQuotaFlags(inv, request.spec); !parsed.ok()) return s.Fail(parsed);
    if (Status valid = ValidateUpdateQueue(request); !valid.ok()) {
      return s.Fail(valid.WithContext("queue " + request.spec.name + " with this update"));
    }
  }
  auto reply = (*client)->UpdateQueue(request);
  if (!reply.ok()) return s.Fail(reply.status());
  const QueueSpec& spec = reply->queue.spec;
  const std::string name = spec.name.empty() ? request.spec.name : spec.name;
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (op == "create") {
    s.out << "queue " << name << " created under " << (spec.parent.empty() ? request.spec.parent : spec.parent)
          << ": " << QuotasText(spec) << "\n";
  } else if (op == "update") {
    s.out << "queue " << name << " updated: " << QuotasText(spec) << "\n";
  } else {
    s.out << "queue " << name << " deleted\n";
  }
  return kExitOk;
}

// --- topology -------------------------------------------------------------------------

constexpr char kTopologyApplyUsage[] = "topology apply FILE [--dry-run]";
constexpr char kTopologyShowUsage[] = "topology show";
constexpr char kTopologyConvertUsage[] = "topology convert FILE [--out FILE]";

// "1 node", "3 nodes".
std::string Count(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// `topology apply FILE`: one UpdateNode per node whose tier labels differ
// from the file's; unregistered nodes are warned about and skipped, so a
// file may name nodes before they join. Stops at the first failed update:
// applying again finishes the job, since nodes already right are skipped.
int RunTopologyApply(Session& s, const Invocation& inv) {
  const std::string& file = inv.positionals[1];
  const bool dry_run = inv.flags["dry-run"].as<bool>();
  auto topology = LoadTopologyFile(file);
  if (!topology.ok()) return s.Fail(topology.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto nodes = (*client)->ListNodes();
  if (!nodes.ok()) return s.Fail(nodes.status());
  const TopologyApplyPlan plan = PlanTopologyApply(*topology, *nodes);
  for (const auto& name : plan.unregistered) {
    s.err << "gpool: warning: " << name << " is in " << file
          << " but is not a registered node; skipped (apply again once it has joined)\n";
  }
  for (const auto& [name, labels] : plan.not_in_file) {
    s.err << "gpool: note: " << name << " is not in " << file << "; its labels " << DescribeTierLabels(labels)
          << " are left as they are\n";
  }
  size_t sent = 0;
  for (const auto& update : plan.updates) {
    const std::string& name = update.request.node;
    if (dry_run) {
      if (!s.json) s.out << "would update " << name << ": " << DescribeTierChanges(update.changes) << "\n";
      continue;
    }
    // Checked by the parser already; this guards what goes on the wire.
    if (Status valid = ValidateUpdateNode(update.request); !valid.ok()) return s.Fail(valid.WithContext(name));
    auto reply = (*client)->UpdateNode(update.request);
    if (!reply.ok()) {
      const int code = s.Fail(reply.status().WithContext("node " + name));
      s.err << "gpool: " << sent << " of " << Count(plan.updates.size(), "node")
            << " updated before this error; run 'gpool topology apply' again to finish\n";
      return code;
    }
    ++sent;
    if (!s.json) s.out << "updated " << name << ": " << DescribeTierChanges(update.changes) << "\n";
    for (const auto& key : update.request.remove_labels) {
      auto still = reply->node.labels.find(key);
      if (still != reply->node.labels.end()) {
        s.err << "gpool: note: " << key << " is still " << key << "=" << still->second << ": it comes from node "
              << name << "'s own labels, which 'topology apply' can override but not remove\n";
      }
    }
  }
  if (s.json) {
    s.out << TopologyApplyToJson(plan, dry_run, sent) << "\n";
    return kExitOk;
  }
  const std::string unregistered =
      plan.unregistered.empty() ? "" : ", " + std::to_string(plan.unregistered.size()) + " not registered";
  if (plan.updates.empty()) {
    s.out << "topology is up to date: " << Count(plan.unchanged, "node") << " unchanged" << unregistered
          << "; nothing sent\n";
  } else if (dry_run) {
    s.out << "dry run: " << Count(plan.updates.size(), "node") << " to update, " << plan.unchanged << " unchanged"
          << unregistered << "; nothing sent\n";
  } else {
    s.out << "topology applied: " << Count(sent, "node") << " updated, " << plan.unchanged << " unchanged"
          << unregistered << "\n";
  }
  return kExitOk;
}

int RunTopologyShow(Session& s) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListNodes();
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? TopologyTreeToJson(*reply) + "\n" : FormatTopologyTree(*reply));
  return kExitOk;
}

// `topology convert FILE`: needs no coordinator. The notes go into the
// output as comments, and to stderr too when the output is a file.
int RunTopologyConvert(Session& s, const Invocation& inv) {
  const std::string& file = inv.positionals[1];
  std::string text;
  if (file == "-") {
    if (s.env.in == nullptr) return s.Usage("topology convert: no standard input to read the export from");
    std::ostringstream in;
    in << s.env.in->rdbuf();
    text = in.str();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) return s.Fail(Status::InvalidArgument(file + ": cannot open the UFM export"));
    std::ostringstream read;
    read << in.rdbuf();
    text = read.str();
  }
  auto converted = ConvertUfmExport(text, file == "-" ? "<stdin>" : file);
  if (!converted.ok()) return s.Fail(converted.status());
  std::vector<std::string> comments = {
      "Generated by 'gpool topology convert' from " + (file == "-" ? std::string("<stdin>") : file) + ".",
      "Tier 1 is the leaf switch a node hangs off. Apply with: gpool topology apply " +
          (inv.flags.count("out") ? inv.flags["out"].as<std::string>() : std::string("FILE")),
      SummarizeTopology(converted->topology)};
  for (const auto& note : converted->notes) comments.push_back("note: " + note);
  const std::string yaml = FormatTopologyFile(converted->topology, comments);
  if (!inv.flags.count("out")) {
    s.out << yaml;
    return kExitOk;
  }
  const std::string out_path = inv.flags["out"].as<std::string>();
  {
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    if (out) out << yaml;
    if (!out) return s.Fail(Status::IoError("--out: cannot write " + out_path));
  }
  for (const auto& note : converted->notes) s.err << "gpool: note: " << note << "\n";
  s.out << "wrote " << out_path << ": " << SummarizeTopology(converted->topology) << "\n";
  return kExitOk;
}

int RunTopology(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.empty()) return s.Usage("topology: expected a subcommand: apply, show or convert");
  const std::string& op = p[0];
  const char* usage = nullptr;
  size_t args = 0;
  if (op == "apply") {
    usage = kTopologyApplyUsage;
    args = 1;
  } else if (op == "show") {
    usage = kTopologyShowUsage;
  } else if (op == "convert") {
    usage = kTopologyConvertUsage;
    args = 1;
  } else {
    return s.Usage("topology: unknown subcommand '" + op + "'; expected apply, show or convert");
  }
  const std::string usage_hint = " (usage: gpool " + std::string(usage) + ")";
  if (op != "apply" && inv.flags["dry-run"].as<bool>()) return s.Usage("--dry-run only applies to 'topology apply'");
  if (op != "convert" && inv.flags.count("out")) return s.Usage("--out only applies to 'topology convert'");
  if (op == "convert" && s.json) return s.Usage("topology convert: --json does not apply (it writes a topology file)");
  if (p.size() - 1 != args) {
    return s.Usage("topology " + op + ": expected " + (args == 0 ? std::string("no arguments") : "a FILE") +
                   ", got " + Count(p.size() - 1, "argument") + usage_hint);
  }
  if (op == "apply") return RunTopologyApply(s, inv);
  if (op == "show") return RunTopologyShow(s);
  return RunTopologyConvert(s, inv);
}

// --- explain ------------------------------------------------------------------------

int RunExplain(Session& s, const Invocation& inv) {
  auto job = ParseJobId(inv.positionals[0]);
  if (!job.ok()) return s.Fail(job.status());
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ExplainJob(*job);
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatExplain(*reply));
  return kExitOk;
}

// --- Command table --------------------------------------------------------------------

void NoOptions(cxxopts::Options&) {}

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
      ("network", "switch placement: none (default), best-effort (the fewest switches) or single-switch "
                  "(under one switch of --network-tier, or wait)", cxxopts::value<std::string>(), "MODE")
      ("network-tier", "with --network: the highest switch tier it may span, 1 = leaf (default 1)",
       cxxopts::value<std::string>(), "N")
      ("numa", "where a task's GPUs sit: none (default), best-effort (one NUMA node if possible) or "
               "single-numa-node (one NUMA node or not on that node)", cxxopts::value<std::string>(), "POLICY")
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

void JobsOptions(cxxopts::Options& o) {
  o.add_options("jobs")
      ("a,all", "include finished jobs", cxxopts::value<bool>()->default_value("false"))
      ("limit", "show at most this many jobs, newest first", cxxopts::value<std::string>()->default_value("1000"), "N");
}

void CancelOptions(cxxopts::Options& o) {
  o.add_options("cancel")
      ("grace", "time between SIGTERM and SIGKILL (10, 10s, 1m)",
       cxxopts::value<std::string>()->default_value("10"), "S");
}

void LogsOptions(cxxopts::Options& o) {
  o.add_options("logs")
      ("bytes", "show at most the last N bytes (max 8388608)",
       cxxopts::value<std::string>()->default_value("65536"), "N");
}

void NodesOptions(cxxopts::Options& o) {
  o.add_options("nodes")
      ("devices", "also list each node's GPUs: UUID, model, memory, NUMA node, NVLink group, health, task",
       cxxopts::value<bool>()->default_value("false"));
}

void WaitOptions(cxxopts::Options& o) {
  o.add_options("wait")
      ("timeout", "give up after this long (90, 90s, 5m, 2h); exit 4 (default: no limit)",
       cxxopts::value<std::string>(), "S");
}

void QueueOptions(cxxopts::Options& o) {
  o.add_options("queue")
      ("parent", "create: the parent queue (default root)", cxxopts::value<std::string>(), "P")
      ("capability", "create, update: the most the queue and its children may hold, e.g. "
       "gpu=16,gpu/A100=8,cpu=64,memory=256Gi (cpu in cores; memory in Mi/Gi/Ti, a bare number is MiB; "
       "none: no limit)", cxxopts::value<std::string>(), "QUOTA")
      ("deserved", "create, update: its fair share; it may borrow beyond it while others are idle",
       cxxopts::value<std::string>(), "QUOTA")
      ("guarantee", "create, update: what reclaim always wins back for it", cxxopts::value<std::string>(), "QUOTA");
}

void TopologyOptions(cxxopts::Options& o) {
  o.add_options("topology")
      ("dry-run", "apply: print the label changes without sending them",
       cxxopts::value<bool>()->default_value("false"))
      ("out", "convert: write the topology file here instead of to stdout", cxxopts::value<std::string>(), "FILE");
}

void AdminOptions(cxxopts::Options& o) {
  o.add_options("admin")
      ("peer-addr", "replica add: where the new replica listens for its peers (required)",
       cxxopts::value<std::string>(), "ENDPOINT")
      ("client-addr", "replica add: its client endpoint, which followers name in redirects (default: none)",
       cxxopts::value<std::string>(), "ENDPOINT")
      ("worker-addr", "replica add: its worker endpoint, which followers name to workers when it leads "
       "(default: none; workers then find it only if it is in their --coordinator list)",
       cxxopts::value<std::string>(), "ENDPOINT");
}

// One way of calling a command that has several (`admin replica add|remove|list`).
struct CommandForm {
  std::string_view usage;     // in 'gpool help COMMAND': every flag
  std::string_view synopsis;  // in the command list of 'gpool --help': kept short so the list stays narrow
  std::string_view summary;
};

constexpr CommandForm kAdminForms[] = {
    {"replica add ID --peer-addr ENDPOINT [--client-addr ENDPOINT] [--worker-addr ENDPOINT]",
     "replica add ID --peer-addr ENDPOINT",
     "add a running coordinator replica as a Raft voter (flags: 'gpool help admin')"},
    {"replica remove ID", "replica remove ID", "remove a coordinator replica from the Raft voters"},
    {"replica list", "replica list", "list the coordinator replicas and how far each lags behind the leader"},
};

constexpr CommandForm kNodeForms[] = {
    {"show NAME", "show NAME", "show a node: resources, labels, taints, NUMA nodes, GPUs and their NVLink groups"},
    {"cordon NAME", "cordon NAME", "place no new tasks on a node (running ones keep running)"},
    {"uncordon NAME", "uncordon NAME", "place tasks on a cordoned node again"},
    {"label NAME KEY=VALUE... KEY-...", "label NAME KEY=VALUE... KEY-...",
     "set (KEY=VALUE) or remove (KEY-) operator labels of a node"},
    {"pool NAME public|pooled|exclusive", "pool NAME POOL", "move a node to pool public, pooled or exclusive"},
    {"taint NAME KEY=VALUE... KEY-...", "taint NAME KEY=VALUE... KEY-...",
     "set (KEY=VALUE) or remove (KEY-) taints; only jobs tolerating them run there"},
};

constexpr CommandForm kQueueForms[] = {
    {"create NAME [--parent P] [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]",
     "create NAME [--parent P] [QUOTAS]", "create a queue (quota flags: 'gpool help queue')"},
    {"update NAME [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]", "update NAME [QUOTAS]",
     "replace the quotas given; the others stay"},
    {"delete NAME", "delete NAME", "delete a queue that has no child queues and no unfinished jobs"},
    {"tree", "tree", "show the queues: allocated/deserved/guarantee/capability, job counts"},
};

constexpr CommandForm kTopologyForms[] = {
    {"apply FILE [--dry-run]", "apply FILE [--dry-run]",
     "label the nodes with the switch tree of a topology file (docs/topology.md)"},
    {"show", "show", "show the switch tree the nodes' labels describe, with free/total GPUs"},
    {"convert FILE [--out FILE]", "convert FILE [--out FILE]", "turn a UFM systems+links export into a topology file"},
};

struct CommandDef {
  std::string_view name;
  std::string_view synopsis;
  std::string_view summary;
  size_t min_args;
  size_t max_args;
  void (*add_options)(cxxopts::Options&);
  int (*run)(Session&, const Invocation&);
  // When not empty, how help lists the command instead of synopsis/summary.
  std::span<const CommandForm> forms = {};
};

constexpr CommandDef kCommands[] = {
    {"submit", "FILE | [flags] -- CMD ARGS...",
     "submit a job from a spec file (YAML or JSON; - reads stdin) or from flags",
     0, 1, SubmitOptions, RunSubmit},
    {"jobs", "[--all]", "list pending and running jobs (--all: finished ones too)", 0, 0, JobsOptions, RunJobs},
    {"job", "ID", "show a job: summary, why it is pending, its tasks", 1, 1, NoOptions, RunJob},
    {"cancel", "ID [--grace S]", "cancel a job", 1, 1, CancelOptions, RunCancel},
    {"logs", "TASK [--bytes N]", "print the end of a task's log; TASK is JOB.INDEX, or JOB for index 0", 1, 1,
     LogsOptions, RunLogs},
    {"wait", "ID [--timeout S]", "wait for a job to finish; exit 0 if it succeeded, 1 if it failed or was cancelled",
     1, 1, WaitOptions, RunWait},
    {"nodes", "[--devices]", "list nodes: state, pool, used/total resources, taints, labels (--devices: GPUs too)",
     0, 0, NodesOptions, RunNodes},
    {"node", "show|cordon|uncordon|label|pool|taint NAME ...", "show, cordon, uncordon, label, re-pool or taint a node",
     0,
     std::numeric_limits<size_t>::max(), NoOptions, RunNode, kNodeForms},
    {"queue", "create|update|delete|tree ...", "create, update, delete or list queues", 0,
     std::numeric_limits<size_t>::max(), QueueOptions, RunQueue, kQueueForms},
    {"topology", "apply|show|convert ...", "apply, show or convert the network switch tree", 0,
     std::numeric_limits<size_t>::max(), TopologyOptions, RunTopology, kTopologyForms},
    {"explain", "ID", "show why a job is where it is: reasons, queue quotas and usage, jobs ahead", 1, 1,
     NoOptions, RunExplain},
    {"status", "", "show the coordinator replicas and cluster totals", 0, 0, NoOptions, RunStatus},
    {"admin", "replica add|remove|list ...", "add, remove or list coordinator replicas", 0, 3, AdminOptions,
     RunAdmin, kAdminForms},
};

const CommandDef* FindCommand(std::string_view name) {
  for (const auto& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

void GlobalOptions(cxxopts::Options& o) {
  o.add_options("global")
      ("c,coordinator",
       "coordinator endpoint(s), comma-separated (env GPOOL_COORDINATOR, default tcp://127.0.0.1:7400)",
       cxxopts::value<std::string>(), "ENDPOINTS")
      ("token", "cluster token (env GPOOL_TOKEN)", cxxopts::value<std::string>(), "TOKEN")
      ("timeout-ms", "how long one request attempt waits (default 5000)", cxxopts::value<std::string>(), "MS")
      ("json", "print JSON instead of tables", cxxopts::value<bool>()->default_value("false"))
      ("h,help", "show help", cxxopts::value<bool>()->default_value("false"))
      ("version", "print the version", cxxopts::value<bool>()->default_value("false"));
}

bool TakesValue(std::string_view arg) {
  return arg == "-c" || arg == "--coordinator" || arg == "--token" || arg == "--timeout-ms";
}

// "--token=X" and the like: a global flag with its value attached.
bool IsLongFlagWithValue(std::string_view arg) {
  for (std::string_view flag : {"--coordinator=", "--token=", "--timeout-ms=", "--json=", "--help=", "--version="}) {
    if (arg.rfind(flag, 0) == 0) return true;
  }
  return false;
}

Result<cxxopts::ParseResult> Parse(cxxopts::Options& options, const std::string& program,
                                   const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  argv.push_back(program.c_str());
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    return options.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const cxxopts::exceptions::exception& e) {
    return Status::InvalidArgument(e.what());
  }
}

// Applies the global flags and environment to the session.
Status ApplyGlobals(Session& s, const cxxopts::ParseResult& flags) {
  auto from_env = [&](const char* name) -> std::optional<std::string> {
    if (!s.env.getenv) return std::nullopt;
    auto v = s.env.getenv(name);
    if (v && v->empty()) return std::nullopt;
    return v;
  };
  if (flags.count("coordinator")) {
    s.options.endpoints = flags["coordinator"].as<std::string>();
  } else {
    s.options.endpoints = from_env("GPOOL_COORDINATOR").value_or(kDefaultCoordinator);
  }
  if (flags.count("token")) {
    s.options.token = flags["token"].as<std::string>();
  } else {
    s.options.token = from_env("GPOOL_TOKEN").value_or("");
  }
  if (flags.count("timeout-ms")) {
    GPOOL_ASSIGN_OR_RETURN(uint64_t ms, ParseUnsignedFlag("--timeout-ms", flags["timeout-ms"].as<std::string>(),
                                                          3'600'000));
    if (ms == 0) return Status::InvalidArgument("--timeout-ms: must be at least 1");
    s.options.timeout_ms = static_cast<int>(ms);
  }
  s.json = flags["json"].as<bool>();
  return Status::Ok();
}

std::string CommandHelp(const CommandDef& command) {
  cxxopts::Options options("gpool " + std::string(command.name), std::string(command.summary));
  if (command.forms.empty()) {
    options.custom_help(std::string(command.synopsis));
  } else {
    // One usage line per form: "gpool admin replica add ...\n  gpool admin replica remove ID".
    std::string usage;
    for (const auto& form : command.forms) {
      if (!usage.empty()) usage += "\n  gpool " + std::string(command.name) + " ";
      usage += std::string(form.usage);
    }
    options.custom_help(usage);
  }
  options.positional_help("");
  options.set_width(100);
  command.add_options(options);
  GlobalOptions(options);
  std::vector<std::string> groups;
  if (command.add_options != NoOptions) groups.push_back(std::string(command.name));
  groups.push_back("global");
  return options.help(groups);
}

}  // namespace

// --- Public ---------------------------------------------------------------------------

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kNotFound: return kExitNotFound;
    case StatusCode::kUnavailable:
    case StatusCode::kNotLeader:
    case StatusCode::kDeadlineExceeded: return kExitUnavailable;
    default: return kExitError;
  }
}

CliEnv CliEnv::System() {
  CliEnv env;
  env.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  env.sleep_ms = [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  env.clock = &SystemClock::Get();
  env.in = &std::cin;
  return env;
}

std::string UsageText() {
  std::ostringstream out;
  out << "Usage: gpool [global flags] COMMAND [args]\n\n"
         "Commands:\n";
  Table commands({"", ""});
  for (const auto& c : kCommands) {
    if (!c.forms.empty()) {
      for (const auto& form : c.forms) {
        commands.AddRow({std::string(c.name) + " " + std::string(form.synopsis), std::string(form.summary)});
      }
      continue;
    }
    commands.AddRow({std::string(c.name) + (c.synopsis.empty() ? "" : " " + std::string(c.synopsis)),
                     std::string(c.summary)});
  }
  // Drop the empty header line.
  std::string table = commands.Render("  ");
  out << table.substr(table.find('\n') + 1);
  out << "\n"
         "Global flags (before or after COMMAND):\n"
         "  -c, --coordinator ENDPOINTS  coordinator address(es), comma-separated; on a timeout the next is\n"
         "                               tried (env GPOOL_COORDINATOR, default "
      << kDefaultCoordinator
      << ")\n"
         "      --token TOKEN            cluster token (env GPOOL_TOKEN)\n"
         "      --timeout-ms MS          how long one request attempt waits (default 5000; 3 retries)\n"
         "      --json                   print JSON instead of tables\n"
         "  -h, --help                   this help; 'gpool COMMAND --help' shows a command's flags\n"
         "      --version                print the version\n"
         "\n"
         "Examples:\n"
         "  gpool submit job.yaml\n"
         "  gpool submit --gpus 1 --replicas 2 --env MODE=test -- python3 train.py --epochs 3\n"
         "  gpool jobs --all\n"
         "  gpool logs 17.1\n"
         "  gpool wait 17 --timeout 10m\n"
         "  gpool admin replica add 4 --peer-addr tcp://10.0.0.4:7402 --client-addr tcp://10.0.0.4:7400\n"
         "  gpool nodes --devices\n"
         "  gpool node show gpu-node-3\n"
         "  gpool node cordon gpu-node-3\n"
         "  gpool node label gpu-node-3 rack=r1 team=vision old-\n"
         "  gpool queue create research --capability gpu=16,cpu=64,memory=256Gi --deserved gpu=8\n"
         "  gpool explain 17\n"
         "\n"
         "Exit codes: 0 ok; 1 the job failed or was cancelled (wait); 2 usage error or invalid spec;\n"
         "            3 not found; 4 coordinator unavailable or timed out; 5 any other error.\n";
  return out.str();
}

Result<JobId> ParseJobId(std::string_view text) {
  auto v = ParseUnsignedText(text, std::numeric_limits<uint64_t>::max());
  if (!v.ok() || *v == 0) {
    return Status::InvalidArgument("expected a job ID (a positive integer), got '" + std::string(text) + "'");
  }
  return JobId(*v);
}

Result<TaskRef> ParseTaskRef(std::string_view text) {
  const Status error = Status::InvalidArgument("expected a TASK as JOB.INDEX (e.g. 17.2) or JOB, got '" +
                                               std::string(text) + "'");
  size_t dot = text.find('.');
  auto job = ParseUnsignedText(text.substr(0, dot), std::numeric_limits<uint64_t>::max());
  if (!job.ok() || *job == 0) return error;
  TaskRef ref{JobId(*job), 0};
  if (dot != std::string_view::npos) {
    auto index = ParseUnsignedText(text.substr(dot + 1), UINT32_MAX);
    if (!index.ok()) return error;
    ref.index = static_cast<uint32_t>(*index);
  }
  return ref;
}

Result<int64_t> ParseWaitTimeout(std::string_view text) {
  const Status error =
      Status::InvalidArgument("expected a duration like 90, 90s, 5m or 2h, got '" + std::string(text) + "'");
  if (text.empty()) return error;
  int64_t unit_ms = 1000;
  switch (text.back()) {
    case 's': unit_ms = 1000; text.remove_suffix(1); break;
    case 'm': unit_ms = 60'000; text.remove_suffix(1); break;
    case 'h': unit_ms = 3'600'000; text.remove_suffix(1); break;
    default: break;
  }
  auto v = ParseUnsignedText(text, 1'000'000'000);
  if (!v.ok()) return error;
  return static_cast<int64_t>(*v) * unit_ms;
}

Result<Quota> ParseQuota(std::string_view flag, std::string_view text) {
  const std::string where = std::string(flag) + ": ";
  if (text == "none") return Quota{};
  if (text.empty()) {
    return Status::InvalidArgument(where + "expected RESOURCE=AMOUNT,... (e.g. gpu=16,cpu=64,memory=256Gi) or none");
  }
  Quota quota;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item(text.substr(start, comma - start));
    start = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument(where + "expected RESOURCE=AMOUNT, got '" + item + "'");
    }
    const std::string name = item.substr(0, eq);
    const std::string amount = item.substr(eq + 1);
    if (!IsQuotaResource(name)) {
      return Status::InvalidArgument(where + "unknown resource '" + name +
                                     "' (expected gpu, cpu, memory, gpu_memory or gpu/<model>)");
    }
    Result<uint64_t> value = Status::Internal("unset");
    if (name == "cpu") {
      value = topology::ParseCpuMilli(amount);
    } else if (name == "memory") {
      value = topology::ParseMemoryMib(amount, topology::Rounding::kUp);
    } else {
      value = ParseUnsignedText(amount, std::numeric_limits<uint64_t>::max());
      if (!value.ok()) value = Status::InvalidArgument("expected a whole number of GPUs, got '" + amount + "'");
    }
    if (!value.ok()) return Status::InvalidArgument(where + name + ": " + value.status().message());
    if (!quota.emplace(name, *value).second) return Status::InvalidArgument(where + name + " is given twice");
  }
  return quota;
}

int RunCli(std::vector<std::string> args, std::ostream& out, std::ostream& err, const ClientFactory& factory,
           const CliEnv& env) {
  Session session(out, err, factory, env);

  // The command is the first argument that is neither a global flag nor its value.
  size_t at = 0;
  for (; at < args.size(); ++at) {
    const std::string& a = args[at];
    if (a == "--") {
      at = args.size();
      break;
    }
    if (a.empty() || a[0] != '-' || a == "-") break;
    if (TakesValue(a)) ++at;
  }

  if (at >= args.size()) {
    cxxopts::Options options("gpool");
    GlobalOptions(options);
    auto flags = Parse(options, "gpool", args);
    if (!flags.ok()) return session.Usage(flags.status().message());
    if (flags->count("help") && (*flags)["help"].as<bool>()) {
      out << UsageText();
      return kExitOk;
    }
    if (flags->count("version") && (*flags)["version"].as<bool>()) {
      out << "gpool " << GPOOL_VERSION << " (protocol " << kProtocolVersion << ")\n";
      return kExitOk;
    }
    err << UsageText();
    return session.Usage("missing COMMAND");
  }

  const std::string name = args[at];
  std::vector<std::string> before(args.begin(), args.begin() + static_cast<long>(at));
  std::vector<std::string> rest(args.begin() + static_cast<long>(at) + 1, args.end());

  if (name == "help") {
    const CommandDef* topic = rest.empty() ? nullptr : FindCommand(rest[0]);
    out << (topic != nullptr ? CommandHelp(*topic) : UsageText());
    return kExitOk;
  }
  const CommandDef* command = FindCommand(name);
  if (command == nullptr) return session.Usage("unknown command '" + name + "'");

  Invocation inv;
  inv.command = name;
  // Everything after "--" belongs to the job's command line, untouched.
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--") {
      inv.trailing.assign(rest.begin() + static_cast<long>(i) + 1, rest.end());
      rest.resize(i);
      if (inv.trailing.empty()) return session.Usage(name + ": nothing after '--'");
      break;
    }
  }
  if (!inv.trailing.empty() && name != "submit") {
    return session.Usage(name + ": unexpected arguments after '--'");
  }
  // cxxopts would take a negative replica ID for a flag ("Option '3' does not exist").
  if (name == "admin") {
    for (size_t i = 0; i < rest.size(); ++i) {
      const std::string& a = rest[i];
      if (TakesValue(a) || a == "--peer-addr" || a == "--client-addr" || a == "--worker-addr") {
        ++i;  // a flag's value, not an ID
      } else if (a.size() > 1 && a[0] == '-' && a.find_first_not_of("0123456789", 1) == std::string::npos) {
        return session.Fail(ParseReplicaId(a).status());
      }
    }
  }
  // A label argument starting with '-' would be taken for a flag ("Option 'x' does not exist").
  if (name == "node") {
    for (size_t i = 0; i < rest.size(); ++i) {
      const std::string& a = rest[i];
      if (TakesValue(a)) {
        ++i;  // a flag's value
      } else if (a.size() > 1 && a[0] == '-' && !IsLongFlagWithValue(a) &&
                 (a.find('=') != std::string::npos || a.back() == '-')) {
        return session.Fail(Status::InvalidArgument("node: '" + a + "' is not a flag, and a label key cannot start " +
                                                    "with '-'"));
      }
    }
  }
  // --env values may contain commas, which cxxopts would split; take them out first.
  if (name == "submit") {
    std::vector<std::string> kept;
    for (size_t i = 0; i < rest.size(); ++i) {
      const std::string& a = rest[i];
      if (a == "--env" || a == "-e") {
        if (i + 1 >= rest.size()) return session.Usage(a + ": expected NAME=VALUE");
        inv.env_flags.push_back(rest[++i]);
      } else if (a.rfind("--env=", 0) == 0) {
        inv.env_flags.push_back(a.substr(6));
      } else {
        kept.push_back(a);
      }
    }
    rest = std::move(kept);
  }

  cxxopts::Options options("gpool " + name);
  command->add_options(options);
  GlobalOptions(options);
  std::vector<std::string> all = before;
  all.insert(all.end(), rest.begin(), rest.end());
  auto flags = Parse(options, "gpool " + name, all);
  if (!flags.ok()) return session.Usage(name + ": " + flags.status().message());
  inv.flags = std::move(flags).value();
  if (inv.flags["help"].as<bool>()) {
    out << CommandHelp(*command);
    return kExitOk;
  }
  if (inv.flags["version"].as<bool>()) {
    out << "gpool " << GPOOL_VERSION << " (protocol " << kProtocolVersion << ")\n";
    return kExitOk;
  }
  inv.positionals = inv.flags.unmatched();
  if (inv.positionals.size() < command->min_args || inv.positionals.size() > command->max_args) {
    return session.Usage("usage: gpool " + name + " " + std::string(command->synopsis));
  }
  if (Status s = ApplyGlobals(session, inv.flags); !s.ok()) return session.Fail(s);
  return command->run(session, inv);
}

}  // namespace gpool
