#include "control/state/scale_decision.h"

#include <algorithm>

namespace gpool::state {
namespace {

constexpr int64_t kScaleMsPerDay = 24 * 3'600'000ll;

bool InScaleWindow(const std::string& window, int64_t now_ms) {
  const auto range = ParseScaleWindow(window);
  if (!range) return false;
  const int64_t day_ms = ((now_ms % kScaleMsPerDay) + kScaleMsPerDay) % kScaleMsPerDay;
  const auto minute = static_cast<uint32_t>(day_ms / 60'000);
  const auto [start, end] = *range;
  return start < end ? minute >= start && minute < end : minute >= start || minute < end;
}

// One rule's wish: its target and what it saw; nullopt when it has no view
// (an unmeasured GPU).
struct ScaleWish {
  uint32_t target;
  std::string message;
};

std::optional<ScaleWish> WishOf(const ScaleRule& rule, const ScaleSignals& in, const std::string& own_queue) {
  auto stepped = [&](uint64_t signal, bool grow_at_threshold) {
    const bool grow = grow_at_threshold ? signal >= rule.grow_above : signal > rule.grow_above;
    if (grow) return in.current + rule.step;
    if (rule.shrink_below > 0 && signal < rule.shrink_below) return in.current > rule.step ? in.current - rule.step : 0;
    return in.current;
  };
  if (rule.trigger == "queue-depth") {
    const std::string& queue = rule.queue.empty() ? own_queue : rule.queue;
    const uint64_t depth = in.queue_depth ? in.queue_depth(queue) : 0;
    return ScaleWish{static_cast<uint32_t>(std::min<uint64_t>(stepped(depth, false), UINT32_MAX)),
                     "queue " + queue + ": " + std::to_string(depth) + " pending"};
  }
  if (rule.trigger == "gpu-utilisation") {
    if (!in.gpu_util_pct) return std::nullopt;
    return ScaleWish{stepped(*in.gpu_util_pct, true), "GPUs " + std::to_string(*in.gpu_util_pct) + "% busy"};
  }
  if (rule.trigger == "time-window") {
    const bool inside = InScaleWindow(rule.window, in.now_ms);
    return ScaleWish{inside ? in.max : in.min, (inside ? "inside " : "outside ") + rule.window + " UTC"};
  }
  return std::nullopt;  // validation refuses other triggers
}

}  // namespace

ScaleDecision DecideScale(const ScaleSpec& spec, const ScaleSignals& in, const std::string& own_queue) {
  ScaleDecision decision;
  decision.target = in.current;
  std::optional<ScaleWish> best;
  std::string best_trigger;
  // The largest wish wins: a group shrinks only when every rule lets it.
  for (const auto& rule : spec.rules) {
    auto wish = WishOf(rule, in, own_queue);
    if (!wish) continue;
    if (!best || wish->target > best->target) {
      best = std::move(wish);
      best_trigger = rule.trigger;
    }
  }
  if (!best) return decision;
  const uint32_t target = std::clamp(best->target, in.min, std::max(in.min, in.max));
  if (target == in.current) return decision;
  if (in.last_scaled_ms != 0 && in.now_ms - in.last_scaled_ms < static_cast<int64_t>(spec.cooldown_ms)) {
    decision.cooling = true;
    return decision;
  }
  decision.target = target;
  decision.trigger = best_trigger;
  decision.message = best->message;
  return decision;
}

}  // namespace gpool::state
