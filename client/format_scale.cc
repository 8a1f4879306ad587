#include "client/format_scale.h"

#include <string_view>

#include "client/format.h"

namespace gpool {
namespace {

const ScaleSpec* ScaleSpecOfGroup(const GetJobReply& reply, const std::string& group) {
  for (const auto& spec_group : reply.spec.tasks) {
    if (spec_group.name == group) return &spec_group.scale;
  }
  return nullptr;
}

std::string ScaleStepText(const ScaleRule& rule, std::string_view queue) {
  std::string extra;
  if (!queue.empty()) extra = "queue " + std::string(queue);
  if (rule.step != 1) extra += (extra.empty() ? "" : ", ") + std::string("step ") + std::to_string(rule.step);
  return extra.empty() ? "" : " (" + extra + ")";
}

}  // namespace

std::string ScaleRuleText(const ScaleRule& rule) {
  if (rule.trigger == "queue-depth") {
    return "queue-depth: grow above " + std::to_string(rule.grow_above) + " pending, " +
           (rule.shrink_below == 0 ? std::string("never shrink")
                                   : "shrink below " + std::to_string(rule.shrink_below)) +
           ScaleStepText(rule, rule.queue);
  }
  if (rule.trigger == "gpu-utilisation") {
    return "gpu-utilisation: grow at " + std::to_string(rule.grow_above) + "% busy or more, " +
           (rule.shrink_below == 0 ? std::string("never shrink")
                                   : "shrink below " + std::to_string(rule.shrink_below) + "%") +
           ScaleStepText(rule, "");
  }
  if (rule.trigger == "time-window") {
    return "time-window: all replicas inside " + rule.window + " UTC, the minimum outside";
  }
  return rule.trigger;  // a trigger this client does not know: its name
}

std::string ScaleChangeText(const ScaleChange& change, int64_t now_ms) {
  if (change.time_ms == 0) return "none yet";
  std::string text = std::to_string(change.from) + " -> " + std::to_string(change.to);
  if (!change.trigger.empty()) text += " by " + change.trigger;
  if (!change.reason.empty()) text += " (" + change.reason + ")";
  return text + ", " + FormatAgo(change.time_ms, now_ms);
}

std::string FormatJobScaling(const GetJobReply& reply, int64_t now_ms) {
  std::string out;
  for (const auto& group : reply.scale) {
    out += "\nScaling (group " + group.group + "):\n";
    Table block({"Target:", std::to_string(group.target) + " replicas (min " + std::to_string(group.min) + ", max " +
                                std::to_string(group.max) + ")"});
    if (const ScaleSpec* spec = ScaleSpecOfGroup(reply, group.group)) {
      for (size_t i = 0; i < spec->rules.size(); ++i) {
        block.AddRow({i == 0 ? "Rules:" : "", ScaleRuleText(spec->rules[i])});
      }
    }
    block.AddRow({"Cool-down:", FormatDuration(static_cast<int64_t>(group.cooldown_ms)) +
                                    (group.cooldown_left_ms == 0
                                         ? ""
                                         : " (" + FormatDuration(static_cast<int64_t>(group.cooldown_left_ms)) +
                                               " left)")});
    block.AddRow({"Last change:", ScaleChangeText(group.last, now_ms)});
    out += block.Render("  ");
  }
  return out;
}

}  // namespace gpool
