// `gpool events`: the committed event stream (node health raised and cleared,
// cordons, nodes and tasks lost, requeues, preemptions), optionally of one
// node or job, and with --follow the events as they are committed.
#include "client/cli_internal.h"

#include <deque>

#include "client/format.h"
#include "client/format_health.h"
#include "protocol/event.h"
#include "protocol/messages_nodes.h"

namespace gpool::cli {
namespace {

constexpr uint64_t kDefaultShown = 50;

void EventsOptions(cxxopts::Options& o) {
  o.add_options("events")
      ("node", "only events about this node", cxxopts::value<std::string>(), "NAME")
      ("job", "only events about this job", cxxopts::value<std::string>(), "ID")
      ("limit", "show the newest N (default 50)", cxxopts::value<std::string>(), "N")
      ("f,follow", "keep printing events as they are committed", cxxopts::value<bool>()->default_value("false"))
      ("timeout", "with --follow: stop after this long (90, 90s, 5m); default: until interrupted",
       cxxopts::value<std::string>(), "S");
}

int RunEvents(Session& s, const Invocation& inv) {
  const auto& f = inv.flags;
  ListEvents request;
  request.limit = 1000;
  if (f.count("node")) request.node = f["node"].as<std::string>();
  if (f.count("job")) {
    auto job = ParseUnsignedFlag("--job", f["job"].as<std::string>(), UINT64_MAX);
    if (!job.ok()) return s.Fail(job.status());
    request.job = *job;
  }
  uint64_t shown = kDefaultShown;
  if (f.count("limit")) {
    auto n = ParseUnsignedFlag("--limit", f["limit"].as<std::string>(), 10'000);
    if (!n.ok()) return s.Fail(n.status());
    shown = *n;
  }
  int64_t timeout_ms = 0;
  if (f.count("timeout")) {
    auto t = ParseWaitTimeout(f["timeout"].as<std::string>());
    if (!t.ok()) return s.Fail(t.status().WithContext("--timeout"));
    timeout_ms = *t;
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  // Page through what is kept, holding the newest `shown`.
  std::deque<ClusterEvent> newest;
  while (true) {
    auto reply = (*client)->ListEvents(request);
    if (!reply.ok()) return s.Fail(reply.status());
    for (auto& event : reply->events) {
      newest.push_back(std::move(event));
      if (newest.size() > shown) newest.pop_front();
    }
    const bool more = reply->last_seq > request.after_seq && !reply->events.empty() &&
                      reply->events.size() == request.limit;
    request.after_seq = reply->last_seq;
    if (!more) break;
  }
  auto print = [&](const std::vector<ClusterEvent>& events) {
    if (s.json) {
      for (const auto& event : events) s.out << ToJson(event) << "\n";
    } else if (!events.empty() || !f["follow"].as<bool>()) {
      s.out << FormatEventsTable(events, s.WallMs());
    }
    s.out.flush();
  };
  print(std::vector<ClusterEvent>(newest.begin(), newest.end()));
  if (!f["follow"].as<bool>()) return kExitOk;
  return FollowEvents(s, request, timeout_ms, print);
}

}  // namespace

const CommandDef kEventsCommand = {
    .name = "events",
    .synopsis = "[--node NAME] [--job ID] [--limit N] [--follow [--timeout S]]",
    .summary = "show the cluster's events: node health, cordons, nodes and tasks lost, requeues, preemptions",
    .min_args = 0,
    .max_args = 0,
    .add_options = EventsOptions,
    .run = RunEvents,
};

}  // namespace gpool::cli
