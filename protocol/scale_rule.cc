#include "protocol/scale_rule.h"

#include <algorithm>

namespace gpool {
namespace {

// "HH:MM" to minutes of the day.
std::optional<uint32_t> ScaleClockMinutes(std::string_view text) {
  if (text.size() != 5 || text[2] != ':') return std::nullopt;
  for (size_t i : {0, 1, 3, 4}) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  }
  const uint32_t hours = static_cast<uint32_t>((text[0] - '0') * 10 + (text[1] - '0'));
  const uint32_t minutes = static_cast<uint32_t>((text[3] - '0') * 10 + (text[4] - '0'));
  if (hours > 23 || minutes > 59) return std::nullopt;
  return hours * 60 + minutes;
}

constexpr size_t kMaxScaleRules = 8;
constexpr uint64_t kMaxScaleCooldownMs = 24 * 3'600'000ull;

}  // namespace

std::optional<std::pair<uint32_t, uint32_t>> ParseScaleWindow(std::string_view text) {
  const size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto start = ScaleClockMinutes(text.substr(0, dash));
  auto end = ScaleClockMinutes(text.substr(dash + 1));
  if (!start || !end || *start == *end) return std::nullopt;
  return std::pair{*start, *end};
}

Status ValidateScaleSpec(const std::string& where, const ScaleSpec& spec, uint32_t min, uint32_t replicas) {
  if (!spec.Enabled()) return Status::Ok();
  const std::string at = where + ".scale";
  if (min >= replicas) {
    return Status::InvalidArgument(at + ": scale rules need an elastic group (min_replicas below replicas, here " +
                                   std::to_string(min) + " of " + std::to_string(replicas) + ")");
  }
  if (spec.rules.size() > kMaxScaleRules) {
    return Status::InvalidArgument(at + ".rules: at most " + std::to_string(kMaxScaleRules) + " rules");
  }
  if (spec.cooldown_ms > kMaxScaleCooldownMs) {
    return Status::InvalidArgument(at + ".cooldown_ms: at most a day (" + std::to_string(kMaxScaleCooldownMs) + ")");
  }
  for (size_t i = 0; i < spec.rules.size(); ++i) {
    const ScaleRule& rule = spec.rules[i];
    const std::string r = at + ".rules[" + std::to_string(i) + "]";
    if (std::find(std::begin(kScaleTriggers), std::end(kScaleTriggers), rule.trigger) == std::end(kScaleTriggers)) {
      return Status::InvalidArgument(r + ".trigger: '" + rule.trigger.substr(0, 32) +
                                     "' is not queue-depth, gpu-utilisation or time-window");
    }
    if (rule.step == 0 || rule.step > replicas) {
      return Status::InvalidArgument(r + ".step: " + std::to_string(rule.step) + " is not 1 to " +
                                     std::to_string(replicas));
    }
    if (rule.trigger == "time-window") {
      if (!ParseScaleWindow(rule.window)) {
        return Status::InvalidArgument(r + ".window: '" + rule.window.substr(0, 32) +
                                       "' is not HH:MM-HH:MM (UTC, two different times)");
      }
      continue;
    }
    if (!rule.window.empty()) return Status::InvalidArgument(r + ".window: only for the time-window trigger");
    if (rule.trigger == "gpu-utilisation" && (rule.grow_above > 100 || rule.shrink_below > 100)) {
      return Status::InvalidArgument(r + ": gpu-utilisation thresholds are percentages (0 to 100)");
    }
    if (rule.trigger != "queue-depth" && !rule.queue.empty()) {
      return Status::InvalidArgument(r + ".queue: only for the queue-depth trigger");
    }
    // Else one signal would ask to grow and to shrink at once and the group
    // would flap: queue-depth grows above grow_above, gpu-utilisation at it.
    const uint64_t most = rule.trigger == "queue-depth" ? rule.grow_above + 1 : rule.grow_above;
    if (rule.shrink_below > most) {
      return Status::InvalidArgument(r + ": shrink_below (" + std::to_string(rule.shrink_below) +
                                     ") must be at most " + std::to_string(most) +
                                     ", or one signal would ask to grow and to shrink at once");
    }
  }
  return Status::Ok();
}

}  // namespace gpool
