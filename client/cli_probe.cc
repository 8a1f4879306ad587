// `gpool probe network|gpu`: runs gpool-probe (client/probe/) as one job per
// node, reads each task's JSON line from its log, flags the slow nodes with
// the median - k x MAD rule on log bandwidth (client/probe/outliers.h), prints a table, and
// commits the results with ReportProbe so the coordinator raises (or clears)
// each node's `slow` condition, device "probe/<kind>".
//
// network: the jobs form a ring. Node i's task listens on its port and
// measures TCP latency and bandwidth to node i+1, so every node's number is
// its own sending side. Each node is reached at its hostname (NodeSummary
// .hostname; 127.0.0.1 when it reports none): the nodes must be able to
// reach each other there, on the ports chosen below.
// gpu: one task per node with one GPU; the node's number is the slower copy
// direction of its GPU.
//
// Not measured (job failed, timed out, printed no result): reported, never
// flagged, left out of the rule and of ReportProbe, and the exit code is 1.
#include "client/cli_internal.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "client/format.h"
#include "client/probe/outliers.h"
#include "client/probe/probe_line.h"
#include "protocol/base/endpoint.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/model/probe.h"
#include "protocol/types.h"

namespace gpool::cli {
namespace {

constexpr int64_t kProbePollMs = 500;
constexpr int64_t kProbeDefaultTimeoutMs = 120'000;
// After the timeout the tasks were given, how long the CLI still waits for
// them to print and exit before it cancels them.
constexpr int64_t kProbeGraceMs = 15'000;
constexpr uint32_t kProbeLogBytes = 64 * 1024;
constexpr char kProbeNodeLabel[] = "gpool.io/node";

void ProbeOptions(cxxopts::Options& o) {
  o.add_options("probe")
      ("nodes", "probe these nodes, comma-separated (default: every Ready, uncordoned node; for gpu, with GPUs)",
       cxxopts::value<std::string>(), "A,B,C")
      ("k,outlier-k", "slow: below median - K x MAD (default 3; also --k)", cxxopts::value<std::string>(), "K")
      ("timeout", "how long the probe tasks may take, starting included (default 2m)", cxxopts::value<std::string>(),
       "S")
      ("bytes", "bytes per transfer or copy (default network 64Mi, gpu 256Mi)", cxxopts::value<std::string>(), "N")
      ("probe-bin", "the gpool-probe program on the nodes (default: next to this gpool, else gpool-probe in PATH)",
       cxxopts::value<std::string>(), "PATH")
      ("port-base", "network: node i listens on PORT+i (default: ports free on this machine)",
       cxxopts::value<std::string>(), "PORT")
      ("queue", "the queue the probe jobs go to (default \"default\")", cxxopts::value<std::string>(), "Q")
      ("idle", "without --nodes: only nodes running no tasks (for periodic probes: busy nodes measure their load)",
       cxxopts::value<bool>()->default_value("false"));
}

// One node under probe.
struct ProbeTarget {
  NodeSummary node;
  std::string host;  // network: where the others reach it
  uint16_t port = 0;
  uint64_t job = 0;
  std::string final_state;  // the job's state once it ended ("" while not)
  std::optional<probe::NodeMeasurement> measured;
  std::string problem;  // why not measured
};

// gpool-probe next to this program (the build tree and the packages put them
// together), else the bare name for PATH on the node. Assumes the nodes have
// it at the same path: --probe-bin says otherwise.
std::string DefaultProbeBinary() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = self.parent_path() / "gpool-probe";
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return "gpool-probe";
}

// `count` distinct ports that are free on this machine now (the kernel's
// ephemeral choice). On other machines they are very likely free too; a
// clash makes that node's task fail and shows in the table.
Result<std::vector<uint16_t>> FreePorts(size_t count) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  Status status;
  for (size_t i = 0; i < count && status.ok(); ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = Status::IoError("socket() failed while choosing ports");
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = Status::IoError("cannot bind a port to choose one");
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

// Bytes as gpool-probe takes them: digits with an optional Ki, Mi or Gi.
Status CheckProbeBytes(const std::string& text) {
  std::string digits = text;
  for (const char* suffix : {"Ki", "Mi", "Gi"}) {
    if (digits.size() > 2 && digits.compare(digits.size() - 2, 2, suffix) == 0) {
      digits.resize(digits.size() - 2);
      break;
    }
  }
  auto value = ParseUnsignedText(digits, 16ull << 30);
  if (!value.ok() || *value == 0) {
    return Status::InvalidArgument("--bytes: expected bytes like 67108864 or 64Mi (at most 16Gi), got '" + text + "'");
  }
  return Status::Ok();
}

Result<double> ParseK(const std::string& text) {
  char* end = nullptr;
  const double k = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || !(k > 0) || k > 100) {
    return Status::InvalidArgument("--k: expected a number above 0 and at most 100, got '" + text + "'");
  }
  return k;
}

std::string ProbeOneDecimal(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  return buffer;
}

std::string ProbeTwoDecimals(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  return buffer;
}

// The nodes to probe: the named ones (each must exist and be able to take
// the job), else every Ready, uncordoned node (with GPUs, for gpu).
Result<std::vector<ProbeTarget>> ChooseTargets(Client& client, const std::string& kind,
                                               const std::optional<std::string>& names, bool idle_only) {
  GPOOL_ASSIGN_OR_RETURN(ListNodesReply nodes, client.ListNodes());
  std::vector<ProbeTarget> targets;
  auto usable = [&](const NodeSummary& n) { return n.state == "Ready" && !n.cordoned; };
  if (names) {
    std::vector<std::string> wanted;
    size_t start = 0;
    while (start <= names->size()) {
      size_t end = names->find(',', start);
      if (end == std::string::npos) end = names->size();
      std::string name = names->substr(start, end - start);
      start = end + 1;
      if (name.empty()) continue;
      if (std::find(wanted.begin(), wanted.end(), name) != wanted.end()) continue;
      wanted.push_back(std::move(name));
    }
    if (wanted.empty()) return Status::InvalidArgument("--nodes: no node named");
    for (const auto& name : wanted) {
      auto it = std::find_if(nodes.nodes.begin(), nodes.nodes.end(), [&](const NodeSummary& n) { return n.name == name; });
      if (it == nodes.nodes.end()) return Status::NotFound("node '" + name + "' is not registered");
      if (!usable(*it)) {
        return Status::FailedPrecondition("node '" + name + "' is " + it->state +
                                          (it->cordoned ? " (a cordoned node takes no new tasks; uncordon it first)" : "") +
                                          ": it cannot run the probe");
      }
      if (kind == "gpu" && it->gpus_total == 0) return Status::FailedPrecondition("node '" + name + "' has no GPUs");
      targets.push_back({.node = *it});
    }
  } else {
    for (const auto& n : nodes.nodes) {
      if (!usable(n) || (kind == "gpu" && n.gpus_total == 0) || (idle_only && n.tasks > 0)) continue;
      targets.push_back({.node = n});
    }
    std::sort(targets.begin(), targets.end(),
              [](const ProbeTarget& a, const ProbeTarget& b) { return a.node.name < b.node.name; });
  }
  return targets;
}

// The probe job for one node: pinned to it by its built-in label, in its
// pool, tolerating its taints, never restarted.
JobSpec ProbeJob(const std::string& kind, const ProbeTarget& target, std::vector<std::string> command,
                 const std::string& queue, const std::string& user) {
  JobSpec spec;
  spec.name = "probe-" + kind;
  spec.queue = queue;
  spec.user = user;
  if (!target.node.pool.empty()) spec.pool = target.node.pool;
  spec.node_selector[kProbeNodeLabel] = target.node.name;
  for (const auto& [key, value] : target.node.taints) spec.tolerations.push_back(value.empty() ? key : key + "=" + value);
  spec.restart.policy = "never";
  TaskGroupSpec group;
  group.name = "probe";
  group.command = std::move(command);
  if (kind == "gpu") group.resources.gpus = 1;
  spec.tasks.push_back(std::move(group));
  return spec;
}

bool ProbeJobEnded(const std::string& state) {
  return state == "Succeeded" || state == "Failed" || state == "Cancelled";
}

std::string ValidUserOrEmpty(const std::optional<std::string>& user) {
  if (!user || user->empty() || user->size() > 63) return "";
  for (char c : *user) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return "";
  }
  return *user;
}

int RunProbe(Session& s, const Invocation& inv) {
  const auto& f = inv.flags;
  const std::string kind = inv.positionals.at(0);
  if (kind != "network" && kind != "gpu") {
    return s.Usage("probe: expected network or gpu, got '" + kind + "'");
  }
  probe::OutlierOptions rule;
  if (f.count("outlier-k")) {
    auto k = ParseK(f["outlier-k"].as<std::string>());
    if (!k.ok()) return s.Fail(k.status());
    rule.k = *k;
  }
  int64_t timeout_ms = kProbeDefaultTimeoutMs;
  if (f.count("timeout")) {
    auto t = ParseWaitTimeout(f["timeout"].as<std::string>());
    if (!t.ok()) return s.Fail(t.status().WithContext("--timeout"));
    if (*t == 0) return s.Usage("--timeout: the probe needs a limit above 0");
    timeout_ms = *t;
  }
  std::optional<std::string> bytes;
  if (f.count("bytes")) {
    bytes = f["bytes"].as<std::string>();
    if (Status ok = CheckProbeBytes(*bytes); !ok.ok()) return s.Fail(ok);
  }
  std::optional<uint64_t> port_base;
  if (f.count("port-base")) {
    auto p = ParseUnsignedFlag("--port-base", f["port-base"].as<std::string>(), 65535);
    if (!p.ok()) return s.Fail(p.status());
    if (*p == 0) return s.Usage("--port-base: expected a port from 1 to 65535");
    port_base = *p;
  }
  const std::string probe_bin = f.count("probe-bin") ? f["probe-bin"].as<std::string>() : DefaultProbeBinary();
  const std::string queue = f.count("queue") ? f["queue"].as<std::string>() : "default";
  const std::string user = ValidUserOrEmpty(s.env.getenv ? s.env.getenv("USER") : std::nullopt);

  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto chosen = ChooseTargets(**client, kind,
                              f.count("nodes") ? std::optional(f["nodes"].as<std::string>()) : std::nullopt,
                              f["idle"].as<bool>());
  if (!chosen.ok()) return s.Fail(chosen.status());
  std::vector<ProbeTarget> targets = std::move(chosen).value();
  if (targets.empty()) {
    if (f["idle"].as<bool>()) {
      // Nothing idle is not a failure of a periodic probe: there is just nothing to measure now.
      s.err << "gpool: no idle node to probe\n";
      return kExitOk;
    }
    return s.Fail(Status::FailedPrecondition("no node to probe (none is Ready and uncordoned)"));
  }

  // The ring: every node's host and port, in the order of `targets`.
  std::string ring;
  if (kind == "network") {
    std::vector<uint16_t> ports;
    if (port_base) {
      if (*port_base + targets.size() - 1 > 65535) return s.Usage("--port-base: the ports run past 65535");
      for (size_t i = 0; i < targets.size(); ++i) ports.push_back(static_cast<uint16_t>(*port_base + i));
    } else {
      auto free = FreePorts(targets.size());
      if (!free.ok()) return s.Fail(free.status());
      ports = *free;
    }
    for (size_t i = 0; i < targets.size(); ++i) {
      auto& t = targets[i];
      t.host = t.node.hostname.empty() ? "127.0.0.1" : t.node.hostname;
      t.port = ports[i];
      ring += (i ? "," : "") + FormatHostPort(t.host, t.port);
    }
  }

  // One job per node.
  for (size_t i = 0; i < targets.size(); ++i) {
    auto& t = targets[i];
    std::vector<std::string> command = {probe_bin, kind};
    if (kind == "network") {
      command.insert(command.end(), {"--rank", std::to_string(i), "--ring", ring, "--timeout-ms",
                                     std::to_string(timeout_ms)});
    }
    if (bytes) command.insert(command.end(), {"--bytes", *bytes});
    auto submitted = (*client)->Submit(ProbeJob(kind, t, std::move(command), queue, user), "");
    if (!submitted.ok()) {
      // Nothing measured yet: take back what was submitted.
      for (const auto& done : targets) {
        if (done.job != 0) (void)(*client)->CancelJob(JobId(done.job), 0);
      }
      return s.Fail(submitted.status().WithContext("submitting the probe job for node " + t.node.name));
    }
    t.job = submitted->job_id;
  }
  if (!s.json) {
    s.err << "probing " << targets.size() << (targets.size() == 1 ? " node" : " nodes") << " (" << kind
          << "), jobs " << targets.front().job << "-" << targets.back().job << "\n";
  }

  // Wait for every job to end, or the deadline.
  const int64_t deadline = s.env.clock->MonoMs() + timeout_ms + kProbeGraceMs;
  while (true) {
    bool all_ended = true;
    for (auto& t : targets) {
      if (!t.final_state.empty()) continue;
      auto job = (*client)->GetJob(JobId(t.job));
      if (!job.ok()) return s.Fail(job.status());
      if (ProbeJobEnded(job->summary.state)) {
        t.final_state = job->summary.state;
        if (job->summary.state != "Succeeded") t.problem = "job " + std::to_string(t.job) + " " + job->summary.state;
        if (!job->summary.reason.empty()) t.problem += ": " + job->summary.reason;
      } else {
        all_ended = false;
      }
    }
    if (all_ended || s.env.clock->MonoMs() >= deadline) break;
    s.env.sleep_ms(kProbePollMs);
  }

  // Results from the logs; unfinished jobs are cancelled.
  for (auto& t : targets) {
    if (t.final_state.empty()) {
      (void)(*client)->CancelJob(JobId(t.job), 0);
      t.problem = "job " + std::to_string(t.job) + " did not finish in time (cancelled)";
      continue;
    }
    auto log = (*client)->GetTaskLog(JobId(t.job), 0, kProbeLogBytes);
    if (!log.ok()) {
      if (t.problem.empty()) t.problem = "no log: " + log.status().message();
      continue;
    }
    auto m = probe::ParseProbeOutput(kind, log->data);
    if (m.ok()) {
      t.measured = *m;
      t.problem.clear();
    } else {
      // The probe's own error line (FailedPrecondition) says the most.
      const std::string& why = m.status().message();
      t.problem = t.problem.empty() ? why : t.problem + "; " + why;
    }
  }

  // The rule over the measured nodes.
  std::vector<double> values;
  std::vector<ProbeTarget*> measured;
  for (auto& t : targets) {
    if (!t.measured) continue;
    values.push_back(t.measured->bandwidth_mib_s);
    measured.push_back(&t);
  }
  const probe::OutlierVerdict verdict = probe::FlagSlow(values, rule);
  ReportProbe report;
  report.kind = kind == "gpu" ? ProbeKind::kGpu : ProbeKind::kNetwork;  // checked by RunProbe
  for (size_t i = 0; i < measured.size(); ++i) {
    ProbeResult r;
    r.node = measured[i]->node.name;
    const probe::NodeMeasurement& m = *measured[i]->measured;
    // The wire has integers: KiB/s and whole microseconds.
    r.bandwidth_kib_s = static_cast<uint64_t>(std::llround(m.bandwidth_mib_s * 1024));
    r.latency_us = static_cast<uint64_t>(std::llround(m.latency_us));
    r.slow = verdict.slow[i];
    r.message = ProbeOneDecimal(m.bandwidth_mib_s) + " MiB/s, median " + ProbeOneDecimal(verdict.median) + ", MAD x" +
                ProbeTwoDecimals(verdict.spread) + (r.slow ? ", below " + ProbeOneDecimal(verdict.threshold) : "");
    report.results.push_back(std::move(r));
  }
  std::optional<ReportProbeReply> committed;
  Status report_status;
  if (!report.results.empty()) {
    auto reply = (*client)->ReportProbe(report);
    if (reply.ok()) {
      committed = *reply;
    } else {
      report_status = reply.status();
    }
  }

  const size_t missing = targets.size() - measured.size();
  if (s.json) {
    s.out << ToJson(report) << "\n";
  } else {
    Table table({"NODE", "BANDWIDTH(MiB/s)", "LATENCY(us)", "SLOW", "NOTE"});
    size_t next = 0;
    for (auto& t : targets) {
      if (t.measured) {
        const bool slow = report.results[next++].slow;
        table.AddRow({t.node.name, ProbeOneDecimal(t.measured->bandwidth_mib_s),
                      kind == "network" ? ProbeOneDecimal(t.measured->latency_us) : "-", slow ? "yes" : "no",
                      kind == "network" ? "to " + t.measured->detail : t.measured->detail});
      } else {
        table.AddRow({t.node.name, "-", "-", "-", "not measured: " + t.problem});
      }
    }
    s.out << table.Render();
    if (verdict.rule == "too-few") {
      s.out << measured.size() << " of " << targets.size()
            << " nodes measured: the rule needs 3 or more, so no node is flagged\n";
    } else {
      size_t flagged = 0;
      for (bool b : verdict.slow) flagged += b ? 1 : 0;
      // The MAD is of the logarithms: shown as the factor it stands for.
      s.out << "median " << ProbeOneDecimal(verdict.median) << " MiB/s, MAD x" << ProbeTwoDecimals(verdict.spread)
            << ", slow below " << ProbeOneDecimal(verdict.threshold)
            << (verdict.rule == "mad" ? " (median / MAD^k, at most 90% of the median)" : " (MAD x1: half the median)")
            << "; " << flagged << " of " << measured.size() << " flagged\n";
    }
  }
  if (!report_status.ok()) return s.Fail(report_status.WithContext("reporting the probe's results"));
  if (missing > 0) {
    s.err << "gpool: probe incomplete: " << missing << " of " << targets.size()
          << (targets.size() == 1 ? " node" : " nodes") << " not measured\n";
    return kExitJobUnsuccessful;
  }
  return kExitOk;
}

// cxxopts takes a one-letter name as a short flag only (-k): "--k", as the
// issue and the docs spell it, becomes its long name here.
std::optional<int> PrepareProbe(Session&, Invocation&, std::vector<std::string>& rest) {
  for (size_t i = 0; i < rest.size(); ++i) {
    if (TakesValue(rest[i])) {
      ++i;  // a global flag's value is not ours to read
    } else if (rest[i] == "--k") {
      rest[i] = "--outlier-k";
    } else if (rest[i].rfind("--k=", 0) == 0) {
      rest[i] = "--outlier-k=" + rest[i].substr(4);
    }
  }
  return std::nullopt;
}

constexpr CommandForm kProbeForms[] = {
    {"network [--nodes A,B,C | --idle] [--k K] [--timeout S] [--bytes N] [--port-base PORT] [--probe-bin PATH]",
     "network [--nodes A,B] [--k K]",
     "TCP bandwidth and latency, each node to the next in a ring; flag slow nodes"},
    {"gpu [--nodes A,B,C | --idle] [--k K] [--timeout S] [--bytes N] [--probe-bin PATH]",
     "gpu [--nodes A,B] [--k K]", "host<->GPU copy bandwidth of each node; flag slow nodes"},
};

}  // namespace

const CommandDef kProbeCommand = {
    .name = "probe",
    .synopsis = "network|gpu [--nodes A,B,C] [--k K] [--timeout S]",
    .summary = "run a probe job on every node and flag slow ones as a `slow` health condition",
    .min_args = 1,
    .max_args = 1,
    .add_options = ProbeOptions,
    .run = RunProbe,
    .forms = kProbeForms,
    .prepare = PrepareProbe,
};

}  // namespace gpool::cli
