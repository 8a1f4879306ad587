#include "control/health_driver.h"
#include "protocol/event.h"

#include <set>

#include <spdlog/spdlog.h>

namespace gpool::control {

HealthDriver::HealthDriver(health::HealthPolicyConfig config, const state::ClusterState& state,
                           const WorkerTable& workers, Proposer& proposer, const Clock* clock)
    : config_(std::move(config)), catalogue_(config_.xid), state_(state), workers_(workers), proposer_(proposer),
      clock_(clock) {}

HealthDriver::~HealthDriver() { Reset(); }

void HealthDriver::Reset() {
  for (auto& [name, sink] : sinks_) sink.sink->Stop();
  sinks_.clear();
  sink_retry_ms_.clear();
  in_flight_ = 0;
  next_evaluate_ms_ = 0;
}

void HealthDriver::Reconfigure(health::HealthPolicyConfig config) {
  // Sinks are reopened from their committed cursors at the next tick.
  for (auto& [name, sink] : sinks_) sink.sink->Stop();
  sinks_.clear();
  sink_retry_ms_.clear();
  config_ = std::move(config);
  catalogue_ = health::XidCatalogue(config_.xid);
  spdlog::info("health policy reconfigured enabled={} webhooks={}", config_.enabled, config_.webhooks.size());
}

void HealthDriver::Tick(int64_t now_ms) {
  RunSinks(now_ms);
  if (now_ms < next_evaluate_ms_ || in_flight_ > 0) return;
  next_evaluate_ms_ = now_ms + kEvaluateEveryMs;
  Evaluate(clock_->WallMs());
}

health::HealthPolicyInput HealthDriver::BuildInput(int64_t wall_ms) {
  health::HealthPolicyInput input;
  input.now_ms = wall_ms;
  input.breaker_open = state_.health_breaker_open();
  input.cluster_size = static_cast<uint32_t>(state_.nodes().size());
  std::set<std::string> present;
  // A node with nothing wrong, no GPU fenced and no health cordon can be
  // neither fenced nor lifted (EvaluateHealthPolicy has nothing to do for
  // it; cluster_size still counts it): left out, a round walks what is
  // wrong (the state keeps that set as it changes) rather than every node of
  // the cluster ten times a second (12,500 nodes at 100,000 GPUs; issue 49).
  // Its clear-since record goes too: it starts again when something is wrong
  // with it.
  for (const std::string& name : state_.nodes_needing_health()) {
    const state::NodeRecord* found = state_.FindNode(name);
    if (found == nullptr) continue;
    const state::NodeRecord& node = *found;
    health::NodeHealthInput in;
    in.name = name;
    in.cordoned = node.cordoned;
    in.cordon_reason = node.cordoned ? (node.cordon_reason.empty() ? "operator" : node.cordon_reason) : "";
    in.cordon_ms = node.cordon_ms;
    in.operator_uncordon_ms = node.operator_uncordon_ms;
    in.labels = node.admin_labels;
    in.conditions = node.AllHealth();
    in.gpu_count = static_cast<uint32_t>(node.spec.gpus.size());
    in.unhealthy_gpus = node.unhealthy_gpus;
    // Rounds come from heartbeats (not committed); a node not connected to
    // this leader has none yet, so it cannot count as clear meanwhile.
    const WorkerConnection* connection = workers_.Find(name);
    in.health_rounds = connection != nullptr ? connection->health_rounds : 0;
    auto& since = clear_since_[name];
    if (connection != nullptr) {
      const bool clear = health::NodeIsClear(in, config_, catalogue_);
      since = health::UpdateClearSince(since, clear, in.health_rounds);
      // The heartbeat that cleared the list says the round exactly; this
      // loop only samples it.
      const uint64_t reported = connection->clear_since_rounds;
      if (clear && connection->health.empty() && reported > 0 && reported <= in.health_rounds &&
          (!since || *since > reported)) {
        since = reported;
      }
    }
    in.clear_since_rounds = connection != nullptr ? since : std::nullopt;
    present.insert(name);
    input.nodes.push_back(std::move(in));
  }
  std::erase_if(clear_since_, [&](const auto& entry) { return !present.count(entry.first); });
  nodes_evaluated_ = input.nodes.size();
  for (const ClusterEvent& event : state_.events()) {
    if (event.actor != "health-policy") continue;
    if (event.kind == ToString(EventKind::kNodeCordoned)) input.recent_fences.push_back({event.node, event.time_ms});
    if (event.kind == ToString(EventKind::kHealthFenceSuppressed)) input.alerted.insert(event.dedupe_key);
  }
  return input;
}

void HealthDriver::Evaluate(int64_t wall_ms) {
  const auto actions = health::EvaluateHealthPolicy(BuildInput(wall_ms), config_, catalogue_);
  for (const auto& action : actions) {
    const health::FenceCommandFields fields = health::ToFenceCommand(action);
    spdlog::info("health policy action={} node={} gpu={} reason=\"{}\"", NameOf(fields.action), fields.node, fields.gpu,
                 fields.reason);
    ++in_flight_;
    proposer_.Propose(state::HealthFenceCmd{fields.node, fields.action, fields.gpu, fields.grace_ms, fields.reason},
                      [this](const state::ApplyResult& result) {
                        if (in_flight_ > 0) --in_flight_;
                        if (!result.status.ok()) {
                          spdlog::warn("health action not applied error=\"{}\"", result.status.ToString());
                        }
                      });
  }
}

void HealthDriver::RunSinks(int64_t now_ms) {
  for (const auto& config : config_.webhooks) {
    if (sinks_.count(config.name)) continue;
    if (auto retry = sink_retry_ms_.find(config.name); retry != sink_retry_ms_.end() && now_ms < retry->second) continue;
    const auto& cursors = state_.sink_cursors();
    auto at = cursors.find(config.name);
    health::WebhookSinkOptions options;
    options.config = config;
    options.start_after = at == cursors.end() ? 0 : at->second;
    options.on_cursor = [](uint64_t) {};  // read with cursor() from this thread instead
    auto sink = health::WebhookSink::Open(std::move(options));
    if (!sink.ok()) {
      spdlog::error("webhook sink not started, tried again in 30 s sink={} error=\"{}\"", config.name,
                    sink.status().ToString());
      sink_retry_ms_[config.name] = now_ms + 30'000;
      continue;
    }
    spdlog::info("webhook sink started sink={} url={} after_seq={}", config.name, config.url,
                 at == cursors.end() ? 0 : at->second);
    sinks_[config.name] = Sink{std::move(sink).value(), at == cursors.end() ? 0 : at->second};
  }
  const bool commit = now_ms >= next_cursor_ms_;
  if (commit) next_cursor_ms_ = now_ms + kCursorEveryMs;
  for (auto& [name, entry] : sinks_) {
    entry.sink->Offer(state_.EventsAfter(entry.sink->accepted_through(), 256));
    const uint64_t cursor = entry.sink->cursor();
    if (commit && cursor > entry.committed) {
      entry.committed = cursor;
      proposer_.Propose(state::SinkCursorCmd{name, cursor}, [](const state::ApplyResult&) {});
    }
  }
}

std::map<std::string, health::WebhookSinkStats> HealthDriver::SinkStats() const {
  std::map<std::string, health::WebhookSinkStats> out;
  for (const auto& [name, entry] : sinks_) out[name] = entry.sink->stats();
  return out;
}

}  // namespace gpool::control
