#include "client/format.h"

#include <nlohmann/json.hpp>

#include "client/format_cores.h"
#include "client/format_text.h"
#include "client/format_health.h"
#include "client/format_scale.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/types.h"

namespace gpool {
namespace {

std::string SignalName(int32_t signal) {
  switch (signal) {
    case 1: return "SIGHUP";
    case 2: return "SIGINT";
    case 6: return "SIGABRT";
    case 9: return "SIGKILL";
    case 11: return "SIGSEGV";
    case 15: return "SIGTERM";
    default: return "signal " + std::to_string(signal);
  }
}

std::string ExitCell(const TaskInfo& task) {
  auto state = TaskStateFromString(task.state);
  if (!state || !IsTerminal(*state) || *state == TaskState::kLost) return "-";
  if (task.signal != 0) return SignalName(task.signal);
  if (*state == TaskState::kCancelled && task.exit_code == 0 && task.pid == 0) return "-";
  return std::to_string(task.exit_code);
}

std::string TaskDuration(const TaskInfo& task, int64_t now_ms) {
  if (task.start_ms == 0) return "-";
  return FormatDuration((task.finish_ms != 0 ? task.finish_ms : now_ms) - task.start_ms);
}

std::string CommandLine(const std::vector<std::string>& argv) {
  if (argv.size() == 3 && argv[0] == "sh" && argv[1] == "-c") return argv[2];
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !arg.empty() && arg.find_first_of(" \t\"'$\\") == std::string::npos;
    out += plain ? arg : "'" + arg + "'";
  }
  return out;
}

std::string ResourcesText(const Resources& r) {
  std::vector<std::string> parts;
  parts.push_back(std::to_string(r.gpus) + (r.gpus == 1 ? " GPU" : " GPUs") +
                  (r.gpu_model.empty() ? "" : " (" + r.gpu_model + ")"));
  if (r.cpu_milli != 0) parts.push_back(FormatCores(r.cpu_milli) + " CPU");
  if (r.memory_mib != 0) parts.push_back(FormatMemory(r.memory_mib) + " memory");
  return text::JoinStrings(parts, ", ");
}

// "4" or, for an elastic group, "4 (min 2)".
std::string ReplicasText(const TaskGroupSpec& group) {
  std::string out = std::to_string(group.replicas);
  if (group.MinReplicas() < group.replicas) out += " (min " + std::to_string(group.MinReplicas()) + ")";
  return out;
}

bool IsModelResource(const std::string& name) { return name.rfind("gpu/", 0) == 0; }

// One resource amount for people: GPUs as counts, CPU in cores, memory in GiB.
std::string QuotaAmount(const std::string& resource, uint64_t amount) {
  if (resource == "cpu") return FormatCores(amount);
  if (resource == "memory") return FormatGiB(amount);
  return std::to_string(amount);
}

std::string QuotaCell(const Quota& quota, const std::string& resource) {
  auto it = quota.find(resource);
  return it == quota.end() ? "-" : QuotaAmount(resource, it->second);
}

std::string AllocatedCell(const Quota& allocated, const std::string& resource) {
  auto it = allocated.find(resource);
  return QuotaAmount(resource, it == allocated.end() ? 0 : it->second);
}

std::string ResourceHeader(const std::string& resource) {
  if (resource == "cpu") return "CPU";
  if (resource == "memory") return "MEM(GiB)";
  if (IsModelResource(resource)) return "GPU/" + resource.substr(4);
  std::string out = resource;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Every quota of the queues in `queues` (their allocation included).
std::vector<const Quota*> QuotasOf(const std::vector<QueueSummary>& queues) {
  std::vector<const Quota*> out;
  for (const auto& q : queues) {
    for (const Quota* quota : {&q.allocated, &q.spec.capability, &q.spec.deserved, &q.spec.guarantee}) {
      out.push_back(quota);
    }
  }
  return out;
}

// Depth-first from the queues whose parent is not listed (root), children in
// the reply's order (by name), so the tree reads top to bottom whatever order
// the reply used beyond "parents first".
// "high,system"; "-" for none.
std::string GrantedClassesCell(const QueueSummary& q) {
  std::string out;
  for (const auto& c : q.granted_classes) out += (out.empty() ? "" : ",") + c;
  return out.empty() ? "-" : out;
}

void AddTreeRows(const std::vector<QueueSummary>& queues, size_t index, size_t depth,
                 const std::vector<std::string>& resources, std::vector<bool>& shown, Table& table,
                 bool granted_column) {
  if (shown[index]) return;
  shown[index] = true;
  const QueueSummary& q = queues[index];
  std::vector<std::string> row = {std::string(2 * depth, ' ') + q.spec.name};
  for (const auto& r : resources) {
    row.push_back(AllocatedCell(q.allocated, r) + "/" + QuotaCell(q.spec.deserved, r) + "/" +
                  QuotaCell(q.spec.guarantee, r) + "/" + QuotaCell(q.spec.capability, r));
  }
  row.push_back(std::to_string(q.jobs_pending));
  row.push_back(std::to_string(q.jobs_running));
  if (granted_column) row.push_back(GrantedClassesCell(q));
  table.AddRow(std::move(row));
  for (size_t i = 0; i < queues.size(); ++i) {
    if (queues[i].spec.parent == q.spec.name && queues[i].spec.name != q.spec.name) {
      AddTreeRows(queues, i, depth + 1, resources, shown, table, granted_column);
    }
  }
}

}  // namespace

// --- Building blocks ------------------------------------------------------------

std::string ShortUuid(const std::string& uuid) { return uuid.empty() ? "-" : text::Shorten(uuid, 15); }

std::string FormatIndexRanges(std::vector<uint32_t> indices) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  std::string out;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(indices[i]);
    if (j > i) out += "-" + std::to_string(indices[j]);
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

std::vector<std::string> DescribeLinkGroups(const NodeSummary& node) {
  std::map<int32_t, std::vector<uint32_t>> groups;
  std::vector<uint32_t> unlinked;
  for (const auto& d : node.devices) {
    if (d.link_group < 0) {
      unlinked.push_back(d.index);
    } else {
      groups[d.link_group].push_back(d.index);
    }
  }
  auto gpus = [](const std::vector<uint32_t>& indices) {
    return (indices.size() == 1 ? "GPU " : "GPUs ") + FormatIndexRanges(indices);
  };
  std::vector<std::string> lines;
  for (const auto& [id, indices] : groups) {
    lines.push_back("group " + std::to_string(id) + ": " + gpus(indices) + " (NVLink)");
  }
  if (!unlinked.empty()) lines.push_back("no NVLink: " + gpus(unlinked));
  return lines;
}

std::string FormatDuration(int64_t ms) {
  if (ms < 0) ms = 0;
  int64_t s = ms / 1000;
  char buffer[32];
  if (s < 60) {
    std::snprintf(buffer, sizeof(buffer), "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600));
  }
  return buffer;
}

std::string Dash(const std::string& s) { return s.empty() ? "-" : s; }

std::string FormatAgo(int64_t since_ms, int64_t now_ms) {
  if (since_ms == 0) return "-";
  return FormatDuration(now_ms - since_ms) + " ago";
}

std::string FormatCores(uint64_t cpu_milli) { return text::FixedPoint(cpu_milli, 1000, 3); }

std::string FormatGiB(uint64_t mib) { return text::FixedPoint(mib, 1024, 1); }

std::string FormatMemory(uint64_t mib) {
  if (mib >= 1024 && mib % 1024 == 0) return std::to_string(mib / 1024) + "Gi";
  if (mib >= 1024 && (mib * 10) % 1024 == 0) return text::FixedPoint(mib, 1024, 1) + "Gi";
  return std::to_string(mib) + "Mi";
}

std::vector<std::string> QuotaResources(const std::vector<const Quota*>& quotas) {
  std::set<std::string> models;
  std::set<std::string> others;
  for (const Quota* quota : quotas) {
    for (const auto& [name, amount] : *quota) {
      if (name == "gpu" || name == "cpu" || name == "memory") continue;
      (IsModelResource(name) ? models : others).insert(name);
    }
  }
  std::vector<std::string> out = {"gpu"};
  out.insert(out.end(), models.begin(), models.end());
  out.push_back("cpu");
  out.push_back("memory");
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

std::string FormatQuota(const Quota& quota) {
  if (quota.empty()) return "none";
  std::vector<std::string> parts;
  for (const auto& name : QuotaResources({&quota})) {
    auto it = quota.find(name);
    if (it == quota.end()) continue;
    std::string amount = std::to_string(it->second);
    if (name == "cpu") amount = FormatCores(it->second);
    if (name == "memory") amount = FormatMemory(it->second);
    parts.push_back(name + "=" + amount);
  }
  return text::JoinStrings(parts, ",");
}

std::string Table::Render(std::string_view indent) const {
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    std::vector<std::string> line;
    for (size_t i = 0; i < row.size(); ++i) {
      line.push_back(text::OneLine(row[i]));
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], text::Width(line.back()));
    }
    cells.push_back(std::move(line));
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text(indent);
    for (size_t i = 0; i < line.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text.append(widths[i] - text::Width(line[i]) + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

// --- Tables ---------------------------------------------------------------------

std::string FormatJobsTable(const ListJobsReply& reply, int64_t now_ms) {
  if (reply.jobs.empty()) return "No jobs.\n";
  Table table({"ID", "NAME", "QUEUE", "CLASS", "PRIO", "STATE", "TASKS", "GPUS", "AGE", "REASON"});
  for (const auto& job : reply.jobs) {
    table.AddRow({std::to_string(job.job_id), Dash(job.name), Dash(job.queue), Dash(job.priority_class),
                  std::to_string(job.priority),
                  Dash(job.state), std::to_string(job.tasks_running) + "/" + std::to_string(job.tasks_total),
                  std::to_string(job.gpus), job.submit_ms == 0 ? "-" : FormatDuration(now_ms - job.submit_ms),
                  Dash(text::Shorten(text::OneLine(job.reason)))});
  }
  return table.Render();
}

// A task's part of its devices: "20/GPU 30% fixed-share", "MIG 1g.10gb", "cores 0,1", or "whole".
std::string GrantCell(const DeviceGrant& g) {
  if (!g.mig_profile.empty()) return "MIG " + g.mig_profile;
  if (!g.cores.empty()) {
    std::vector<std::string> cores;
    for (uint32_t core : g.cores) cores.push_back(std::to_string(core));
    return "cores " + text::JoinStrings(cores, ",");
  }
  if (!g.shared) return "whole";
  return FormatGiB(g.gpu_memory_mib) + " GiB/GPU " + std::to_string(g.gpu_compute_pct) + "% " + g.sharing_qos;
}

std::string UsedCell(int64_t used_mib) {
  return used_mib < 0 ? "-" : FormatGiB(static_cast<uint64_t>(used_mib)) + " GiB";
}

std::string FormatJobDetail(const GetJobReply& reply, int64_t now_ms) {
  const JobSummary& s = reply.summary;
  std::ostringstream out;
  out << "Job " << s.job_id << ": " << Dash(s.name) << "\n";
  Table summary({"State:", Dash(s.state)});
  if (!s.reason.empty()) summary.AddRow({"Reason:", text::OneLine(s.reason)});
  summary.AddRow({"Queue:", Dash(s.queue)});
  // The class orders jobs first; priority orders them within a class.
  summary.AddRow({"Class:", Dash(reply.spec.priority_class)});
  summary.AddRow({"Priority:", std::to_string(s.priority)});
  // A spec stored before the coordinator chose pools at submit may have none: it ran in public.
  summary.AddRow({"Pool:", reply.spec.pool.empty() ? "public" : reply.spec.pool});
  if (s.restarts > 0 || !(reply.spec.restart == RestartSpec{})) {
    summary.AddRow({"Restarts:", RestartText(s, reply.spec.restart)});
  }
  if (!reply.spec.user.empty()) summary.AddRow({"User:", reply.spec.user});
  if (!reply.spec.node_selector.empty()) {
    summary.AddRow({"Node selector:", text::JoinKeyValues(reply.spec.node_selector, ", ")});
  }
  if (!reply.spec.prefer_labels.empty()) summary.AddRow({"Prefers:", text::JoinKeyValues(reply.spec.prefer_labels, ", ")});
  if (!reply.spec.tolerations.empty()) summary.AddRow({"Tolerates:", text::JoinStrings(reply.spec.tolerations, ", ")});
  if (reply.spec.node_policy != "default" || reply.spec.gpu_policy != "default") {
    summary.AddRow({"Placement:", "nodes " + reply.spec.node_policy + ", GPUs " + reply.spec.gpu_policy});
  }
  summary.AddRow({"Tasks:", std::to_string(s.tasks_running) + " running, " + std::to_string(s.tasks_finished) +
                                " finished, " + std::to_string(s.tasks_total) + " total"});
  summary.AddRow({"GPUs:", std::to_string(s.gpus)});
  summary.AddRow({"Submitted:", FormatAgo(s.submit_ms, now_ms)});
  summary.AddRow({"Started:", FormatAgo(s.start_ms, now_ms)});
  summary.AddRow({"Finished:", FormatAgo(s.finish_ms, now_ms)});
  out << summary.Render("  ");

  if (!reply.spec.tasks.empty()) {
    out << "\nTask groups:\n";
    Table groups({"GROUP", "REPLICAS", "RESOURCES", "COMMAND"});
    for (const auto& group : reply.spec.tasks) {
      groups.AddRow({group.name, ReplicasText(group), ResourcesText(group.resources),
                     text::Shorten(CommandLine(group.command), 80)});
    }
    out << groups.Render("  ");
  }
  out << FormatJobScaling(reply, now_ms);

  if (!reply.reasons.empty()) {
    out << "\nPending reasons:\n";
    for (const auto& reason : reply.reasons) out << "  - " << text::OneLine(reason) << "\n";
  }

  if (!reply.tasks.empty()) {
    // The group column only helps when there is more than one group.
    std::set<std::string> group_names;
    for (const auto& task : reply.tasks) group_names.insert(task.group);
    const bool show_group = group_names.size() > 1;
    // Device columns only when some task shares a device or has measured usage.
    const bool show_devices = std::any_of(reply.tasks.begin(), reply.tasks.end(), [](const TaskInfo& t) {
      return !t.grant.Empty() || t.gpu_memory_used_mib >= 0;
    });
    std::vector<std::string> header = {"INDEX", "STATE", "NODE", "GPUS", "PID", "EXIT", "STARTED", "DURATION",
                                       "MESSAGE"};
    if (show_devices) header.insert(header.begin() + 4, {"GPU SHARE", "GPU MEM USED"});
    if (show_group) header.insert(header.begin() + 1, "GROUP");
    Table tasks(header);
    for (const auto& task : reply.tasks) {
      std::string index = std::to_string(task.index);
      if (task.attempt != 0) index += "#" + std::to_string(task.attempt);
      std::vector<std::string> row = {index,
                                      Dash(task.state),
                                      Dash(task.node),
                                      Dash(text::JoinIndices(task.gpu_indices)),
                                      task.pid == 0 ? "-" : std::to_string(task.pid),
                                      ExitCell(task),
                                      FormatAgo(task.start_ms, now_ms),
                                      TaskDuration(task, now_ms),
                                      Dash(text::Shorten(text::OneLine(task.message)))};
      if (show_devices) row.insert(row.begin() + 4, {GrantCell(task.grant), UsedCell(task.gpu_memory_used_mib)});
      if (show_group) row.insert(row.begin() + 1, Dash(task.group));
      tasks.AddRow(std::move(row));
    }
    out << "\nTasks:\n" << tasks.Render("  ");
  }
  return out.str();
}

std::string FormatQueueTree(const ListQueuesReply& reply) {
  if (reply.queues.empty()) return "No queues.\n";
  const std::vector<std::string> resources = QuotaResources(QuotasOf(reply.queues));
  std::vector<std::string> header = {"QUEUE"};
  for (const auto& r : resources) header.push_back(ResourceHeader(r));
  header.push_back("PENDING");
  header.push_back("RUNNING");
  // Issue 50: a GRANTED column (classes granted to the queue itself) once
  // any queue has a grant; a cluster without grants prints as before.
  const bool granted_column = std::any_of(reply.queues.begin(), reply.queues.end(),
                                          [](const QueueSummary& q) { return !q.granted_classes.empty(); });
  if (granted_column) header.push_back("GRANTED");
  Table table(header);
  std::vector<bool> shown(reply.queues.size(), false);
  auto listed = [&](const std::string& name) {
    return std::any_of(reply.queues.begin(), reply.queues.end(),
                       [&](const QueueSummary& q) { return q.spec.name == name; });
  };
  for (size_t i = 0; i < reply.queues.size(); ++i) {
    const QueueSummary& q = reply.queues[i];
    if (q.spec.parent.empty() || q.spec.parent == q.spec.name || !listed(q.spec.parent)) {
      AddTreeRows(reply.queues, i, 0, resources, shown, table, granted_column);
    }
  }
  // A queue on a parent cycle has no top to hang from; list it rather than drop it.
  for (size_t i = 0; i < reply.queues.size(); ++i) {
    AddTreeRows(reply.queues, i, 0, resources, shown, table, granted_column);
  }
  return table.Render() + "(each resource: allocated/deserved/guarantee/capability; - = not set)\n";
}

std::string FormatExplain(const ExplainJobReply& reply) {
  const JobSummary& job = reply.job;
  std::ostringstream out;
  out << "Job " << job.job_id << " " << Dash(job.name) << ": " << Dash(job.state) << " in queue " << Dash(job.queue)
      << ", priority " << job.priority << ", " << job.gpus << (job.gpus == 1 ? " GPU" : " GPUs") << "\n";
  if (reply.reasons.empty()) {
    out << "Reasons: none\n";
  } else {
    out << "Reasons:\n";
    for (const auto& reason : reply.reasons) out << "  - " << text::OneLine(reason) << "\n";
  }
  if (!reply.queue_path.empty()) {
    const std::vector<std::string> resources = QuotaResources(QuotasOf(reply.queue_path));
    std::vector<std::string> header = {"QUEUE"};
    for (const auto& r : resources) header.push_back(ResourceHeader(r));
    Table table(header);
    for (const auto& q : reply.queue_path) {
      std::vector<std::string> row = {q.spec.name};
      for (const auto& r : resources) {
        row.push_back(AllocatedCell(q.allocated, r) + "/" + QuotaCell(q.spec.deserved, r) + "/" +
                      QuotaCell(q.spec.capability, r));
      }
      table.AddRow(std::move(row));
    }
    out << "Queue path (leaf to root; each resource: allocated/deserved/capability, - = not set):\n"
        << table.Render("  ");
  }
  const std::string queue = reply.queue_path.empty() ? job.queue : reply.queue_path.front().spec.name;
  out << reply.jobs_ahead << (reply.jobs_ahead == 1 ? " job" : " jobs") << " ahead in queue " << Dash(queue)
      << "\n";
  return out.str();
}

// --- JSON -------------------------------------------------------------------------

std::string MsgpackToJson(std::string_view msgpack) {
  nlohmann::json json = nlohmann::json::from_msgpack(msgpack.begin(), msgpack.end(), true, false);
  if (json.is_discarded()) return "null";
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string LogToJson(JobId job, uint32_t task_index, const GetTaskLogReply& reply) {
  nlohmann::json json = {{"job_id", job.value()},
                         {"task_index", task_index},
                         {"size", reply.size},
                         {"truncated", reply.truncated},
                         {"dropped", reply.dropped},
                         {"data", reply.data}};
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gpool
