#include "client/format_health.h"

#include <algorithm>
#include <sstream>

#include "client/format.h"
#include "protocol/event.h"
#include "protocol/health.h"
#include "protocol/messages_client.h"

namespace gpool {
namespace {

std::string ConditionShort(const HealthCondition& c) {
  std::string what = c.kind == "xid" ? "xid " + std::to_string(c.xid) : c.kind;
  return c.device.empty() ? what : what + " " + c.device;
}

}  // namespace

std::string HealthCell(const std::vector<HealthCondition>& conditions) {
  if (conditions.empty()) return "ok";
  auto worst = std::max_element(conditions.begin(), conditions.end(), [](const auto& a, const auto& b) {
    return HealthSeverityFromString(a.severity) < HealthSeverityFromString(b.severity);
  });
  std::string cell = worst->severity + ": " + ConditionShort(*worst);
  if (conditions.size() > 1) cell += " +" + std::to_string(conditions.size() - 1);
  return cell;
}

std::string FormatConditions(const std::vector<HealthCondition>& conditions, int64_t now_ms) {
  if (conditions.empty()) return "  none\n";
  Table table({"SEVERITY", "KIND", "DEVICE", "COUNT", "FIRST SEEN", "LAST SEEN", "MESSAGE"});
  for (const auto& c : conditions) {
    table.AddRow({c.severity, c.kind == "xid" ? "xid " + std::to_string(c.xid) : c.kind, Dash(c.device),
                  std::to_string(c.count), FormatAgo(c.first_seen_ms, now_ms), FormatAgo(c.last_seen_ms, now_ms),
                  Dash(c.message)});
  }
  return table.Render("  ");
}

std::string RestartText(const JobSummary& summary, const RestartSpec& restart) {
  if (restart.policy == "never") return "never";
  std::string text = std::to_string(summary.restarts) + " of " + std::to_string(restart.max_attempts) + " used (" +
                     restart.policy + ")";
  if (!summary.restart_reason.empty()) text += "; last: " + summary.restart_reason;
  return text;
}

std::string FormatEventsTable(const std::vector<ClusterEvent>& events, int64_t now_ms) {
  if (events.empty()) return "No events.\n";
  Table table({"SEQ", "AGE", "KIND", "NODE", "TASK", "SEVERITY", "BY", "MESSAGE"});
  for (const auto& e : events) {
    std::string task = "-";
    if (e.job != 0) task = std::to_string(e.job) + "." + std::to_string(e.task) + (e.attempt ? "#" + std::to_string(e.attempt) : "");
    table.AddRow({std::to_string(e.seq), FormatAgo(e.time_ms, now_ms), e.kind, Dash(e.node), task,
                  Dash(e.severity), Dash(e.actor), Dash(e.message)});
  }
  return table.Render();
}

}  // namespace gpool
